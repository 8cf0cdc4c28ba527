package idem_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// TestMidCommitDuplicateIsInFlightAtOnce: without a wait, a duplicate
// that meets the key in the winner's running transaction (reserve mode:
// its claim refused with TransactionConflictException while the holder
// commits; transact mode: its transaction cancelled with
// TransactionConflict on the record) is a concurrent duplicate of a
// request still running: ErrInFlight at once, after its one call, with
// no read. The winner's commit still lands, once, and replays after.
func TestMidCommitDuplicateIsInFlightAtOnce(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		if env.Store == nil {
			t.Skip("holds a transaction at the strict store")
		}
		ctx := context.Background()
		sc := scope(t, "mid-commit")
		winner := newStore(t, env, idem.WithMode(mode))
		held := env.Store.Hold(idemtest.OpTransactWriteItems)
		var first idem.Result
		var firstErr error
		var wg sync.WaitGroup
		wg.Go(func() { first, firstErr = winner.Execute(ctx, sc, "fp", effect(env)) })
		<-held.Arrived() // the winner's transaction holds the record

		const dups = 32
		var tl tally
		counters := make([]*callCounter, dups)
		var dupsWG sync.WaitGroup
		for i := range dups {
			client, c := env.NewClient(t)
			s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithMode(mode))
			must.NoError(t, err)
			counters[i] = c
			dupsWG.Go(func() {
				res, err := s.Execute(ctx, sc, "fp", effect(env))
				tl.add(res, err)
				var inflight *idem.InFlightError
				if errors.As(err, &inflight) {
					check.Positive(t, inflight.RetryAfter)
					check.Equal(t, idem.OutcomeInFlight, res.Outcome)
				}
			})
		}
		dupsWG.Wait()
		held.Release()
		wg.Wait()
		must.NoError(t, firstErr)
		check.EqualValues(t, dups, tl.inFlight.Load(), "every duplicate in flight")
		for i, c := range counters {
			check.Equal(t, 1, c.Total(), "duplicate %d: one call (%s)", i, c)
			check.Zero(t, c.Get("GetItem"), "duplicate %d: no read", i)
		}
		check.Equal(t, 1, countItems(t, env, env.Tables.Products), "one effect")

		// The commit landed: a duplicate now replays it, in one call.
		client, c := env.NewClient(t)
		late, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithMode(mode))
		must.NoError(t, err)
		res, err := late.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, res.Outcome)
		check.Equal(t, first.Response, res.Response)
		check.Equal(t, 1, c.Total())
	})
}

// bubble is a strict store and the tables newEnv makes, created inside a
// testing/synctest bubble and reached in-process, so that every wait and
// every transaction's latency runs on the bubble's fake clock.
type bubble struct {
	srv *idemtest.Server
	env *testEnv
}

func newBubble(t *testing.T, opts ...idemtest.Option) *bubble {
	t.Helper()
	srv := idemtest.NewServer(opts...)
	t.Cleanup(srv.Close)
	b := &bubble{srv: srv, env: &testEnv{Kind: "embedded", Store: srv,
		Tables: testTables{Idempotency: "idempotency", Products: "products", Outbox: "outbox"}}}
	b.env.Client, b.env.Counter = b.client()
	ctx := context.Background()
	must.NoError(t, idemtable.Create(ctx, b.env.Client, b.env.Tables.Idempotency, idemtable.Layout{}))
	_, err := b.env.Client.CreateTable(ctx, idemtable.Input(b.env.Tables.Products, idemtable.Layout{}))
	must.NoError(t, err)
	outbox := idemtable.Input(b.env.Tables.Outbox, idemtable.Layout{})
	outbox.AttributeDefinitions, outbox.KeySchema = outboxKey.AttributeDefinitions, outboxKey.KeySchema
	_, err = b.env.Client.CreateTable(ctx, outbox)
	must.NoError(t, err)
	return b
}

// client is a client of the bubble's store with a counter of its own.
func (b *bubble) client() (*dynamodb.Client, *callCounter) {
	c := &callCounter{counts: map[string]int{}}
	return b.srv.HandlerClient(c.option), c
}

// store is a store of its own, as another process's, with its counter.
func (b *bubble) store(t *testing.T, opts ...idem.Option) (*idem.Store, *callCounter) {
	t.Helper()
	client, c := b.client()
	s, err := idem.NewStore(client, b.env.Tables.Idempotency, opts...)
	must.NoError(t, err)
	return s, c
}

