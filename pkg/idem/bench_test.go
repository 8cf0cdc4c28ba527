package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// BenchmarkExecuteConcurrentDuplicates sends 8 identical requests at once
// per fresh key; an op is one request, so the figures are per request,
// averaged over the winner and its 7 duplicates.
func BenchmarkExecuteConcurrentDuplicates(b *testing.B) {
	const dups = 8
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			env := newEnv(b)
			s := newStore(b, env, idem.WithMode(mode))
			ctx := context.Background()
			var tl tally
			b.ReportAllocs()
			requests := 0
			for i := 0; b.Loop(); i++ {
				if i%dups != 0 {
					continue // one round of 8 requests per 8 ops
				}
				sc := scope(b, fmt.Sprintf("dup-%d", i))
				var wg sync.WaitGroup
				for range dups {
					wg.Go(func() { tl.add(s.Execute(ctx, sc, "fp", effect(env))) })
				}
				wg.Wait()
				requests += dups
			}
			if tl.other.Load() != 0 {
				b.Fatalf("%d requests failed", tl.other.Load())
			}
			b.ReportMetric(float64(env.Counter.Total())/float64(requests), "ddb-calls/op")
			b.ReportMetric(float64(tl.inFlight.Load())/float64(requests), "in-flight/op")
		})
	}
}

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
// polls' timing decides.
func BenchmarkWaitingDuplicate(b *testing.B) {
	const hold = time.Second
	env := newEnv(b)
	holder := newStore(b, env)
	client, calls := env.NewClient(b)
	waiter, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithWait(3*hold))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	for b.Loop() {
		sc := scope(b, fmt.Sprintf("wait-%d", n))
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
	b.ReportMetric(float64(calls.Total())/float64(n), "ddb-calls/op")
	b.ReportMetric(float64(calls.Get("GetItem"))/float64(n), "polls/op")
}
