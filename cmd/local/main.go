// Command local runs the products API on this machine: an embedded
// DynamoDB-compatible store, the three tables, and the Lambda handlers on
// a port. `make run` starts it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/local"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/wire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

func run() error {
	apiAddr := flag.String("addr", ":8080", "API listen address; empty runs the store only")
	storeAddr := flag.String("store-addr", "127.0.0.1:8000", "embedded DynamoDB-compatible store listen address")
	relayOn := flag.Bool("relay", true, "relay outbox events (JSON lines on stdout, or EventBridge when EVENT_BUS_NAME and AWS_ENDPOINT_URL_EVENTBRIDGE are set)")
	flag.Parse()

	getenv := func(k string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return localDefault(k)
	}
	s, err := wire.Load(getenv, config.CreateProduct)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := local.Config{
		APIAddr:   *apiAddr,
		StoreAddr: *storeAddr,
		Endpoint:  os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"),
		Settings:  s,
		Log:       wire.Logger(os.Stderr, s.LogLevel),
	}
	where, err := relayTo(ctx, &cfg, *relayOn)
	if err != nil {
		return err
	}
	r, err := local.Start(ctx, cfg)
	if err != nil {
		return err
	}
	local.Banner(os.Stdout, r)
	fmt.Fprintln(os.Stdout, where)
	select {
	case <-ctx.Done():
	case err = <-r.Err():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Fprintln(os.Stdout, "stopping")
	if cerr := r.Close(shutdown); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// relayTo sets the relay's publisher and, with an endpoint, its Streams
// client, and says where events go.
func relayTo(ctx context.Context, cfg *local.Config, on bool) (string, error) {
	if !on || cfg.APIAddr == "" {
		return "outbox relay: off", nil
	}
	source := cfg.Settings.EventSource
	where := "outbox relay: ProductCreated events are printed below as CloudEvents JSON lines"
	cfg.Publisher = outbox.NewJSONLinesPublisher(os.Stdout)
	bus := os.Getenv(config.EventBusName.Name)
	if bus != "" && os.Getenv("AWS_ENDPOINT_URL_EVENTBRIDGE") != "" {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return "", err
		}
		pub, err := outbox.NewEventBridgePublisher(eventbridge.NewFromConfig(awsCfg), outbox.EventBridgeConfig{Bus: bus, Source: source})
		if err != nil {
			return "", err
		}
		cfg.Publisher = pub
		where = "outbox relay: publishing to EventBridge bus " + bus + " at " + os.Getenv("AWS_ENDPOINT_URL_EVENTBRIDGE")
	}
	if cfg.Endpoint == "" {
		return where + " (fed from the embedded store's outbox writes: it has no Streams API)", nil
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return "", err
	}
	cfg.Streams = dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) {
		// The SDK reads AWS_ENDPOINT_URL_DYNAMODB_STREAMS itself; fall back
		// to the DynamoDB endpoint, where emulators serve both.
		if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS") == "" {
			o.BaseEndpoint = &cfg.Endpoint
		}
	})
	return where + " (polling the outbox table's stream at the endpoint)", nil
}

// localDefault names the tables when the environment does not.
func localDefault(k string) string {
	switch k {
	case config.ProductsTable.Name:
		return "products"
	case config.IdempotencyTable.Name:
		return "idempotency"
	case config.OutboxTable.Name:
		return "outbox"
	}
	return ""
}
