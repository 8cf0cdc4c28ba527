package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/getproduct"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// A replay's line says Outcome=replayed, and its DynamoDBCalls is what
// the client's counter saw for that request: 1 from the table (2 on the
// embedded store, which does not return the old item, so a GetItem
// follows), 0 from the cache.
func TestReplayLineCountsTheCallsTheCounterSaw(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		for _, cache := range []int{0, 100} {
			t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) {
				f := newFixtureMode(t, mode, slog.LevelInfo, idem.WithCache(cache, 0))
				require.Equal(t, 201, f.post(t, jsonHeaders("k-m"), widget).StatusCode)
				f.env.Counter.Reset()
				resp := f.post(t, jsonHeaders("k-m"), widget)
				require.Equal(t, "true", resp.Headers["Idempotent-Replayed"])
				saw := f.env.Counter.Total()

				lines := f.logs.Metrics(t)
				require.Len(t, lines, 2, "one line per request")
				first, replay := lines[0], lines[1]
				assert.Equal(t, "createproduct", first["Function"])
				assert.Equal(t, "executed", first["Outcome"])
				assert.Equal(t, "replayed", replay["Outcome"])
				assert.EqualValues(t, 1, replay["Requests"])
				assert.EqualValues(t, saw, replay["DynamoDBCalls"], "the line counts what the counter saw")
				if cache > 0 {
					assert.Zero(t, saw, "a cached replay makes no call")
				} else {
					assert.Positive(t, saw)
				}
				wantFirst := 2.0 // reserve: claim, then commit
				if mode == config.ModeTransact {
					wantFirst = 1
				}
				assert.Equal(t, wantFirst, first["DynamoDBCalls"])
				assert.Greater(t, replay["Duration"], 0.0)
			})
		}
	})
}

// Many concurrent requests, some racing on one key: one line each, and
// the per-request call counts add up to every call the client made.
func TestConcurrentRequestsEachWriteTheirOwnLine(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelWarn)
		f.env.Counter.Reset()
		const requests = 48
		var wg sync.WaitGroup
		for i := range requests {
			wg.Go(func() {
				key := fmt.Sprintf("k-%d", i%6) // 8 requests per key
				resp := f.post(t, jsonHeaders(key), widget)
				assert.Contains(t, []int{201, 409}, resp.StatusCode, resp.Body)
			})
		}
		wg.Wait()
		lines := f.logs.Metrics(t)
		require.Len(t, lines, requests)
		calls, outcomes := 0.0, map[string]int{}
		for _, l := range lines {
			calls += l["DynamoDBCalls"].(float64)
			outcomes[l["Outcome"].(string)]++
		}
		t.Logf("%s: %d requests, %v, %v DynamoDB calls", mode, requests, outcomes, calls)
		assert.EqualValues(t, f.env.Counter.Total(), calls, "per-request counts add up to the client's")
		assert.Equal(t, 6, outcomes["executed"], "one execution per key: %v", outcomes)
		assert.Equal(t, requests-6, outcomes["replayed"]+outcomes["in_flight"], "%v", outcomes)
	})
}

// A closed stdout loses the log and the metrics, never the answer: the
// same requests through a handler writing to a closed file and through
// one writing to a buffer get the same bytes back.
func TestClosedStdoutNeverChangesAResponse(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		stdout, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
		require.NoError(t, err)
		require.NoError(t, stdout.Close())
		_, err = stdout.Write([]byte("x"))
		require.ErrorIs(t, err, os.ErrClosed, "the file is closed")
		cfg := createConfig(f.env.Tables, mode)
		closed, err := createproduct.New(f.env.Client, cfg, app.Runtime{Out: stdout})
		require.NoError(t, err)
		getClosed, err := getproduct.New(f.env.Client, config.GetProduct{ProductsTable: f.env.Tables.Products}, app.Runtime{Out: stdout})
		require.NoError(t, err)

		call := func(h func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
			resp, err := h(context.Background(), req)
			require.NoError(t, err)
			return resp
		}
		created := call(closed, postReq(jsonHeaders("k-closed"), widget))
		require.Equal(t, 201, created.StatusCode, created.Body)
		for _, req := range []events.APIGatewayV2HTTPRequest{
			postReq(jsonHeaders("k-closed"), widget), // replay
			postReq(jsonHeaders("k-closed"), `{"name":"Other","price_cents":1,"currency":"EUR","seller_id":"`+sellerID+`"}`), // 422
			postReq(jsonHeaders(""), widget), // 400
		} {
			assert.Equal(t, call(f.create, req), call(closed, req))
		}
		id := created.Headers["Location"][len("/products/"):]
		get := getReq(id)
		assert.Equal(t, call(f.get, get), call(getClosed, get))
		assert.NotContains(t, f.logs.String(), "k-closed", "keys never logged")
	})
}

func getReq(id string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RouteKey: "GET /products/{id}", RawPath: "/products/" + id, PathParameters: map[string]string{"id": id},
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}},
	}
}

// On a route without a key the Outcome comes from the status.
func TestMeasuredOutcomeOfKeylessRoutes(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]string{
		200: metrics.OutcomeServed, 404: metrics.OutcomeServed, 400: "rejected", 405: "rejected",
		503: "unavailable", 500: "error", 502: "error",
	} {
		var out logbuf.Buffer
		rec, err := metrics.New(&out, "", "getproduct")
		require.NoError(t, err)
		h := api.Measured(rec, func(context.Context, events.APIGatewayV2HTTPRequest) api.Reply {
			return api.Reply{Response: events.APIGatewayV2HTTPResponse{StatusCode: status}}
		})
		r := h(context.Background(), getReq("x"))
		assert.Equal(t, status, r.Response.StatusCode)
		lines := out.Metrics(t)
		require.Len(t, lines, 1)
		assert.Equal(t, want, lines[0]["Outcome"], "status %d", status)
		wantFault := 0.0
		if status >= 500 && status != 503 {
			wantFault = 1
		}
		assert.Equal(t, wantFault, lines[0]["Faults"], "status %d", status)
		assert.Equal(t, slog.Int("dynamodb_calls", 0), r.Attrs[len(r.Attrs)-1], "the log line gets the count too")
	}
	// A route with a key keeps its idempotency outcome.
	var out logbuf.Buffer
	rec, err := metrics.New(&out, "", "createproduct")
	require.NoError(t, err)
	api.Measured(rec, func(context.Context, events.APIGatewayV2HTTPRequest) api.Reply {
		return api.Reply{Outcome: idem.OutcomeLeaseLost, Response: events.APIGatewayV2HTTPResponse{StatusCode: 503}}
	})(context.Background(), postReq(nil, ""))
	assert.Equal(t, "lease_lost", out.Metrics(t)[0]["Outcome"])
}

// BenchmarkMeasured is what the metrics decorator adds to a request:
// the call-counting context and the line.
func BenchmarkMeasured(b *testing.B) {
	rec, err := metrics.New(discard{}, "idemlambda/bench", "createproduct")
	if err != nil {
		b.Fatal(err)
	}
	reply := api.Reply{Outcome: idem.OutcomeExecuted, Response: events.APIGatewayV2HTTPResponse{StatusCode: 201}}
	h := api.Measured(rec, func(context.Context, events.APIGatewayV2HTTPRequest) api.Reply { return reply })
	req := postReq(nil, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		h(ctx, req)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
