package idem_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The claim state machine's branches and the judgement of the record
// that beat a claim, each pinned by a test in fake time (a
// testing/synctest bubble with the strict store in it), so that every
// answer, and the moment it comes, is the same on every run.

// runs counts the executions of an operation, and answers with their
// number.
type runs struct {
	mu sync.Mutex
	n  int
}

func (r *runs) op(context.Context) (idem.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return idem.Response{Body: fmt.Appendf(nil, "run %d", r.n)}, nil
}

func (r *runs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// answer is what a call returned, and when.
type answer struct {
	res idem.Result
	err error
	at  time.Time
}

// goRun calls s.Run in a goroutine of the bubble; its answer comes on the
// channel returned.
func goRun(ctx context.Context, s *idem.Store, sc idem.Scope, fn func(context.Context) (idem.Response, error)) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		res, err := s.Run(ctx, sc, "fp", fn)
		out <- answer{res, err, time.Now()}
	}()
	return out
}

// A waiter whose holder releases the key (its operation failed) finds the
// record gone at its next poll and claims the key itself: it runs, at
// once, rather than send its client away in flight from a free key.
func TestAWaiterWhoseHolderReleasesTheKeyClaimsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		ctx := context.Background()
		sc := scope(t, "released-under-a-waiter")
		holder, _ := b.store(t)
		claim, err := holder.Reserve(ctx, sc, "fp")
		must.NoError(t, err)
		must.NotNil(t, claim.Lease)

		waiter, _ := b.store(t, idem.WithWait(time.Minute))
		var r runs
		start := time.Now()
		waited := goRun(ctx, waiter, sc, r.op)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		check.Equal(t, 0, r.count(), "the waiter runs nothing while the holder lives")
		must.NoError(t, claim.Lease.Release(ctx), "the holder's operation failed: it releases the key")

		got := <-waited
		must.NoError(t, got.err, "the key is free: the waiter claims it")
		check.Equal(t, idem.OutcomeExecuted, got.res.Outcome)
		check.Equal(t, 1, r.count())
		check.True(t, got.at.Sub(start) < 3*time.Second+500*time.Millisecond,
			"answered %v after it began, more than a poll (500 ms) after the release at 3 s", got.at.Sub(start))
	})
}

// A waiter whose holder dies (its lease ends with no completion) answers
// in flight at its first poll past the lease's end, long before its wait
// runs out, and never runs the operation in the dead holder's place: the
// client's retry takes the key over.
func TestAWaiterAnswersInFlightWhenItsHolderDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		sc := scope(t, "dies-under-a-waiter")
		holder, _ := b.store(t, idem.WithLease(time.Minute, 2*time.Second))
		start := time.Now()
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		claim, err := holder.Reserve(dctx, sc, "fp") // and dies: its lease ends at 12 s
		must.NoError(t, err)
		must.NotNil(t, claim.Lease)
		leaseEnd := start.Add(12 * time.Second)
		check.Equal(t, leaseEnd, claim.Lease.ExpiresAt())

		time.Sleep(5 * time.Second)
		waiter, _ := b.store(t, idem.WithWait(time.Minute))
		var r runs
		ctx := context.Background()
		got := <-goRun(ctx, waiter, sc, r.op)
		var inflight *idem.InFlightError
		must.ErrorAs(t, got.err, &inflight)
		check.Equal(t, idem.OutcomeInFlight, got.res.Outcome)
		check.Equal(t, 0, r.count(), "a waiter never runs the operation in a dead holder's place")
		check.True(t, got.at.After(leaseEnd), "answered at %v, before the lease ended at 12 s", got.at.Sub(start))
		check.True(t, got.at.Before(leaseEnd.Add(500*time.Millisecond+time.Millisecond)),
			"answered at %v: more than a poll (500 ms) after the holder's lease ended at 12 s", got.at.Sub(start))
		check.Equal(t, time.Millisecond, inflight.RetryAfter, "the key can be taken over at once")

		rec, ok, err := waiter.Get(ctx, sc)
		must.NoError(t, err)
		must.True(t, ok)
		check.Equal(t, claim.Lease.Token(), rec.LeaseToken, "the dead holder's record, not taken over in the wait")

		retry, err := waiter.Run(ctx, sc, "fp", r.op)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeTakeover, retry.Outcome, "the client's retry takes the key over")
		check.Equal(t, 1, r.count())
	})
}