// TestMidCommitDuplicateWithAWaitReadsOnce: with a wait, or for a way in
// whose in-flight answer would cost a redelivery (idemevent, the queue
// ways in: idem.CallRedelivers), a duplicate that meets the winner's
// running transaction waits about what a transaction takes (10 ms
// before the store has seen one), then reads the record once instead of
// sending its write again: the commit, 8 ms long here, has landed, and
// every duplicate replays it 10 ms after it met the commit, in two calls
// (its claim, one consistent GetItem). In fake time, so the figures are
// exact.
func TestMidCommitDuplicateWithAWaitReadsOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []idem.Option
		call []idem.CallOption
	}{
		{"wait", []idem.Option{idem.WithWait(time.Second)}, nil},
		{"follow", nil, []idem.CallOption{idem.CallRedelivers()}},
	} {
		for _, mode := range modes {
			t.Run(c.name+"/"+string(mode), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := newBubble(t, idemtest.WithTransactionLatency(8*time.Millisecond))
					ctx := context.Background()
					sc := scope(t, "mid-commit-wait")
					winner, _ := b.store(t, idem.WithMode(mode))
					var first idem.Result
					var wg sync.WaitGroup
					wg.Go(func() {
						var err error
						first, err = winner.Execute(ctx, sc, "fp", effect(b.env))
						check.NoError(t, err)
					})
					synctest.Wait() // the winner's transaction holds the record
					met := time.Now()
					const dups = 16
					var tl tally
					var dupsWG sync.WaitGroup
					got := make([]idem.Response, dups)
					for i := range dups {
						s, calls := b.store(t, append([]idem.Option{idem.WithMode(mode)}, c.opts...)...)
						dupsWG.Go(func() {
							res, err := s.Execute(ctx, sc, "fp", effect(b.env), c.call...)
							tl.add(res, err)
							got[i] = res.Response
							check.Equal(t, 10*time.Millisecond, time.Since(met), "a transaction's time after it met the commit")
							check.Equal(t, 2, calls.Total(), "its claim and one read: %s", calls)
							check.Equal(t, 1, calls.Get("GetItem"))
						})
					}
					dupsWG.Wait()
					wg.Wait()
					for i, r := range got {
						check.Equal(t, first.Response, r, "duplicate %d: the winner's response", i)
					}
					check.EqualValues(t, dups, tl.replayed.Load(), "every duplicate replays")
					check.Equal(t, 1, countItems(t, b.env, b.env.Tables.Products))
				})
			})
		}
	}
}

// TestWaiterPollsForTheExpectedCompletion: a waiter whose store knows how
// long the operation takes polls when the holder should be done; one
// that knows nothing polls as before (full jitter under 25 ms doubling
// to 500 ms). Whatever the store knows, and however wrong it is, the
// waiter answers at most 500 ms after the holder's completion, the
// longest pause of the schedule before (so never later than it could
// answer), and no later than its wait allows. In fake time, so a
// schedule without jitter gives the same figures on every run.
func TestWaiterPollsForTheExpectedCompletion(t *testing.T) {
	type result struct {
		delay time.Duration // from the holder's completion to the waiter's answer
		calls int
	}
	// wait runs one holder of the operation for took and one waiter that
	// arrives just after its claim, on a store that has first run the
	// operation itself for learned (0: never).
	wait := func(t *testing.T, took, learned time.Duration) result {
		var r result
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t)
			ctx := context.Background()
			holder, _ := b.store(t)
			waiter, calls := b.store(t, idem.WithWait(time.Minute))
			run := func(d time.Duration, started chan<- struct{}) func(context.Context) (idem.Response, error) {
				return func(context.Context) (idem.Response, error) {
					if started != nil {
						close(started)
					}
					time.Sleep(d)
					return created(uuid.NewString()), nil
				}
			}
			if learned > 0 {
				_, err := waiter.Run(ctx, scope(t, "learn"), "fp", run(learned, nil))
				must.NoError(t, err)
			}
			sc := scope(t, "held")
			started := make(chan struct{})
			var completed time.Time
			var wg sync.WaitGroup
			wg.Go(func() {
				_, err := holder.Run(ctx, sc, "fp", run(took, started))
				check.NoError(t, err)
				completed = time.Now()
			})
			<-started
			time.Sleep(time.Millisecond)
			calls.Reset()
			res, err := waiter.Run(ctx, sc, "fp", mustNotRun(t))
			answered := time.Now()
			wg.Wait()
			must.NoError(t, err)
			check.Equal(t, idem.OutcomeReplayed, res.Outcome)
			r = result{delay: answered.Sub(completed), calls: calls.Total()}
		})
		return r
	}
	for _, took := range []time.Duration{100 * time.Millisecond, time.Second, 3 * time.Second} {
		for _, learned := range []time.Duration{0, took, took / 2, 2 * took} {
			name := fmt.Sprintf("holder %v, learned %v", took, learned)
			if learned == 0 {
				name = fmt.Sprintf("holder %v, nothing learned", took)
			}
			t.Run(name, func(t *testing.T) {
				r := wait(t, took, learned)
				t.Logf("answered %v after the completion, %d calls", r.delay, r.calls)
				check.GreaterOrEqual(t, r.delay, time.Duration(0))
				check.LessOrEqual(t, r.delay, 500*time.Millisecond, "no later than the longest pause of the schedule before")
				if learned == took {
					// Pauses of 500 ms until the expected completion (the
					// claim, plus the learned time, plus a transaction's:
					// 10 ms before the store has seen one), which the
					// last read sees, if an earlier one did not.
					most := 1 + int((took+10*time.Millisecond+499*time.Millisecond)/(500*time.Millisecond))
					check.LessOrEqual(t, r.calls, most, "the claim and a read per 500 ms")
					check.LessOrEqual(t, r.delay, 10*time.Millisecond, "at most a transaction's time after the completion")
				}
			})
		}
	}
	// A 1 s holder costs a waiter that knows its operation at most 4 calls.
	t.Run("one second", func(t *testing.T) {
		r := wait(t, time.Second, time.Second)
		check.LessOrEqual(t, r.calls, 4)
	})
}

