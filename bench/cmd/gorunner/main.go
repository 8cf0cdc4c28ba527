// Command gorunner is the idemlambda side of make bench-peer: the real
// POST /products handler from createproduct.New, invoked in this process
// with API Gateway v2 events, one workload per process, so the process's
// CPU time is this implementation's alone.
//
// It speaks the runner protocol that bench/cmd/peer drives (and that
// bench/powertools/runner.mjs speaks too): after a warm-up it prints
// {"phase":"ready"} and waits for a line on stdin; then it runs the
// workload and prints {"phase":"done",...} (or {"phase":"crashed",...} for
// the crash workload, after which it waits to be killed).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/bench/benchrun"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// sellerID is the seller of every benchmark product.
const sellerID = "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"

type flags struct {
	endpoint, products, idempotency, outbox string
	workload, prefix, eventFile, mode       string
	keys, dup, warmup                       int
	timeout, hold                           time.Duration
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gorunner:", err)
		os.Exit(1)
	}
}

func run() error {
	var f flags
	flag.StringVar(&f.endpoint, "endpoint", "", "DynamoDB endpoint (the counting proxy)")
	flag.StringVar(&f.products, "products", "", "products table")
	flag.StringVar(&f.idempotency, "idempotency", "", "idempotency table")
	flag.StringVar(&f.outbox, "outbox", "", "outbox table")
	flag.StringVar(&f.workload, "workload", "seq", "seq | dup | serve | crash | retry | wait")
	flag.StringVar(&f.prefix, "prefix", "w", "key prefix")
	flag.StringVar(&f.eventFile, "event", "events/create.json", "API Gateway v2 event template")
	flag.IntVar(&f.keys, "keys", 10, "distinct keys")
	flag.IntVar(&f.dup, "dup", 8, "concurrent duplicates per key (dup workload)")
	flag.IntVar(&f.warmup, "warmup", 20, "warm-up keys (each sent twice, then 8-way concurrent rounds)")
	flag.DurationVar(&f.timeout, "timeout", 30*time.Second, "Lambda timeout: each invocation's context deadline")
	flag.StringVar(&f.mode, "mode", string(config.ModeReserve), "idem mode: reserve | transact")
	flag.DurationVar(&f.hold, "hold", time.Second, "wait workload: how long the first call holds each key")
	flag.Parse()
	mode, err := config.ParseMode(f.mode)
	if err != nil {
		return err
	}

	tmpl, err := loadEvent(f.eventFile)
	if err != nil {
		return err
	}
	hook := &hookClient{base: awshttp.NewBuildableClient(), reached: make(chan struct{}, 1)}
	client, err := benchrun.NewClient(f.endpoint, hook)
	if err != nil {
		return err
	}
	cfg := config.CreateProduct{
		// Errors only, as the project's own benchmarks log at volume: the
		// Powertools side logs nothing either.
		Common:        config.Common{LogLevel: slog.LevelError},
		ProductsTable: f.products, OutboxTable: f.outbox,
		EventSource: "idemlambda.products",
		Idempotency: config.Idempotency{
			Table: f.idempotency, Retention: 24 * time.Hour, Mode: mode,
			// No in-memory replay cache: every request reaches the store,
			// as on the Powertools side (its local cache is off by default).
			CacheSize: 0,
		},
		// The same work as Powertools' handler, which has neither: the
		// event's token vouches for its seller in memory (no grant to
		// check, so the callers table is never read) and the per-caller
		// limit is off (no window to count).
		CallersTable: "callers-unused",
		Limit:        config.Limit{},
	}
	h, err := createproduct.New(client, cfg, app.Runtime{Out: io.Discard})
	if err != nil {
		return err
	}
	r := &runner{h: h, tmpl: tmpl, timeout: 30 * time.Second}

	// Warm-up, on keys the scan ignores: fresh, replay and contended paths.
	for i := range f.warmup {
		k := fmt.Sprintf("warm-%s-%d", f.prefix, i)
		r.invoke(k)
		r.invoke(k)
	}
	for i := range 5 {
		r.concurrent(fmt.Sprintf("warm-%s-dup-%d", f.prefix, i), 8)
	}
	r.reset()
	hook.writes.Store(0)
	emit(map[string]any{"phase": "ready", "impl": "idemlambda", "mode": string(mode), "versions": benchrun.Versions()})
	stdin := bufio.NewReader(os.Stdin)
	if _, err := stdin.ReadString('\n'); err != nil {
		return fmt.Errorf("wait for go: %w", err)
	}

	r.timeout = f.timeout
	cpu0, wall0 := benchrun.CPUTime(), time.Now()
	key := func(i int) string { return fmt.Sprintf("%s-k%04d", f.prefix, i) }
	switch f.workload {
	case "seq", "retry":
		for i := range f.keys {
			r.invoke(key(i))
		}
	case "dup":
		for i := range f.keys {
			r.concurrent(key(i), f.dup)
		}
	case "serve":
		// One Lambda execution environment of several: invoke each key
		// the driver sends ("invoke KEY"), one at a time, until "end".
		for {
			line, err := stdin.ReadString('\n')
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			line = strings.TrimSpace(line)
			if line == "end" {
				break
			}
			lat, outcome := r.invoke(strings.TrimPrefix(line, "invoke "))
			emit(map[string]any{"phase": "invoked", "us": lat, "outcome": outcome})
		}
	case "crash":
		// Each invocation is abandoned the moment its TransactWriteItems
		// has committed (reserve mode: product + outbox + the key's fenced
		// completion; transact mode: the claim, already COMPLETED, +
		// product + outbox): the hook never returns to the SDK, so the
		// handler never answers. Then the process waits for the SIGKILL
		// that ends it.
		hook.crash.Store(true)
		for i := range f.keys {
			go func() { _, _ = r.invoke(key(i)) }()
			select {
			case <-hook.reached:
			case <-time.After(f.timeout + 5*time.Second):
				return fmt.Errorf("crash point not reached for %s", key(i))
			}
		}
		cpu1 := benchrun.CPUTime()
		emit(map[string]any{"phase": "crashed", "requests": f.keys, "abandoned": f.keys,
			"writes": hook.writes.Load(), "cpu_user_ms": cpu1.User - cpu0.User, "cpu_sys_ms": cpu1.Sys - cpu0.Sys,
			"wall_ms": float64(time.Since(wall0).Microseconds()) / 1000})
		time.Sleep(time.Hour) // killed before this ends
		return nil
	case "wait":
		w, err := waiters(client, f)
		if err != nil {
			return err
		}
		cpu1, wall := benchrun.CPUTime(), time.Since(wall0)
		emit(map[string]any{"phase": "done", "requests": len(w.lat), "latency_us": w.lat, "outcomes": w.outcomes,
			"waiter_calls": w.calls, "waiter_gets": w.gets,
			"cpu_user_ms": cpu1.User - cpu0.User, "cpu_sys_ms": cpu1.Sys - cpu0.Sys,
			"wall_ms": float64(wall.Microseconds()) / 1000})
		return nil
	default:
		return fmt.Errorf("unknown workload %q", f.workload)
	}
	cpu1, wall := benchrun.CPUTime(), time.Since(wall0)
	lat, outcomes := r.results()
	emit(map[string]any{"phase": "done", "requests": len(lat), "latency_us": lat, "outcomes": outcomes,
		"writes": hook.writes.Load(), "cpu_user_ms": cpu1.User - cpu0.User, "cpu_sys_ms": cpu1.Sys - cpu0.Sys,
		"wall_ms": float64(wall.Microseconds()) / 1000})
	return nil
}