// A call with a wait answers in flight when its wait has run out, to the
// millisecond, while the holder lives; a call without one answers in
// flight at once, after its one claim. Either way the answer's
// Retry-After is the time until one millisecond past the holder's lease.
func TestAWaitRunsOutToTheMillisecondWhileItsHolderLives(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
	}{
		{"a wait of 2 s", 2 * time.Second},
		{"no wait", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBubble(t)
				ctx := context.Background()
				sc := scope(t, "lives-under-a-waiter")
				holder, _ := b.store(t, idem.WithLease(time.Minute, 2*time.Second))
				start := time.Now()
				claim, err := holder.Reserve(ctx, sc, "fp") // no deadline: its lease ends at 62 s
				must.NoError(t, err)
				check.Equal(t, start.Add(62*time.Second), claim.Lease.ExpiresAt())

				waiter, calls := b.store(t, idem.WithWait(tc.wait))
				var r runs
				got := <-goRun(ctx, waiter, sc, r.op)
				var inflight *idem.InFlightError
				must.ErrorAs(t, got.err, &inflight)
				check.Equal(t, idem.OutcomeInFlight, got.res.Outcome)
				check.Equal(t, 0, r.count())
				check.Equal(t, tc.wait, got.at.Sub(start), "answered when the wait ran out")
				check.Equal(t, 62*time.Second-tc.wait+time.Millisecond, inflight.RetryAfter)
				check.Equal(t, 1, calls.Get("PutItem"), "one claim: %s", calls)
				if tc.wait == 0 {
					check.Equal(t, 1, calls.Total(), "no poll without a wait: %s", calls)
				}
				must.NoError(t, claim.Lease.Complete(ctx, idem.Response{Body: []byte("held")}))
			})
		})
	}
}

// A duplicate that meets a live holder in the last millisecond of its
// lease is in flight for that millisecond, told so by its one claim; one
// millisecond later it takes the key over. Ten milliseconds before, it
// is told to come back in eleven. The same for every way that claims:
// Run's put, Transact's transaction, ExecuteBatch's.
func TestALeasesLastMillisecondIsTheHolders(t *testing.T) {
	for _, w := range []struct {
		name     string
		op       string // the one request of a claim
		call     func(s *idem.Store, env *testEnv, sc idem.Scope, r *runs) (idem.Outcome, error)
		takeover idem.Outcome
	}{
		{"Run", "PutItem", func(s *idem.Store, _ *testEnv, sc idem.Scope, r *runs) (idem.Outcome, error) {
			res, err := s.Run(context.Background(), sc, "fp", r.op)
			return res.Outcome, err
		}, idem.OutcomeTakeover},
		{"Transact", "TransactWriteItems", func(s *idem.Store, env *testEnv, sc idem.Scope, r *runs) (idem.Outcome, error) {
			res, err := s.Transact(context.Background(), sc, "fp", func(ctx context.Context) (idem.Effect, error) {
				resp, _ := r.op(ctx)
				return idem.Effect{Response: resp}, nil
			})
			return res.Outcome, err
		}, idem.OutcomeExecuted},
		{"ExecuteBatch", "TransactWriteItems", func(s *idem.Store, env *testEnv, sc idem.Scope, r *runs) (idem.Outcome, error) {
			res, err := s.ExecuteBatch(context.Background(), []idem.BatchItem{{Scope: sc, Fingerprint: "fp"}},
				func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
					_, _ = r.op(context.Background())
					return nil, nil
				})
			if err != nil {
				return "", err
			}
			return res[0].Outcome, res[0].Err
		}, idem.OutcomeExecuted},
	} {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBubble(t)
				ctx := context.Background()
				sc := scope(t, "last-millisecond")
				holder, _ := b.store(t, idem.WithLease(time.Minute, 2*time.Second))
				start := time.Now()
				claim, err := holder.Reserve(ctx, sc, "fp")
				must.NoError(t, err)
				leaseEnd := claim.Lease.ExpiresAt()
				check.Equal(t, start.Add(62*time.Second), leaseEnd)

				dup, calls := b.store(t)
				var r runs
				for _, before := range []time.Duration{10 * time.Millisecond, 0} {
					time.Sleep(time.Until(leaseEnd.Add(-before)))
					calls.Reset()
					outcome, err := w.call(dup, b.env, sc, &r)
					var inflight *idem.InFlightError
					must.ErrorAs(t, err, &inflight, "%v before the lease's end: %s", before, outcome)
					check.Equal(t, idem.OutcomeInFlight, outcome)
					check.Equal(t, before+time.Millisecond, inflight.RetryAfter, "%v before the lease's end", before)
					check.Equal(t, 1, calls.Get(w.op), "%v before the lease's end: one claim, decided by what it met: %s", before, calls)
					check.Equal(t, 1, calls.Total(), "%v before the lease's end: no read: %s", before, calls)
				}
				time.Sleep(time.Millisecond)
				r = runs{}
				outcome, err := w.call(dup, b.env, sc, &r)
				must.NoError(t, err, "1 ms after the lease's end")
				check.Equal(t, w.takeover, outcome, "1 ms after the lease's end")
				check.Equal(t, 1, r.count())
			})
		})
	}
}

