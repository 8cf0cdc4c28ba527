package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// The API benchmarks run per mode, and the replay with and without the
// cache. make bench runs them against a store in another process, so
// B/op and allocs/op are this project's and the SDK's alone.

// BenchmarkCreateFirstExecution is a POST with a fresh key: decode,
// validate, claim, commit product + outbox + completion.
func BenchmarkCreateFirstExecution(b *testing.B) {
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			f := newBenchFixture(b, mode, 0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				resp, _ := f.create(context.Background(), postReq(jsonHeaders("bench-"+strconv.Itoa(i)), widget))
				if resp.StatusCode != 201 {
					b.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
				}
				i++
			}
			b.ReportMetric(float64(f.env.Counter.Total())/float64(i), "ddb-calls/op")
		})
	}
}

// BenchmarkCreateReplay is a retry of a completed key, from the table and
// from the cache.
func BenchmarkCreateReplay(b *testing.B) {
	for _, mode := range modes {
		for _, cache := range []int{0, 1000} {
			name := string(mode) + "/table"
			if cache > 0 {
				name = string(mode) + "/cache"
			}
			b.Run(name, func(b *testing.B) {
				f := newBenchFixture(b, mode, cache)
				if resp, _ := f.create(context.Background(), postReq(jsonHeaders("bench-replay"), widget)); resp.StatusCode != 201 {
					b.Fatalf("status %d", resp.StatusCode)
				}
				f.env.Counter.Reset()
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					resp, _ := f.create(context.Background(), postReq(jsonHeaders("bench-replay"), widget))
					if resp.Headers["Idempotent-Replayed"] != "true" {
						b.Fatalf("not a replay: %d", resp.StatusCode)
					}
					n++
				}
				b.ReportMetric(float64(f.env.Counter.Total())/float64(n), "ddb-calls/op")
			})
		}
	}
}

// BenchmarkCreateConcurrentDuplicates sends 8 identical requests at once
// per fresh key; one op is one request, so ddb-calls/op is the mean over
// the winner and its 7 duplicates.
func BenchmarkCreateConcurrentDuplicates(b *testing.B) {
	const dups = 8
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			f := newBenchFixture(b, mode, 0)
			b.ReportAllocs()
			requests, statuses := 0, map[int]int{}
			var mu sync.Mutex
			for i := 0; b.Loop(); i++ {
				if i%dups != 0 {
					continue // each round of 8 counts as 8 ops
				}
				key := fmt.Sprintf("dup-%d", i)
				var wg sync.WaitGroup
				for range dups {
					wg.Go(func() {
						resp, _ := f.create(context.Background(), postReq(jsonHeaders(key), widget))
						mu.Lock()
						statuses[resp.StatusCode]++
						mu.Unlock()
					})
				}
				wg.Wait()
				requests += dups
			}
			if statuses[201]+statuses[409] != requests {
				b.Fatalf("statuses %v", statuses)
			}
			b.ReportMetric(float64(f.env.Counter.Total())/float64(requests), "ddb-calls/op")
			b.ReportMetric(float64(statuses[409])/float64(requests), "409s/op")
		})
	}
}

// BenchmarkCreateRejected is a request refused before any DynamoDB call.
func BenchmarkCreateRejected(b *testing.B) {
	f := newBenchFixture(b, config.ModeReserve, 0)
	bad := `{"name":"Widget","price_cents":9.99,"currency":"EUR","seller_id":"` + sellerID + `"}`
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := f.create(context.Background(), postReq(jsonHeaders("k"), bad))
		if resp.StatusCode != 400 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	if f.env.Counter.Total() != 0 {
		b.Fatalf("a rejected request reached DynamoDB: %s", f.env.Counter)
	}
}

// BenchmarkCreateTracing is BenchmarkCreateFirstExecution (reserve mode)
// as a traced function runs it, under a sampled Lambda trace header:
// off (no exporter: no-op tracers, the header still carried to the
// outbox item); on, its spans built and batched and the batch flushed
// after each request as app.Flushed does in Lambda, to an exporter that
// drops them; and on with OTLP, flushed over OTLP/HTTP to a receiver on
// loopback that discards the body (its own share of the CPU is in the
// figure). The DynamoDB client is the function's own, with
// internal/awsotel's middleware when on. Compare cpu-ns/op (this process's CPU time per request: with make
// bench's store in another process, the function's own), B/op and
// allocs/op across the three; ns/op adds the store's latency.
func BenchmarkCreateTracing(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	b.Cleanup(receiver.Close)
	for _, variant := range []struct {
		name   string
		config config.Tracing
		extra  []sdktrace.SpanProcessor
	}{
		{name: "off"},
		{name: "on", extra: []sdktrace.SpanProcessor{sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())}},
		{name: "on-otlp", config: config.Tracing{Exporter: config.ExporterOTLP, Endpoint: receiver.URL}},
	} {
		b.Run(variant.name, func(b *testing.B) {
			tr, err := app.Tracing(variant.config, config.NameCreateProduct, io.Discard, variant.extra...)
			require.NoError(b, err)
			b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
			env := ddbtest.New(b)
			client, err := app.Client(config.AWS{Region: "us-east-1", AccessKeyID: "bench", SecretAccessKey: "bench", Endpoint: env.URL},
				tr, dynamodb.NewFromConfig, ddb.CountPerContext)
			require.NoError(b, err)
			cfg := createConfig(env.Tables, config.ModeReserve)
			cfg.LogLevel = slog.LevelError
			create, err := createproduct.New(client, cfg, app.Runtime{Out: io.Discard, Tracing: tr})
			require.NoError(b, err)
			ctx := tracing.NewContext(context.Background(), "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
			b.ReportAllocs()
			i := 0
			cpu := processCPU()
			for b.Loop() {
				resp, _ := create(ctx, postReq(jsonHeaders("traced-"+strconv.Itoa(i)), widget))
				if resp.StatusCode != 201 {
					b.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
				}
				if err := tr.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(i), "cpu-ns/op")
		})
	}
}