// waited is what the waiters of the wait workload saw, key by key.
type waited struct {
	lat         []int64 // each waiter's time, µs
	calls, gets []int   // each waiter's DynamoDB calls, and of them GetItems
	outcomes    map[string]int
}

// waiters is the wait workload: for each key, a first call (idem.Store.Run,
// its own store and client, as another Lambda execution environment)
// holds the key for f.hold, and a duplicate on a store of its own that
// waits (idem.WithWait) arrives just after its claim. The waiter's store
// lives across the keys, as one execution environment's does, so it knows
// nothing of the operation at the first key and has watched one
// execution complete at each later one. Only the waiter's calls are
// counted, by its own client.
func waiters(client *dynamodb.Client, f flags) (waited, error) {
	w := waited{outcomes: map[string]int{}}
	holder, err := idem.NewStore(client, f.idempotency)
	if err != nil {
		return w, err
	}
	counter := &countingClient{base: awshttp.NewBuildableClient(), ops: map[string]int{}}
	waiterClient, err := benchrun.NewClient(f.endpoint, counter)
	if err != nil {
		return w, err
	}
	waiter, err := idem.NewStore(waiterClient, f.idempotency, idem.WithWait(3*f.hold))
	if err != nil {
		return w, err
	}
	for i := range f.keys {
		scope, err := idem.NewScope("POST /wait", "bench", fmt.Sprintf("%s-k%04d", f.prefix, i))
		if err != nil {
			return w, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
		started := make(chan struct{})
		held := make(chan error, 1)
		go func() {
			_, err := holder.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
				close(started)
				time.Sleep(f.hold)
				return idem.Response{Body: []byte(scope.Key)}, nil
			})
			held <- err
		}()
		<-started
		before := counter.snapshot()
		t0 := time.Now()
		res, err := waiter.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
			return idem.Response{}, fmt.Errorf("a waiter ran the operation of %s", scope.Key)
		})
		took := time.Since(t0)
		after := counter.snapshot()
		herr := <-held
		cancel()
		if err != nil || herr != nil {
			return w, fmt.Errorf("key %s: waiter %v, holder %v", scope.Key, err, herr)
		}
		w.lat = append(w.lat, took.Microseconds())
		w.outcomes[string(res.Outcome)]++
		calls, gets := 0, after["GetItem"]-before["GetItem"]
		for op, n := range after {
			calls += n - before[op]
		}
		w.calls, w.gets = append(w.calls, calls), append(w.gets, gets)
	}
	return w, nil
}

