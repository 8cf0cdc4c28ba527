package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/internal/config"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// With DynamoDB's transaction isolation modelled, duplicates that meet a
// running commit are answered as duplicates (409 with Retry-After, or the
// winner's 201), never 500, and never 503 for the record, in both modes: 8 execution
// environments, each with its own client and handler, 40 keys, each sent
// 4 times at once to 4 of them, every request under a deadline.
func TestEightEnvironmentsFortyKeysFourDuplicates(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelInfo)
		if f.env.Store == nil {
			t.Skipf("the isolation model is the embedded store's; %s backend in use", f.env.Kind)
		}
		// DynamoDB's transactions take milliseconds; so do these.
		f.env.Store.SetTransactionLatency(5 * time.Millisecond)
		const envs, keys, dups = 8, 40, 4
		handlers := make([]func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), envs)
		logs := make([]*logbuf.Buffer, envs)
		defer func() {
			if t.Failed() {
				for _, l := range logs {
					for _, line := range strings.Split(l.String(), "\n") {
						if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) {
							t.Log(line)
						}
					}
				}
			}
		}()
		for i := range handlers {
			client, _ := f.env.NewClient(t)
			logs[i] = &logbuf.Buffer{}
			h, err := createproduct.New(client, createConfig(f.env.Tables, mode), app.Runtime{Out: logs[i]})
			require.NoError(t, err)
			handlers[i] = h
		}
		type answer struct {
			key    int
			status int
			body   string
			retry  string
		}
		answers := make(chan answer, keys*dups)
		const maxAttempts = 10
		var unavailable atomic.Int64
		var wg sync.WaitGroup
		for k := range keys {
			for d := range dups {
				h := handlers[(k+d*3)%envs] // each duplicate in another environment
				wg.Go(func() {
					// Clients retry at their own pace: duplicates spread
					// over the first request's claim and commit.
					time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
					// A Lambda-like deadline, generous: a loaded CI machine
					// slows the store, and this test is about conflicts.
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					// A 503 is retried, as the API tells clients to: under
					// load, requests of one caller may keep meeting each
					// other on its limit's counters (never on the record,
					// checked below). The attempts are bounded, not timed.
					var resp events.APIGatewayV2HTTPResponse
					for range maxAttempts {
						var err error
						resp, err = h(ctx, postReq(jsonHeaders(fmt.Sprintf("k8-%02d", k)), widget))
						assert.NoError(t, err)
						if resp.StatusCode != 503 {
							break
						}
						assert.NotEmpty(t, resp.Headers["Retry-After"], "a 503 says when to retry")
						unavailable.Add(1)
						time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
					}
					answers <- answer{key: k, status: resp.StatusCode, body: resp.Body, retry: resp.Headers["Retry-After"]}
				})
			}
		}
		wg.Wait()
		close(answers)
		statuses := map[int]int{}
		created := map[int]string{}
		for a := range answers {
			statuses[a.status]++
			switch a.status {
			case 201:
				if prev, ok := created[a.key]; ok {
					assert.Equal(t, prev, a.body, "key %d: every 201 is the same product", a.key)
				}
				created[a.key] = a.body
			case 409:
				assert.NotEmpty(t, a.retry, "a 409 says when to retry")
			}
		}
		stats := f.env.Store.Stats()
		// A duplicate that met a running commit is answered as one: no
		// 503 may come from a conflict on the key's record (item 0).
		for _, l := range logs {
			for _, line := range strings.Split(l.String(), "\n") {
				if strings.Contains(line, `"status":503`) {
					assert.NotContains(t, line, "transaction item 0:", "a duplicate meeting a commit is a 409 or the 201, never a 503")
				}
			}
		}
		t.Logf("mode=%s statuses=%v 503s retried=%d store conflicts: %d refused writes, %d cancelled transactions (%.0f per 1,000 requests)",
			mode, statuses, unavailable.Load(), stats.ConflictExceptions, stats.ConflictCancellations,
			float64(stats.ConflictExceptions+stats.ConflictCancellations)*1000/(keys*dups))
		assert.Equal(t, keys*dups, statuses[201]+statuses[409], "only 201 and 409: %v", statuses)
		assert.Len(t, created, keys, "every key created its product")
		assert.Equal(t, keys, f.count(t, f.env.Tables.Products), "one product per key")
		assert.Equal(t, keys, f.count(t, f.env.Tables.Outbox), "one event per key")
	})
}

// Duplicates that arrive while the first request's commit is held at the
// store for a second get 409 with Retry-After (the key is in flight),
// never 500 or 503; the first gets its 201, and a retry afterwards replays
// it byte for byte.
func TestDuplicatesDuringASlowCommit(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelInfo)
		if f.env.Store == nil {
			t.Skipf("holding a transaction is the embedded store's; %s backend in use", f.env.Kind)
		}
		hold := f.env.Store.Hold(idemtest.OpTransactWriteItems)
		first := make(chan events.APIGatewayV2HTTPResponse, 1)
		go func() { first <- f.post(t, jsonHeaders("slow"), widget) }()
		select {
		case <-hold.Arrived():
		case <-time.After(time.Minute):
			t.Fatal("the first request's commit never reached the store")
		}
		release := time.AfterFunc(time.Second, hold.Release)
		defer release.Stop()

		const dups = 6
		statuses := make(chan events.APIGatewayV2HTTPResponse, dups)
		var wg sync.WaitGroup
		for range dups {
			wg.Go(func() { statuses <- f.post(t, jsonHeaders("slow"), widget) })
		}
		wg.Wait()
		close(statuses)
		won := <-first
		require.Equal(t, 201, won.StatusCode, won.Body)
		counts := map[int]int{}
		for resp := range statuses {
			counts[resp.StatusCode]++
			switch resp.StatusCode {
			case 409:
				assertProblem(t, resp, 409, "in-flight")
				assert.NotEmpty(t, resp.Headers["Retry-After"])
			case 201:
				assert.Equal(t, won.Body, resp.Body)
			}
		}
		t.Logf("mode=%s duplicates during a 1 s commit: %v", mode, counts)
		assert.Equal(t, dups, counts[409]+counts[201], "only 409 and the winner's 201: %v", counts)

		again := f.post(t, jsonHeaders("slow"), widget)
		assert.Equal(t, 201, again.StatusCode)
		assert.Equal(t, won.Body, again.Body, "a retry afterwards replays byte for byte")
		assert.Equal(t, "true", again.Headers["Idempotent-Replayed"])
		assert.Equal(t, 1, f.count(t, f.env.Tables.Products))
	})
}
