package api_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// fixedWindowStart is the start of a 10-second window.
var fixedWindowStart = time.Unix(1_800_000_000, 0)

// clock is a settable now, shared by the environments of one test.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.ns.Store(t.UnixNano()); return c }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// limitedEnv is one execution environment of createproduct, as
// createproduct.New assembles it, with the guard's clock in the test's
// hands: its own client, store, guard and handler.
func limitedEnv(t *testing.T, env *ddbtest.Env, mode config.Mode, limit access.Limit, c *clock) api.Handler {
	t.Helper()
	client, _ := env.NewClient(t)
	return limitedEnvOn(t, client, env, mode, limit, c)
}

func limitedEnvOn(t *testing.T, client *dynamodb.Client, env *ddbtest.Env, mode config.Mode, limit access.Limit, c *clock) api.Handler {
	t.Helper()
	// Told the table's kind, as createproduct.New tells it: no
	// DescribeTable on the first call.
	store, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithTableKind(idemtable.Regional))
	require.NoError(t, err)
	products, err := product.NewService(product.Config{ProductsTable: env.Tables.Products, OutboxTable: env.Tables.Outbox, EventSource: "idemlambda.products"})
	require.NoError(t, err)
	guard, err := access.NewGuard(access.Config{Table: env.Tables.Callers, Limit: limit, Now: c.now})
	require.NoError(t, err)
	execute := store.Execute
	if mode == config.ModeTransact {
		execute = store.Transact
	}
	creator, err := api.NewProductCreator(execute, products, guard)
	require.NoError(t, err)
	h, err := api.NewCreateHandler(creator, store)
	require.NoError(t, err)
	return h.Serve
}

func serve(h api.Handler, who *events.APIGatewayV2HTTPRequestContextAuthorizerDescription, key string) events.APIGatewayV2HTTPResponse {
	req := postReq(jsonHeaders(key), widget)
	req.RequestContext.Authorizer = who
	return h(context.Background(), req).Response
}

// A caller over its limit gets 429 with Retry-After until its window
// ends, refused without a DynamoDB call once this environment knows the
// window is full; replays are never counted; another caller is not
// limited; the key of a refused request is free, and creates the product
// once the window has passed.
func TestCallerOverItsLimitGets429(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		env := ddbtest.New(t)
		c := newClock(time.Unix(1_800_000_003, 0)) // 7 s before the window [1_800_000_000, +10 s) ends
		client, counter := env.NewClient(t)
		h := limitedEnvOn(t, client, env, mode, access.Limit{Creates: 3, Window: 10 * time.Second}, c)
		alice, bob := jwtCaller("alice", "*"), jwtCaller("bob", "*")

		require.Equal(t, 201, serve(h, alice, "a-1").StatusCode)
		require.Equal(t, 201, serve(h, alice, "a-2").StatusCode)
		for range 3 {
			replay := serve(h, alice, "a-1")
			require.Equal(t, 201, replay.StatusCode)
			assert.Equal(t, "true", replay.Headers["Idempotent-Replayed"], "replays are never counted")
		}
		require.Equal(t, 201, serve(h, alice, "a-3").StatusCode, "the third creation: replays took none")

		counter.Reset()
		over := serve(h, alice, "a-4")
		p := assertProblem(t, over, 429, "too-many-requests")
		assert.Contains(t, p.Detail, "limit")
		assert.Equal(t, "7", over.Headers["Retry-After"], "until the window ends")
		assert.Zero(t, counter.Total(), "this environment counted the window full itself: no DynamoDB call")
		assert.Equal(t, 201, serve(h, bob, "b-1").StatusCode, "another caller is not limited")

		c.add(7 * time.Second) // the next window
		again := serve(h, alice, "a-4")
		require.Equal(t, 201, again.StatusCode, "the 429 was not the key's answer: %s", again.Body)
		assert.NotContains(t, again.Headers, "Idempotent-Replayed")
		assert.Equal(t, 5, countItems(t, env, env.Tables.Products))
	})
}

// Across environments, a caller creates at most its limit per window,
// however its requests spread: each counter of its window takes at most
// its share, in the creation's own transaction. An environment that did
// not count a counter full learns it from a refusal, answered with
// Retry-After 1 while other counters may have room.
func TestLimitHoldsAcrossEnvironments(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		env := ddbtest.New(t)
		const limit, envs, workers = 20, 4, 12
		c := newClock(time.Unix(1_800_000_000, 0))
		handlers := make([]api.Handler, envs)
		for i := range handlers {
			handlers[i] = limitedEnv(t, env, mode, access.Limit{Creates: limit, Window: time.Hour}, c)
		}
		alice := jwtCaller("alice", "*")
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		var next atomic.Int32
		for w := range workers {
			wg.Go(func() {
				h := handlers[w%envs]
				for range 6 {
					resp := serve(h, alice, "k-"+strconv.Itoa(int(next.Add(1))))
					mu.Lock()
					statuses[resp.StatusCode]++
					mu.Unlock()
					switch resp.StatusCode {
					case 201, 503: // 503: conflicts past the retries, nothing written
					case 429:
						assertProblem(t, resp, 429, "too-many-requests")
						assert.NotEmpty(t, resp.Headers["Retry-After"])
					default:
						t.Errorf("status %d: %s", resp.StatusCode, resp.Body)
					}
				}
			})
		}
		wg.Wait()
		assert.Equal(t, statuses[201], countItems(t, env, env.Tables.Products), "one product per 201")
		assert.LessOrEqual(t, statuses[201], limit, "never more than the limit: %v", statuses)

		// Each environment goes on until it knows the window is full;
		// then the caller has created exactly its limit.
		for i, h := range handlers {
			for n := 0; ; n++ {
				require.Less(t, n, 2*access.WindowReplicas+limit, "environment %d never learned the window is full", i)
				resp := serve(h, alice, fmt.Sprintf("drain-%d-%d", i, n))
				if resp.StatusCode == 429 && resp.Headers["Retry-After"] != "1" {
					break
				}
			}
		}
		assert.Equal(t, limit, countItems(t, env, env.Tables.Products), "exactly the limit, once every counter is full: %v", statuses)
		t.Logf("mode=%s concurrent phase %v", mode, statuses)
	})
}

func countItems(t *testing.T, env *ddbtest.Env, table string) int {
	t.Helper()
	out, err := env.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return len(out.Items)
}