// countingClient counts the requests it sends, by DynamoDB operation.
type countingClient struct {
	base aws.HTTPClient
	mu   sync.Mutex
	ops  map[string]int
}

func (c *countingClient) Do(req *http.Request) (*http.Response, error) {
	target := req.Header.Get("X-Amz-Target")
	c.mu.Lock()
	c.ops[target[strings.LastIndexByte(target, '.')+1:]]++
	c.mu.Unlock()
	return c.base.Do(req)
}

func (c *countingClient) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.ops)
}

// runner invokes the handler and records each request's latency and outcome.
type runner struct {
	h       idemhttp.APIGatewayV2Handler
	tmpl    events.APIGatewayV2HTTPRequest
	timeout time.Duration
	seq     atomic.Int64

	mu       sync.Mutex
	lat      []int64
	outcomes map[string]int
}

func (r *runner) reset() {
	r.mu.Lock()
	r.lat, r.outcomes = nil, map[string]int{}
	r.mu.Unlock()
}

func (r *runner) results() ([]int64, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lat, r.outcomes
}

// invoke runs one Lambda invocation as the runtime would: a context with
// the invocation's deadline and request id, the API Gateway v2 event.
func (r *runner) invoke(key string) (latencyUS int64, outcome string) {
	ev := r.event(key)
	start := time.Now()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: ev.RequestContext.RequestID})
	ctx, cancel := context.WithDeadline(ctx, start.Add(r.timeout))
	resp, err := r.h(ctx, ev)
	d := time.Since(start)
	cancel()
	outcome = fmt.Sprint(resp.StatusCode)
	switch {
	case err != nil:
		outcome = "error"
	case resp.Headers[idemhttp.HeaderReplayed] == "true":
		outcome += " replayed"
	}
	r.mu.Lock()
	if r.outcomes == nil {
		r.outcomes = map[string]int{}
	}
	r.lat = append(r.lat, d.Microseconds())
	r.outcomes[outcome]++
	r.mu.Unlock()
	return d.Microseconds(), outcome
}

// concurrent sends n invocations for one key at once and waits for all.
func (r *runner) concurrent(key string, n int) {
	var start, done sync.WaitGroup
	start.Add(1)
	for range n {
		done.Go(func() {
			start.Wait()
			r.invoke(key)
		})
	}
	start.Done()
	done.Wait()
}

func (r *runner) event(key string) events.APIGatewayV2HTTPRequest {
	ev := r.tmpl
	ev.Headers = make(map[string]string, len(r.tmpl.Headers))
	for k, v := range r.tmpl.Headers {
		ev.Headers[k] = v
	}
	ev.Headers["idempotency-key"] = `"` + key + `"` // a structured-field string, as in events/create.json
	ev.Body = `{"name":"Widget ` + key + `","price_cents":999,"currency":"EUR","seller_id":"` + sellerID + `"}`
	n := r.seq.Add(1)
	ev.RequestContext.RequestID = fmt.Sprintf("bench-%d-%d", os.Getpid(), n)
	ev.RequestContext.TimeEpoch = time.Now().UnixMilli()
	return ev
}

func loadEvent(path string) (events.APIGatewayV2HTTPRequest, error) {
	var ev events.APIGatewayV2HTTPRequest
	b, err := os.ReadFile(path)
	if err != nil {
		return ev, err
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("%s: %w", path, err)
	}
	return ev, nil
}

// hookClient is the SDK's default HTTP client with a crash point: with
// crash set, a TransactWriteItems that committed (HTTP 200) never returns.
type hookClient struct {
	base    aws.HTTPClient
	crash   atomic.Bool
	writes  atomic.Int64 // committed TransactWriteItems
	reached chan struct{}
}

func (h *hookClient) Do(req *http.Request) (*http.Response, error) {
	isTx := strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems")
	resp, err := h.base.Do(req)
	if err != nil || !isTx || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	h.writes.Add(1)
	if h.crash.Load() {
		_, _ = io.Copy(io.Discard, resp.Body)
		h.reached <- struct{}{}
		select {} // the invocation is abandoned here, after the commit
	}
	return resp, nil
}

// emit writes one JSON line to the driver; a line that cannot be written
// ends the run, as the driver could not read it either.
func emit(v any) {
	if err := benchrun.Emit(os.Stdout, v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
