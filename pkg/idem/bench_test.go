package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// The benchmarks run each path in both modes against the backend of
// DYNAMODB_TEST_BACKEND; make bench points them at a store in another
// process, so B/op and allocs/op are this package's and the SDK's alone.
// ddb-calls/op is what the store saw per request.

// BenchmarkExecuteFirst is a first execution: claim a fresh key, commit a
// product, its outbox event and the completion.
func BenchmarkExecuteFirst(b *testing.B) {
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			env := newEnv(b)
			s := newStore(b, env, idem.WithMode(mode))
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Execute(ctx, scope(b, fmt.Sprintf("bench-%d", i)), "fp", effect(env)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(env.Counter.Total())/float64(i), "ddb-calls/op")
		})
	}
}

// BenchmarkExecuteReplay is a retry of a completed key: from the table,
// and from a cache that holds it.
func BenchmarkExecuteReplay(b *testing.B) {
	for _, mode := range modes {
		for _, cached := range []bool{false, true} {
			name := string(mode) + "/table"
			var opts []idem.Option
			if cached {
				name, opts = string(mode)+"/cache", []idem.Option{idem.WithCache(1000, 0)}
			}
			b.Run(name, func(b *testing.B) {
				env := newEnv(b)
				s := newStore(b, env, append(opts, idem.WithMode(mode))...)
				ctx := context.Background()
				sc := scope(b, "replayed")
				if _, err := s.Execute(ctx, sc, "fp", effect(env)); err != nil {
					b.Fatal(err)
				}
				env.Counter.Reset()
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					res, err := s.Execute(ctx, sc, "fp", effect(env))
					if err != nil || res.Outcome != idem.OutcomeReplayed {
						b.Fatalf("replay: %v %v", res.Outcome, err)
					}
					n++
				}
				b.ReportMetric(float64(env.Counter.Total())/float64(n), "ddb-calls/op")
			})
		}
	}
}

// stormTxLatency is how long the strict store holds a transaction's items
// in BenchmarkStorm: about what DynamoDB's TransactWriteItems takes
// against a single-item write, so that duplicates meet the winner's
// running commit as they do there.
const stormTxLatency = 5 * time.Millisecond

// BenchmarkStorm is a duplicate storm, as workload 2a of make bench-peer:
// keys in turn, each sent by 8 identical requests at once. An op is one
// request, so the figures are per request, averaged over each key's
// winner and its 7 duplicates: ddb-calls/op, reads/op (consistent
// GetItem), in-flight/op (answered 409), p50-ms and p99-ms (each
// request's own time). With wait, the duplicates wait (WithWait) rather
// than answer 409. On the strict store, transactions hold their items
// stormTxLatency; on an endpoint, as long as that server takes.
func BenchmarkStorm(b *testing.B) {
	const dups = 8
	for _, mode := range modes {
		for _, wait := range []bool{false, true} {
			name := string(mode)
			opts := []idem.Option{idem.WithMode(mode)}
			if wait {
				name += "/wait"
				opts = append(opts, idem.WithWait(5*time.Second))
			}
			b.Run(name, func(b *testing.B) {
				env := newEnv(b)
				if env.Store != nil {
					env.Store.SetTransactionLatency(stormTxLatency)
				}
				s := newStore(b, env, opts...)
				ctx := context.Background()
				var tl tally
				var mu sync.Mutex
				var took []time.Duration
				b.ReportAllocs()
				requests := 0
				for i := 0; b.Loop(); i++ {
					if i%dups != 0 {
						continue // one round of 8 requests per 8 ops
					}
					sc := scope(b, fmt.Sprintf("storm-%d", i))
					var wg sync.WaitGroup
					for range dups {
						wg.Go(func() {
							t0 := time.Now()
							res, err := s.Execute(ctx, sc, "fp", effect(env))
							d := time.Since(t0)
							tl.add(res, err)
							mu.Lock()
							took = append(took, d)
							mu.Unlock()
						})
					}
					wg.Wait()
					requests += dups
				}
				if tl.other.Load() != 0 {
					b.Fatalf("%d requests failed", tl.other.Load())
				}
				if tl.executed.Load() != int64(requests/dups) {
					b.Fatalf("%d executions for %d keys", tl.executed.Load(), requests/dups)
				}
				slices.Sort(took)
				b.ReportMetric(float64(env.Counter.Total())/float64(requests), "ddb-calls/op")
				b.ReportMetric(float64(env.Counter.Get("GetItem"))/float64(requests), "reads/op")
				b.ReportMetric(float64(tl.inFlight.Load())/float64(requests), "in-flight/op")
				b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
				b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
			})
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkDo is Do's first execution: reserve, run, complete.
func BenchmarkDo(b *testing.B) {
	env := newEnv(b)
	s := newStore(b, env)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, err := idem.Do(ctx, s, scope(b, fmt.Sprintf("do-%d", i)), "fp", func(context.Context) (int, error) { return i, nil }); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(env.Counter.Total())/float64(i), "ddb-calls/op")
}

// BenchmarkScopeAndFingerprint is the CPU-only work per request.
func BenchmarkScopeAndFingerprint(b *testing.B) {
	body := []byte(`{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"5f1c2a4e-8d6b-4f3a-9c2e-1b7d3e5a9f00"}`)
	b.ReportAllocs()
	for b.Loop() {
		sc, err := idem.NewScope("POST /products", "arn:aws:iam::123456789012:user/alice", "4b0c-key-1")
		if err != nil {
			b.Fatal(err)
		}
		_ = sc.ID()
		if _, err := idem.Fingerprint(json.RawMessage(body)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWaitingDuplicate is a duplicate that arrives while a first
// call holds its key for 1 s, and waits for its response (WithWait)
// instead of answering ErrInFlight: ddb-calls/op is the waiter's own
// calls (its claim, then one consistent GetItem per poll), a figure the
// polls' timing decides. cold is a waiter whose store has seen no
// execution of the operation (a fresh store per op); warm one whose
// store has watched one complete before.
func BenchmarkWaitingDuplicate(b *testing.B) {
	const hold = time.Second
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			env := newEnv(b)
			holder := newStore(b, env)
			client, calls := env.NewClient(b)
			newWaiter := func() *idem.Store {
				s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithWait(3*hold))
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			waiter := newWaiter()
			ctx := context.Background()
			n, keys := 0, 0
			wait := func() {
				keys++
				sc := scope(b, fmt.Sprintf("wait-%s-%d", name, keys))
				started := make(chan struct{})
				var runs atomic.Int64
				var wg sync.WaitGroup
				wg.Go(func() {
					if _, err := holder.Run(ctx, sc, "fp", slowResponse(hold, started, &runs)); err != nil {
						b.Error(err)
					}
				})
				<-started
				res, err := waiter.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) {
					return idem.Response{}, errors.New("a waiter ran the operation")
				})
				wg.Wait()
				if err != nil || res.Outcome != idem.OutcomeReplayed {
					b.Fatalf("the waiter got %s, %v", res.Outcome, err)
				}
				n++
			}
			if warm {
				wait()
				calls.Reset()
				n = 0
			}
			for b.Loop() {
				if !warm {
					waiter = newWaiter()
				}
				wait()
			}
			b.ReportMetric(float64(calls.Total())/float64(n), "ddb-calls/op")
			b.ReportMetric(float64(calls.Get("GetItem"))/float64(n), "polls/op")
		})
	}
}