// BenchmarkTraced is the request span's own cost, around a handler that
// does nothing, under a sampled Lambda trace header: off (no-op tracer),
// and on (the SDK's span, its attributes, ended into a batch that drops
// it).
func BenchmarkTraced(b *testing.B) {
	on, err := app.Tracing(config.Tracing{}, config.NameCreateProduct, io.Discard, sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter()))
	require.NoError(b, err)
	b.Cleanup(func() { _ = on.Shutdown(context.Background()) })
	ctx := tracing.NewContext(context.Background(), "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	req := postReq(jsonHeaders("k"), widget)
	created := api.Reply{Response: events.APIGatewayV2HTTPResponse{StatusCode: 201}, Outcome: idem.OutcomeExecuted}
	for name, t := range map[string]*tracing.Tracing{"off": nil, "on": on} {
		b.Run(name, func(b *testing.B) {
			h := api.Traced(t, func(context.Context, events.APIGatewayV2HTTPRequest) api.Reply { return created })
			b.ReportAllocs()
			for b.Loop() {
				h(ctx, req)
			}
		})
	}
}

// BenchmarkOneCallerConcurrent is one caller creating products from 8
// execution environments at once, each with its own client and handler,
// the store's transactions taking 5 ms as DynamoDB's take milliseconds:
// what the caller's checks in each product's transaction cost in calls
// and cancelled transactions (items another transaction holds), with the
// limit off and on, for a token's caller and an IAM caller (a replica of
// its grant checked too). Conflicts depend on timing: a benchmark figure,
// not a test's assertion.
func BenchmarkOneCallerConcurrent(b *testing.B) {
	for _, mode := range modes {
		for _, c := range []struct {
			name  string
			limit int
			who   func() *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		}{
			{"token/limit-off", 0, func() *events.APIGatewayV2HTTPRequestContextAuthorizerDescription { return jwtCaller("bench", "*") }},
			{"token/limit-on", config.MaxCallerLimit, func() *events.APIGatewayV2HTTPRequestContextAuthorizerDescription { return jwtCaller("bench", "*") }},
			{"iam/limit-on", config.MaxCallerLimit, func() *events.APIGatewayV2HTTPRequestContextAuthorizerDescription { return iamCaller("Importer", "s") }},
		} {
			b.Run(string(mode)+"/"+c.name, func(b *testing.B) {
				env := ddbtest.New(b)
				if env.Store == nil {
					b.Skipf("transaction latency needs the embedded backend; %s in use", env.Kind)
				}
				env.Store.SetTransactionLatency(5 * time.Millisecond)
				require.NoError(b, access.Grant(context.Background(), env.Client, env.Tables.Callers, importer, access.AnySeller))
				const envs = 8
				handlers := make([]idemhttp.APIGatewayV2Handler, envs)
				counters := make([]*ddb.Counter, envs)
				for i := range handlers {
					client, counter := env.NewClient(b)
					cfg := createConfig(env.Tables, mode)
					cfg.LogLevel, cfg.Limit.Creates = slog.LevelError, c.limit
					h, err := createproduct.New(client, cfg, app.Runtime{Out: io.Discard})
					require.NoError(b, err)
					handlers[i], counters[i] = h, counter
				}
				before := env.Store.Stats()
				var next atomic.Int64
				var failed atomic.Int64
				b.ResetTimer()
				var wg sync.WaitGroup
				for i := range envs {
					wg.Go(func() {
						for {
							n := next.Add(1)
							if n > int64(b.N) {
								return
							}
							req := postReq(jsonHeaders(fmt.Sprintf("c-%d", n)), widget)
							req.RequestContext.Authorizer = c.who()
							if resp, _ := handlers[i](context.Background(), req); resp.StatusCode != 201 {
								failed.Add(1)
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				calls := 0
				for _, counter := range counters {
					calls += counter.Total()
				}
				stats := env.Store.Stats()
				b.ReportMetric(float64(calls)/float64(b.N), "ddb-calls/op")
				b.ReportMetric(float64(stats.ConflictCancellations+stats.ConflictExceptions-before.ConflictCancellations-before.ConflictExceptions)/float64(b.N), "conflicts/op")
				b.ReportMetric(float64(failed.Load())/float64(b.N), "non-201/op")
			})
		}
	}
}