// A claim that meets its record in a running transaction and follows it
// (a wait, a queue's redelivery) reads the record; one that has expired
// by then counts as absent, as the claim's condition would have it: the
// key runs again, rather than replay a response past its retention.
func TestAFollowedRecordThatHasExpiredRunsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		ctx := context.Background()
		sc := scope(t, "expired-behind-a-transaction")
		s, _ := b.store(t, idem.WithWait(time.Second), idem.WithRetention(time.Hour))
		var r runs
		_, err := s.Run(ctx, sc, "fp", r.op)
		must.NoError(t, err)
		time.Sleep(time.Hour + time.Second) // expires_at is the hour's last second
		b.srv.Inject(idemtest.OpPutItem, idemtest.Conflict, 1)
		res, err := s.Run(ctx, sc, "fp", r.op)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, res.Outcome)
		check.Equal(t, "run 2", string(res.Response.Body), "not the expired record's response")
		check.Equal(t, 2, r.count())
	})
}

// A record is never expired while its holder's lease lasts, however far
// the lease goes past the retention (a deadline an hour away, a
// retention of a minute): a duplicate before the lease's end is in
// flight, never a second execution.
func TestAHeldRecordDoesNotExpireUnderItsHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		sc := scope(t, "long-lease")
		s, _ := b.store(t, idem.WithLease(50*time.Second, 10*time.Second), idem.WithRetention(time.Minute))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start := time.Now()
		claim, err := s.Reserve(ctx, sc, "fp")
		must.NoError(t, err)
		check.Equal(t, start.Add(time.Hour+10*time.Second), claim.Lease.ExpiresAt())

		time.Sleep(30 * time.Minute)
		var r runs
		res, err := s.Run(context.Background(), sc, "fp", r.op)
		check.ErrorIs(t, err, idem.ErrInFlight, "the holder's lease has half an hour left: %s", res.Outcome)
		check.Equal(t, 0, r.count())
		must.NoError(t, claim.Lease.Complete(ctx, idem.Response{Body: []byte("held")}))
	})
}

// A claim whose key keeps changing hands under it (here, every claim
// meets a running transaction and the record it then reads is gone)
// claims again, at most as many times as the store's attempts allow, and
// then answers in flight: the client's retry will find it settled.
func TestAClaimThatCannotSettleMakesItsAttemptsThenIsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		sc := scope(t, "never-settles")
		const attempts = 3
		s, calls := b.store(t, idem.WithWait(time.Second), idem.WithConflictAttempts(attempts))
		b.srv.Inject(idemtest.OpPutItem, idemtest.Conflict, 100)
		defer b.srv.ClearFaults()
		var r runs
		res, err := s.Run(context.Background(), sc, "fp", r.op)
		var inflight *idem.InFlightError
		must.ErrorAs(t, err, &inflight)
		check.Equal(t, idem.OutcomeInFlight, res.Outcome)
		check.Equal(t, attempts, calls.Get("PutItem"), "%s", calls)
		check.Equal(t, 0, r.count())
	})
}

// A Transact call whose record another request's transaction holds:
// without a wait it is a duplicate of a request still committing,
// answered in flight at once, after one transaction; with one it tries
// again as long as its attempts last, and when the record is still held
// after them, it is in flight too, never a 503: the contention is on its
// own key.
func TestATransactionWhoseRecordStaysHeldIsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name         string
		wait         time.Duration
		transactions int
	}{
		{"no wait", 0, 1},
		{"a wait", time.Second, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBubble(t)
				sc := scope(t, "held-record")
				s, calls := b.store(t, idem.WithWait(tc.wait), idem.WithConflictAttempts(5))
				b.srv.Inject(idemtest.OpTransactWriteItems, idemtest.Conflict, 100)
				defer b.srv.ClearFaults()
				res, err := s.Transact(context.Background(), sc, "fp", effect(b.env))
				must.ErrorIs(t, err, idem.ErrInFlight)
				check.Equal(t, idem.OutcomeInFlight, res.Outcome)
				check.Equal(t, tc.transactions, calls.Get("TransactWriteItems"), "%s", calls)
				check.Equal(t, 0, countItems(t, b.env, b.env.Tables.Products))
			})
		})
	}
}

