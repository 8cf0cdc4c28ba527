// Command goconsumer is the idemlambda side of make bench-peer's consumer
// workload: the sellerstats function's handler (sellerstats.New,
// transact mode, a batch in one TransactWriteItems), invoked in this
// process with SQS events, as one Lambda execution environment.
//
// It speaks the consumer protocol that bench/cmd/peer drives (and that
// bench/powertools/consume.mjs speaks too): after a warm-up on the file's
// warm-up messages it prints {"phase":"ready"} and waits for "go"; then,
// for each line `invoke {"m":[...],"r":[...]}` (message indexes in the
// file and their receive counts) it invokes the handler with those
// messages and prints {"phase":"invoked","failed":[indexes],"us":µs}
// (the invocation's duration, measured around the handler); on "end" it
// prints {"phase":"done"} with the CPU time since "go".
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemlambda/idemlambda/bench/benchrun"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/config"
)

// timeout is the function's Lambda timeout: each invocation's deadline.
const timeout = 30 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "goconsumer:", err)
		os.Exit(1)
	}
}

// messages is the driver's input file.
type messages struct {
	Warmup   []events.SQSMessage `json:"warmup"`
	Messages []events.SQSMessage `json:"messages"`
}

// batch is one invocation: message indexes and their receive counts.
type batch struct {
	Messages []int `json:"m"`
	Receives []int `json:"r"`
}

func run() error {
	var endpoint, sellersTable, idemTable, file, source string
	flag.StringVar(&endpoint, "endpoint", "", "DynamoDB endpoint (the counting proxy)")
	flag.StringVar(&sellersTable, "sellers", "", "sellers table")
	flag.StringVar(&idemTable, "idempotency", "", "idempotency table")
	flag.StringVar(&file, "messages", "", "the driver's messages file")
	flag.StringVar(&source, "source", "idemlambda.products", "the event source counted")
	flag.Parse()

	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var in messages
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	ctx := context.Background()
	client, err := benchrun.NewClient(endpoint, nil)
	if err != nil {
		return err
	}
	cfg := config.SellerStats{
		// Errors only, as the Powertools side logs nothing.
		Common:       config.Common{LogLevel: slog.LevelError},
		SellersTable: sellersTable, EventSource: source,
		Idempotency: config.Idempotency{
			Table: idemTable, Retention: 7 * 24 * time.Hour, Mode: config.ModeTransact,
			// No in-memory replay cache, as Powertools' local cache is
			// off by default: every delivery reaches the store.
			CacheSize: 0,
		},
	}
	c, err := sellerstats.New(client, cfg, io.Discard)
	if err != nil {
		return err
	}
	invoke := func(msgs []events.SQSMessage) (map[string]bool, error) {
		ctx := lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: strconv.FormatInt(time.Now().UnixNano(), 36)})
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		resp, err := c.Handle(ctx, events.SQSEvent{Records: msgs})
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		return failed, err
	}
	for i := 0; i < len(in.Warmup); i += 10 {
		if _, err := invoke(in.Warmup[i:min(i+10, len(in.Warmup))]); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	emit(map[string]any{"phase": "ready", "impl": "idemlambda-sellerstats", "versions": benchrun.Versions()})
	stdin := bufio.NewReader(os.Stdin)
	if _, err := stdin.ReadString('\n'); err != nil {
		return fmt.Errorf("wait for go: %w", err)
	}
	cpu0, wall0 := benchrun.CPUTime(), time.Now()
	for {
		line, err := stdin.ReadString('\n')
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		line = strings.TrimSpace(line)
		if line == "end" {
			break
		}
		var bt batch
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "invoke ")), &bt); err != nil {
			return fmt.Errorf("invoke %q: %w", line, err)
		}
		msgs := make([]events.SQSMessage, len(bt.Messages))
		for k, i := range bt.Messages {
			m := in.Messages[i]
			m.Attributes = map[string]string{}
			for a, v := range in.Messages[i].Attributes {
				m.Attributes[a] = v
			}
			m.Attributes["ApproximateReceiveCount"] = strconv.Itoa(bt.Receives[k])
			msgs[k] = m
		}
		start := time.Now()
		failedIDs, err := invoke(msgs)
		us := time.Since(start).Microseconds()
		failed := []int{}
		for k, m := range msgs {
			// An error fails the invocation: the whole batch comes back.
			if err != nil || failedIDs[m.MessageId] {
				failed = append(failed, bt.Messages[k])
			}
		}
		emit(map[string]any{"phase": "invoked", "failed": failed, "us": us})
	}
	cpu1 := benchrun.CPUTime()
	emit(map[string]any{"phase": "done", "cpu_user_ms": cpu1.User - cpu0.User, "cpu_sys_ms": cpu1.Sys - cpu0.Sys,
		"wall_ms": float64(time.Since(wall0).Microseconds()) / 1000})
	return nil
}

// emit writes one JSON line to the driver; a line that cannot be written
// ends the run, as the driver could not read it either.
func emit(v any) {
	if err := benchrun.Emit(os.Stdout, v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