// TestConcurrentWaitersLearnAndRunOnce: 24 waiters of each of 8 keys,
// on stores of their own, while a holder of each runs 300 ms; then again
// on the same stores, which now know the operation: every waiter
// replays its key's one execution both times, and in the second round
// with one read.
func TestConcurrentWaitersLearnAndRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		ctx := context.Background()
		const keys, waiters, took = 8, 24, 300 * time.Millisecond
		stores := make([]*idem.Store, waiters)
		counters := make([]*callCounter, waiters)
		for i := range waiters {
			stores[i], counters[i] = b.store(t, idem.WithWait(10*time.Second))
		}
		holder, _ := b.store(t)
		round := func(r int) (reads int) {
			for _, c := range counters {
				c.Reset()
			}
			var runs atomic.Int64
			var tl tally
			var wg sync.WaitGroup
			for k := range keys {
				sc := scope(t, fmt.Sprintf("round-%d-key-%d", r, k))
				started := make(chan struct{})
				var first idem.Result
				var hwg sync.WaitGroup
				hwg.Go(func() {
					var err error
					first, err = holder.Run(ctx, sc, "fp", slowResponse(took, started, &runs))
					check.NoError(t, err)
				})
				<-started
				var wwg sync.WaitGroup
				got := make([]idem.Response, waiters)
				for i := range waiters {
					wwg.Go(func() {
						res, err := stores[i].Run(ctx, sc, "fp", mustNotRun(t))
						tl.add(res, err)
						got[i] = res.Response
					})
				}
				wg.Go(func() {
					hwg.Wait()
					wwg.Wait()
					for i, r := range got {
						check.Equal(t, first.Response, r, "key %d, waiter %d", k, i)
					}
				})
			}
			wg.Wait()
			check.EqualValues(t, keys, runs.Load(), "one execution per key")
			check.EqualValues(t, keys*waiters, tl.replayed.Load(), "every waiter replays")
			for _, c := range counters {
				reads += c.Get("GetItem")
			}
			return reads
		}
		cold := round(0)
		warm := round(1)
		t.Logf("reads per waiter: %.2f knowing nothing, %.2f knowing the operation", float64(cold)/(keys*waiters), float64(warm)/(keys*waiters))
		// Knowing nothing, a poll under limits of 25, 50, 100 and 200 ms
		// cannot reach 300 ms before its fourth; knowing the operation,
		// the first read lands at the expected completion, after it.
		check.GreaterOrEqual(t, cold, 4*keys*waiters)
		check.Equal(t, keys*waiters, warm, "one read each")
	})
}

// TestTransactWhoseEarlierAttemptLandedIsNotInFlight: sent.once() speaks
// for one TransactWriteItems, but every attempt of a Transact call
// writes the same token. Its first transaction lands with the answer
// lost, the SDK's retry is cancelled for throttling (so the call tries
// again), and its second transaction, sent once, meets another request's
// transaction on the record. That refusal says nothing of the first: the
// record holds this call's own commit, so the call executed; an
// in-flight answer would tell the caller its effect had not landed.
func TestTransactWhoseEarlierAttemptLandedIsNotInFlight(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if env.Store == nil {
		t.Skip("injects faults at the strict store")
	}
	ctx := context.Background()
	sc := scope(t, "landed-then-conflict")
	s := newStore(t, env, idem.WithMode(idem.ModeTransact))
	env.Store.Inject(idemtest.OpTransactWriteItems, idemtest.LostAnswer, 1)
	env.Store.Inject(idemtest.OpTransactWriteItems, idemtest.ThrottledPastRetries, 1)
	env.Store.Inject(idemtest.OpTransactWriteItems, idemtest.Conflict, 1)
	res, err := s.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err, "the first transaction landed")
	check.Equal(t, idem.OutcomeExecuted, res.Outcome)
	check.Equal(t, 1, countItems(t, env, env.Tables.Products))
}

// TestReserveClaimSentTwiceThenConflictedReadsItsOwn: the claim's first
// attempt lands with its answer lost and the SDK's retry meets a running
// transaction on the record: sent twice, so the record is read, and it
// is this call's own claim, which goes on to execute (not ErrInFlight
// with the key held by a claim nobody runs).
func TestReserveClaimSentTwiceThenConflictedReadsItsOwn(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if env.Store == nil {
		t.Skip("injects faults at the strict store")
	}
	ctx := context.Background()
	s := newStore(t, env, idem.WithMode(idem.ModeReserve))
	env.Store.Inject(idemtest.OpPutItem, idemtest.LostAnswer, 1)
	env.Store.Inject(idemtest.OpPutItem, idemtest.Conflict, 1)
	res, err := s.Execute(ctx, scope(t, "sent-twice"), "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, res.Outcome)
	check.Equal(t, 1, countItems(t, env, env.Tables.Products))
}