// interloper runs another call's transaction on the key just before this
// client's next TransactWriteItems.
type interloper struct {
	idem.API
	mu     sync.Mutex
	before func()
}

func (i *interloper) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	i.mu.Lock()
	f := i.before
	i.before = nil
	i.mu.Unlock()
	if f != nil {
		f()
	}
	return i.API.TransactWriteItems(ctx, in, opts...)
}

// A transaction whose every attempt failed (a 500, after the SDK's
// retries) may have landed, and the record says: only a record that
// carries this call's own token is its own. One that another call
// completed in the meantime is not, and the call fails (503); its
// client's retry replays the other's response.
func TestATransactionLandedOnlyIfTheRecordIsItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		ctx := context.Background()
		sc := scope(t, "completed-by-another")
		other, _ := b.store(t)
		client, _ := b.client()
		api := &interloper{API: client}
		s, err := idem.NewStore(api, b.env.Tables.Idempotency)
		must.NoError(t, err)
		var first idem.Result
		api.before = func() {
			var err error
			first, err = other.Transact(ctx, sc, "fp", effect(b.env))
			must.NoError(t, err)
			b.srv.Inject(idemtest.OpTransactWriteItems, idemtest.ServerError, 100)
		}
		res, err := s.Transact(ctx, sc, "fp", effect(b.env))
		b.srv.ClearFaults()
		check.True(t, idem.IsUnavailable(err), "the call's transaction never landed: %v", err)
		check.Equal(t, idem.OutcomeUnavailable, res.Outcome)
		check.Equal(t, 1, countItems(t, b.env, b.env.Tables.Products), "the other call's writes only")

		retry, err := s.Transact(ctx, sc, "fp", effect(b.env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, retry.Outcome)
		check.Equal(t, first.Response, retry.Response)
	})
}

// A batch whose keys' records another request's transaction holds on
// every attempt: each such key is a duplicate of a request still
// committing, in flight, never a 503, and nothing is written.
func TestABatchKeyWhoseRecordStaysHeldIsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		l := &ledger{env: b.env}
		s, _ := b.store(t, idem.WithConflictAttempts(3))
		b.srv.Inject(idemtest.OpTransactWriteItems, idemtest.Conflict, 100) // TransactionConflict on the first key's record
		defer b.srv.ClearFaults()
		res := l.run(t, s, []deposit{{key: "held-1", account: "a", cents: 1}, {key: "held-2", account: "a", cents: 2}})
		for i, r := range res {
			check.Equal(t, idem.OutcomeInFlight, r.Outcome, "key %d: %v", i, r.Err)
			check.ErrorIs(t, r.Err, idem.ErrInFlight, "key %d", i)
		}
		check.Equal(t, 0, l.balance(t, "a"))
	})
}

// A Transact call with a wait that meets a live Execute holder waits for
// its response and replays it, whether its transaction's claim failed on
// the holder's record or met the record in the holder's running commit
// (a second long here: longer than the call's transactions could wait
// out by trying again), in one transaction.
func TestATransactionWithAWaitAwaitsALiveHolder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		midCommit bool
	}{
		{"holder running", false},
		{"holder committing", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBubble(t)
				ctx := context.Background()
				sc := scope(t, "awaited-by-a-transaction")
				holder, _ := b.store(t)
				proceed := make(chan struct{})
				var first idem.Result
				done := make(chan error)
				go func() {
					var err error
					first, err = holder.Execute(ctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
						<-proceed
						return effect(b.env)(ctx)
					})
					done <- err
				}()
				synctest.Wait() // the holder has claimed the key
				if tc.midCommit {
					b.srv.InjectLatency(idemtest.OpTransactWriteItems, time.Second, 1)
					close(proceed)
					synctest.Wait() // its commit holds the record
				} else {
					time.AfterFunc(time.Second, func() { close(proceed) })
				}
				waiter, calls := b.store(t, idem.WithWait(5*time.Second), idem.WithConflictAttempts(3))
				res, err := waiter.Transact(ctx, sc, "fp", effect(b.env))
				must.NoError(t, err, "the holder completes within the wait")
				check.Equal(t, idem.OutcomeReplayed, res.Outcome)
				must.NoError(t, <-done)
				check.Equal(t, first.Response, res.Response, "the holder's response")
				check.Equal(t, 1, calls.Get("TransactWriteItems"), "one transaction, then the wait: %s", calls)
				check.Equal(t, 1, countItems(t, b.env, b.env.Tables.Products))
			})
		})
	}
}
