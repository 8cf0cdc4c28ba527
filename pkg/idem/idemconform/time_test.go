package idemconform

// The boundaries in time that the store's correctness rests on, each to
// the millisecond (or, for retention, to the second), in a synctest
// bubble: time.Sleep moves the fake clock exactly where a test puts it,
// and a call into the store takes no fake time at all.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// bench is one bubble's store: the strict store served in-process, its
// table, and a client that logs each request's operation and time.
type bench struct {
	t      *testing.T
	server *idemtest.Server
	db     *dynamodb.Client
	mu     sync.Mutex
	log    []request
	// deaf holds every renewal on its way to the store for that long,
	// whatever its context says (a connection that does not notice the
	// cancellation), then fails it.
	deaf time.Duration
	// refuse answers every completion (Run's fenced UpdateItem) with
	// ThrottlingException.
	refuse bool
}

type request struct {
	op string
	at time.Time
}

func newBench(t *testing.T) *bench {
	b := &bench{t: t, server: idemtest.NewServer()}
	b.db = b.server.HandlerClient(func(o *dynamodb.Options) {
		o.HTTPClient = logged{b, o.HTTPClient}
	})
	if err := idemtable.Create(context.Background(), b.db, idemTable, idemtable.Layout{}); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.log = nil
	b.mu.Unlock()
	return b
}

type logged struct {
	b     *bench
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (l logged) Do(r *http.Request) (*http.Response, error) {
	target := r.Header.Get("X-Amz-Target")
	l.b.mu.Lock()
	l.b.log = append(l.b.log, request{op: target[len("DynamoDB_20120810."):], at: time.Now()})
	deaf, refuse := l.b.deaf, l.b.refuse
	l.b.mu.Unlock()
	if (deaf > 0 || refuse) && strings.HasSuffix(target, ".UpdateItem") {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		switch kindOf(target, body) {
		case renewal:
			if deaf > 0 {
				time.Sleep(deaf)
				return nil, errDown
			}
		case completion:
			if refuse {
				return throttled(r), nil
			}
		}
	}
	return l.inner.Do(r)
}

func (b *bench) requests(op string) []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var at []time.Time
	for _, r := range b.log {
		if r.op == op {
			at = append(at, r.at)
		}
	}
	return at
}

func (b *bench) store(opts ...idem.Option) *idem.Store {
	s, err := idem.NewStore(b.db, idemTable, opts...)
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

func timeScope(t *testing.T) idem.Scope {
	sc, err := idem.NewScope(operation, "alice", "k0")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// died is a holder's process dying in its operation: the key stays held
// until its lease ends.
type died struct{}

// holdAndDie claims sc and dies holding it, on a context with the given
// deadline (none if zero).
func holdAndDie(t *testing.T, s *idem.Store, sc idem.Scope, deadline time.Duration) {
	t.Helper()
	ctx := context.Background()
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != (died{}) {
			t.Fatalf("the holder: %v", p)
		}
	}()
	_, _ = s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { panic(died{}) })
}

// created is a 201's status.
const created = 201

// ran answers with the time it ran at.
func ran(context.Context) (idem.Response, error) {
	return idem.Response{Status: created, Body: []byte(time.Now().Format(time.RFC3339Nano))}, nil
}

// untilStopped is an operation that runs until its context ends, and
// then says when and why in stopped and cause, or for a minute.
func untilStopped(stopped *time.Time, cause *error) func(context.Context) (idem.Response, error) {
	return func(ctx context.Context) (idem.Response, error) {
		select {
		case <-ctx.Done():
			*stopped, *cause = time.Now(), context.Cause(ctx)
			return idem.Response{}, *cause
		case <-time.After(time.Minute):
			return ran(ctx)
		}
	}
}

// A dead holder's key is in flight until its lease ends, at the deadline
// plus the margin (without a deadline, the lease plus the margin), and is
// taken over one millisecond after: lease_expires_at < now, in
// milliseconds.
func TestLeaseEndsToTheMillisecond(t *testing.T) {
	for _, tc := range []struct {
		name            string
		deadline        time.Duration // the holder's; 0 for none
		lease, margin   time.Duration
		wantLeaseExpiry time.Duration // after the claim
	}{
		{"deadline plus margin", 10 * time.Second, time.Minute, 2 * time.Second, 12 * time.Second},
		{"deadline, no margin", 10 * time.Second, time.Minute, 0, 10 * time.Second},
		{"no deadline: lease plus margin", 0, 6 * time.Second, time.Second, 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBench(t)
				s := b.store(idem.WithLease(tc.lease, tc.margin))
				sc := timeScope(t)
				start := time.Now()
				holdAndDie(t, s, sc, tc.deadline)

				rec, err := idemadmin.Table{DB: b.db, Name: idemTable}.Lookup(context.Background(), sc)
				if err != nil || !rec.LeaseExpiresAt.Equal(start.Add(tc.wantLeaseExpiry)) {
					t.Fatalf("lease expires at %v (%v), want %v", rec.LeaseExpiresAt, err, start.Add(tc.wantLeaseExpiry))
				}
				for _, at := range []time.Duration{-time.Millisecond, 0} {
					time.Sleep(time.Until(start.Add(tc.wantLeaseExpiry + at)))
					res, err := s.Run(context.Background(), sc, "fp", ran)
					var inflight *idem.InFlightError
					if !errors.As(err, &inflight) || res.Outcome != idem.OutcomeInFlight {
						t.Fatalf("at the lease's end %+v: %s, %v; want in flight", at, res.Outcome, err)
					}
					if want := time.Millisecond - at; inflight.RetryAfter != want {
						t.Errorf("at the lease's end %+v: Retry-After %v, want %v (the first millisecond it can be taken over)", at, inflight.RetryAfter, want)
					}
				}
				time.Sleep(time.Millisecond)
				res, err := s.Run(context.Background(), sc, "fp", ran)
				if err != nil || res.Outcome != idem.OutcomeTakeover {
					t.Fatalf("1 ms after the lease's end: %s, %v; want a takeover", res.Outcome, err)
				}
			})
		})
	}
}

// Without a deadline, a live holder's lease is renewed every third of
// the lease, from the time of the renewal, so a holder slower than its
// lease is never taken over; its effect runs once.
func TestHeartbeatRenewsEveryThirdOfTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		const lease, margin = 3 * time.Second, 500 * time.Millisecond
		s := b.store(idem.WithLease(lease, margin))
		sc := timeScope(t)
		start := time.Now()
		effects := 0
		done := make(chan error)
		go func() {
			_, err := s.Run(context.Background(), sc, "fp", func(ctx context.Context) (idem.Response, error) {
				select {
				case <-time.After(9500 * time.Millisecond): // more than three leases
				case <-ctx.Done():
					return idem.Response{}, context.Cause(ctx)
				}
				effects++
				return ran(ctx)
			})
			done <- err
		}()
		leaseEnd := func() time.Time {
			rec, err := idemadmin.Table{DB: b.db, Name: idemTable}.Lookup(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			return rec.LeaseExpiresAt
		}
		for k := range 9 {
			renewal := start.Add(time.Duration(k+1) * lease / 3)
			time.Sleep(time.Until(renewal.Add(-time.Millisecond)))
			synctest.Wait()
			if got, want := leaseEnd(), renewal.Add(-lease/3+lease+margin); !got.Equal(want) {
				t.Fatalf("1 ms before renewal %d the lease ends at %v, want %v", k+1, got.Sub(start), want.Sub(start))
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if got, want := leaseEnd(), renewal.Add(lease+margin); !got.Equal(want) {
				t.Fatalf("at renewal %d the lease ends at %v, want %v", k+1, got.Sub(start), want.Sub(start))
			}
			if k == 4 { // past the first lease: a duplicate finds the holder alive
				if res, err := s.Run(context.Background(), sc, "fp", ran); !errors.Is(err, idem.ErrInFlight) {
					t.Fatalf("a duplicate at %v: %s, %v; want in flight", time.Since(start), res.Outcome, err)
				}
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("the slow holder: %v", err)
		}
		if got := len(b.requests("UpdateItem")); got != 10 { // 9 renewals and the completion
			t.Errorf("%d UpdateItem requests, want 9 renewals and the completion", got)
		}
		if res, err := s.Run(context.Background(), sc, "fp", ran); err != nil || res.Outcome != idem.OutcomeReplayed || effects != 1 {
			t.Fatalf("after the holder: %s, %v, %d effects; want a replay of the one effect", res.Outcome, err, effects)
		}
	})
}

// Without a deadline, a holder whose lease cannot be renewed (every
// renewal is stuck on its way to the store for two leases, deaf to its
// own timeout) is told so through its context by the time its lease ends
// less the margin, whatever the renewal in flight is doing: a duplicate
// can take the key over a margin later, and the old holder must have
// stopped by then. (The heartbeat's watchdog does it: the renewal's own
// timeout would, were the renewal to honour it.)
func TestHolderStopsWhenItsLeaseCannotBeRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		const lease, margin = 3 * time.Second, 500 * time.Millisecond
		b.deaf = 2 * lease
		s := b.store(idem.WithLease(lease, margin))
		sc := timeScope(t)
		start := time.Now()
		var stopped time.Time
		var cause error
		_, err := s.Run(context.Background(), sc, "fp", untilStopped(&stopped, &cause))
		if !errors.Is(cause, idem.ErrLeaseLost) || err == nil {
			t.Fatalf("the holder's context ended with %v (Run: %v), want a cause wrapping idem.ErrLeaseLost", cause, err)
		}
		if limit := start.Add(lease); stopped.After(limit) {
			t.Errorf("the holder was stopped %v after its claim, past its lease's end less the margin (%v): a renewal in flight kept it alive while its key could be taken over at %v",
				stopped.Sub(start), limit.Sub(start), (lease + margin + time.Millisecond))
		}
	})
}

// The watchdog follows the lease: a holder whose first renewal landed
// (at a third of the lease) and whose later renewals are stuck is
// stopped at the renewed lease's end less the margin, to the
// millisecond, not at the first lease's end nor when a stuck renewal
// gives up.
func TestHolderStopsAtItsRenewedLeasesEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		const lease, margin = 3 * time.Second, 500 * time.Millisecond
		s := b.store(idem.WithLease(lease, margin))
		sc := timeScope(t)
		start := time.Now()
		renewed := start.Add(lease / 3)
		go func() {
			time.Sleep(time.Until(renewed.Add(time.Millisecond))) // the first renewal has landed
			b.mu.Lock()
			b.deaf = 2 * lease
			b.mu.Unlock()
		}()
		var stopped time.Time
		var cause error
		_, err := s.Run(context.Background(), sc, "fp", untilStopped(&stopped, &cause))
		if !errors.Is(cause, idem.ErrLeaseLost) || err == nil {
			t.Fatalf("the holder's context ended with %v (Run: %v), want a cause wrapping idem.ErrLeaseLost", cause, err)
		}
		if want := renewed.Add(lease); !stopped.Equal(want) {
			t.Errorf("the holder was stopped %v after its claim, want %v: the end of the lease its renewal at %v gave it (%v), less the margin",
				stopped.Sub(start), want.Sub(start), renewed.Sub(start), renewed.Add(lease+margin).Sub(start))
		}
	})
}

// A holder whose key another caller holds (an operator evicted it, and
// a new call claimed it) learns so at its next renewal, which the fence
// refuses: its operation is cancelled there and then, with a cause
// wrapping idem.ErrLeaseLost, and the new holder's record is untouched.
func TestHolderStopsAtTheRenewalThatFindsItsKeyTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		const lease, margin = 3 * time.Second, 500 * time.Millisecond
		s := b.store(idem.WithLease(lease, margin))
		sc := timeScope(t)
		start := time.Now()
		admin := idemadmin.Table{DB: b.db, Name: idemTable}
		taken := make(chan time.Time)
		newHolder := make(chan error)
		release := make(chan struct{})
		go func() {
			time.Sleep(1500 * time.Millisecond) // after the first renewal, at 1 s
			if _, err := admin.Evict(context.Background(), sc, idemadmin.EvictOptions{Force: true}); err != nil {
				t.Error(err)
			}
			go func() {
				_, err := s.Run(context.Background(), sc, "fp", func(ctx context.Context) (idem.Response, error) {
					<-release
					return ran(ctx)
				})
				newHolder <- err
			}()
			synctest.Wait()
			rec, err := admin.Lookup(context.Background(), sc)
			if err != nil {
				t.Error(err)
			}
			taken <- rec.LeaseExpiresAt
		}()
		var stopped time.Time
		var cause error
		_, err := s.Run(context.Background(), sc, "fp", untilStopped(&stopped, &cause))
		if !errors.Is(cause, idem.ErrLeaseLost) || !errors.Is(err, idem.ErrLeaseLost) {
			t.Errorf("the old holder's context ended with %v (Run: %v), want a cause wrapping idem.ErrLeaseLost", cause, err)
		}
		if want := start.Add(2 * lease / 3); !stopped.Equal(want) {
			t.Errorf("the old holder was stopped %v after its claim, want %v: its second renewal, the first after its key was taken",
				stopped.Sub(start), want.Sub(start))
		}
		newLease := <-taken
		rec, err := admin.Lookup(context.Background(), sc)
		if err != nil || !rec.LeaseExpiresAt.Equal(newLease) {
			t.Errorf("the new holder's lease ends at %v (%v), want %v: the old holder's renewal must not touch it", rec.LeaseExpiresAt.Sub(start), err, newLease.Sub(start))
		}
		close(release)
		if err := <-newHolder; err != nil {
			t.Errorf("the new holder: %v", err)
		}
	})
}

// A waiting duplicate polls the record until the wait runs out, never past
// 100 ms before its context's deadline, and answers in flight by then.
func TestWaitStopsBeforeTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		s := b.store(idem.WithWait(time.Minute))
		sc := timeScope(t)
		release := make(chan struct{})
		holder := make(chan error)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := s.Run(ctx, sc, "fp", func(ctx context.Context) (idem.Response, error) {
				<-release
				return ran(ctx)
			})
			holder <- err
		}()
		synctest.Wait()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		deadline, _ := ctx.Deadline()
		res, err := s.Run(ctx, sc, "fp", ran)
		if !errors.Is(err, idem.ErrInFlight) {
			t.Fatalf("the waiter: %s, %v; want in flight once its wait is cut short", res.Outcome, err)
		}
		if answered := time.Now(); answered.After(deadline.Add(-100 * time.Millisecond)) {
			t.Errorf("answered at %v, less than 100 ms before the deadline at %v", answered.Sub(start), deadline.Sub(start))
		}
		polls := 0
		for _, at := range b.requests("GetItem") {
			if at.Before(start) {
				continue
			}
			polls++
			if at.After(deadline.Add(-100 * time.Millisecond)) {
				t.Errorf("a poll at %v, less than 100 ms before the deadline at %v", at.Sub(start), deadline.Sub(start))
			}
		}
		if polls < 4 {
			t.Errorf("%d polls in 1.9 s, want the wait to keep polling (25 ms doubling to 500 ms)", polls)
		}
		close(release)
		if err := <-holder; err != nil {
			t.Fatal(err)
		}
	})
}

// A holder that outlives its lease (its effect ignores its context's
// deadline) is taken over one millisecond after the lease ends; what it
// does after that is fenced by its lease: its commit never lands, and its
// release cannot delete the new holder's claim. The new holder's effect
// lands, once.
func TestTakeoverFencesTheOldHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		if _, err := b.db.CreateTable(context.Background(), idemtable.Input(effectsTable, idemtable.Layout{})); err != nil {
			t.Fatal(err)
		}
		w := &world{effects: effectsTable, admin: b.db}
		const deadline, margin = 5 * time.Second, time.Second
		s := b.store(idem.WithLease(time.Minute, margin))
		sc := timeScope(t)
		start := time.Now()
		effect := func(exec int, work time.Duration) func(context.Context) (idem.Effect, error) {
			return func(context.Context) (idem.Effect, error) {
				time.Sleep(work) // it ignores its context
				r := Reply{Caller: "alice", Key: "k0", Variant: "a", Exec: exec}
				return idem.Effect{Response: r.Response(), Writes: []types.TransactWriteItem{w.countWrite("alice|k0", exec)}}, nil
			}
		}
		old := make(chan idem.Result)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			res, err := s.Execute(ctx, sc, "fp", effect(1, 8*time.Second))
			if err == nil {
				t.Error("the old holder succeeded after its lease was taken over")
			}
			old <- res
		}()
		time.Sleep(time.Until(start.Add(deadline + margin)))
		if _, err := s.Execute(context.Background(), sc, "fp", effect(2, 0)); !errors.Is(err, idem.ErrInFlight) {
			t.Fatalf("at the lease's end: %v, want in flight", err)
		}
		time.Sleep(time.Millisecond)
		taken := make(chan idem.Result)
		go func() {
			// Still running when the old holder gives up, at 8 s.
			res, err := s.Execute(context.Background(), sc, "fp", effect(3, 4*time.Second))
			if err != nil {
				t.Errorf("the new holder: %v", err)
			}
			taken <- res
		}()
		if res := <-old; res.Outcome != idem.OutcomeLeaseLost {
			// Its commit, past its deadline, fails; its release, fenced,
			// finds the key taken over and deletes nothing.
			t.Fatalf("the old holder, after its lease was taken over: %s; want lease_lost (its release finds another holder)", res.Outcome)
		}
		if res := <-taken; res.Outcome != idem.OutcomeTakeover {
			t.Fatalf("1 ms after the lease's end: %s, want a takeover", res.Outcome)
		}
		n, execs, err := w.committed("alice|k0")
		if err != nil || n != 1 || len(execs) != 1 || execs[0] != "3" {
			t.Fatalf("effects: %d %v (%v); want the new holder's only", n, execs, err)
		}
		res, err := s.Execute(context.Background(), sc, "fp", effect(4, 0))
		if r, ok := replyIn(ResponseAnswer(res.Response)); err != nil || res.Outcome != idem.OutcomeReplayed || !ok || r.Exec != 3 {
			t.Fatalf("a retry: %s %q, %v; want the new holder's answer replayed", res.Outcome, res.Response.Body, err)
		}
	})
}

// A completed record replays until its expires_at (the retention after
// its completion, in whole seconds), to the end of that second, and the
// key executes again one second later: with the cache too.
func TestRetentionToTheSecond(t *testing.T) {
	for _, mode := range []string{"plain", "cache"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBench(t)
				const retention = time.Hour
				opts := []idem.Option{idem.WithRetention(retention)}
				if mode == "cache" {
					opts = append(opts, idem.WithCache(16, 0))
				}
				s := b.store(opts...)
				sc := timeScope(t)
				time.Sleep(1500 * time.Millisecond) // mid-second: expires_at is whole seconds
				completed := time.Now()
				first, err := s.Run(context.Background(), sc, "fp", ran)
				if err != nil {
					t.Fatal(err)
				}
				expires := time.Unix(completed.Add(retention).Unix(), 0)
				rec, err := idemadmin.Table{DB: b.db, Name: idemTable}.Lookup(context.Background(), sc)
				if err != nil || !rec.ExpiresAt.Equal(expires) {
					t.Fatalf("expires_at %v (%v), want %v", rec.ExpiresAt, err, expires)
				}
				time.Sleep(time.Until(expires.Add(999 * time.Millisecond)))
				res, err := s.Run(context.Background(), sc, "fp", ran)
				if err != nil || res.Outcome != idem.OutcomeReplayed || string(res.Response.Body) != string(first.Response.Body) {
					t.Fatalf("in the last millisecond of expires_at's second: %s %q, %v; want a replay of %q", res.Outcome, res.Response.Body, err, first.Response.Body)
				}
				time.Sleep(time.Millisecond)
				res, err = s.Run(context.Background(), sc, "fp", ran)
				if err != nil || res.Outcome != idem.OutcomeExecuted {
					t.Fatalf("the second after expires_at: %s, %v; want the key to execute again", res.Outcome, err)
				}
			})
		})
	}
}

// idemadmin.Evict without force trusts its own clock only to within
// idemadmin.ClockSkew (5 s): a lease counts as ended 5 s after it ended,
// to the millisecond; a completed record goes at once.
func TestEvictAllowsFiveSecondsOfClockSkew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		s := b.store(idem.WithLease(time.Minute, time.Second))
		sc := timeScope(t)
		start := time.Now()
		holdAndDie(t, s, sc, 10*time.Second)
		leaseEnd := start.Add(11 * time.Second)
		ctx := context.Background()
		admin := idemadmin.Table{DB: b.db, Name: idemTable}
		for _, at := range []time.Duration{0, idemadmin.ClockSkew - time.Millisecond, idemadmin.ClockSkew} {
			time.Sleep(time.Until(leaseEnd.Add(at)))
			if _, err := admin.Evict(ctx, sc, idemadmin.EvictOptions{}); !errors.Is(err, idemadmin.ErrLiveHolder) {
				t.Fatalf("%v after the lease's end: %v, want the holder kept (ErrLiveHolder)", at, err)
			}
		}
		time.Sleep(time.Millisecond)
		if _, err := admin.Evict(ctx, sc, idemadmin.EvictOptions{}); err != nil {
			t.Fatalf("5 s and 1 ms after the lease's end: %v, want it evicted", err)
		}
		if _, err := s.Run(ctx, sc, "fp", ran); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Evict(ctx, sc, idemadmin.EvictOptions{}); err != nil {
			t.Fatalf("a completed record: %v, want it evicted at once", err)
		}
	})
}

// A dead holder's key, once its lease has ended, is taken over only by a
// call with the holder's payload: another payload is key reuse, for as
// long as the record lives, whichever way in claims it (the claim's
// condition and the reading of the record that beat it), and nothing of
// it runs or commits. The histories the cells check cannot show this:
// there, another payload completing first is a legal order.
func TestTakeoverByAnotherPayloadIsKeyReuse(t *testing.T) {
	type attempt func(s *idem.Store, sc idem.Scope, fp string, ran *int) (idem.Outcome, error)
	effect := func(ran *int) func(context.Context) (idem.Effect, error) {
		return func(context.Context) (idem.Effect, error) {
			*ran++
			return idem.Effect{Response: idem.Response{Status: created}}, nil
		}
	}
	for _, tc := range []struct {
		name      string
		call      attempt
		takeover  idem.Outcome // what the holder's own payload gets
		ranBefore bool         // the operation runs before the claim (Transact, ExecuteBatch)
	}{
		{"Execute", func(s *idem.Store, sc idem.Scope, fp string, ran *int) (idem.Outcome, error) {
			res, err := s.Execute(context.Background(), sc, fp, effect(ran))
			return res.Outcome, err
		}, idem.OutcomeTakeover, false},
		{"Run", func(s *idem.Store, sc idem.Scope, fp string, ran *int) (idem.Outcome, error) {
			res, err := s.Run(context.Background(), sc, fp, func(ctx context.Context) (idem.Response, error) {
				*ran++
				return ran2(ctx)
			})
			return res.Outcome, err
		}, idem.OutcomeTakeover, false},
		{"Transact", func(s *idem.Store, sc idem.Scope, fp string, ran *int) (idem.Outcome, error) {
			res, err := s.Transact(context.Background(), sc, fp, effect(ran))
			return res.Outcome, err
		}, idem.OutcomeExecuted, true},
		{"ExecuteBatch", func(s *idem.Store, sc idem.Scope, fp string, ran *int) (idem.Outcome, error) {
			res, err := s.ExecuteBatch(context.Background(), []idem.BatchItem{{Scope: sc, Fingerprint: fp, Response: idem.Response{Status: created}}},
				func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { *ran++; return nil, nil })
			if err != nil {
				return "", err
			}
			return res[0].Outcome, res[0].Err
		}, idem.OutcomeExecuted, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBench(t)
				s := b.store(idem.WithLease(time.Minute, time.Second))
				sc := timeScope(t)
				start := time.Now()
				holdAndDie(t, s, sc, 10*time.Second)
				held, err := idemadmin.Table{DB: b.db, Name: idemTable}.Lookup(context.Background(), sc)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Until(held.LeaseExpiresAt.Add(time.Millisecond)))

				ran := 0
				o, err := tc.call(s, sc, "another payload", &ran)
				if !errors.Is(err, idem.ErrKeyReuse) || o != idem.OutcomeKeyReuse {
					t.Fatalf("another payload, 1 ms after the dead holder's lease ended (%v after its claim): %s, %v; want key reuse", time.Since(start), o, err)
				}
				if !tc.ranBefore && ran != 0 {
					t.Errorf("another payload's operation ran %d times; want none", ran)
				}
				rec, err := idemadmin.Table{DB: b.db, Name: idemTable}.Lookup(context.Background(), sc)
				if err != nil || rec.Status != "IN_PROGRESS" || rec.Fingerprint != "fp" || !rec.LeaseExpiresAt.Equal(held.LeaseExpiresAt) {
					t.Fatalf("the record after another payload's call: %+v (%v); want the dead holder's, untouched", rec, err)
				}

				ran = 0
				o, err = tc.call(s, sc, "fp", &ran)
				if err != nil || o != tc.takeover || ran != 1 {
					t.Fatalf("the holder's own payload: %s, %v, ran %d times; want %s, once", o, err, ran, tc.takeover)
				}
			})
		})
	}
}

// ran2 is ran, for a caller that counts its runs.
func ran2(ctx context.Context) (idem.Response, error) { return ran(ctx) }

// Under a deadline, a completion the store refuses on every attempt is
// tried again only until a margin before the deadline, not until the
// lease ends (the deadline plus the margin): Run answers in time with the
// effect's response and idem.ErrNotRecorded, so its source is told the
// delivery is done; a Lambda invocation that ran into its deadline would
// be delivered again once the lease ended, and its effect would run
// again. The key stays held until the lease ends, and is taken over after.
func TestRunAnswersBeforeItsDeadlineWhenItsCompletionIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t)
		b.refuse = true
		const deadline, margin = 10 * time.Second, time.Second
		s := b.store(idem.WithLease(time.Minute, margin))
		sc := timeScope(t)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		res, err := s.Run(ctx, sc, "fp", ran)
		answered := time.Since(start)
		if !errors.Is(err, idem.ErrNotRecorded) || res.Outcome != idem.OutcomeNotRecorded || res.Response.Status != created {
			t.Fatalf("a completion refused on every attempt: %s %d, %v; want not recorded, with the effect's response", res.Outcome, res.Response.Status, err)
		}
		if answered > deadline-margin {
			t.Errorf("answered %v after the call, past its deadline (%v) less the margin: a Lambda invocation would have timed out, and its source would deliver it again", answered, deadline)
		}
		if got := len(b.requests("UpdateItem")); got < 2 {
			t.Errorf("%d completion attempts, want the completion tried again while the time lasts", got)
		}
		b.mu.Lock()
		b.refuse = false
		b.mu.Unlock()
		time.Sleep(time.Until(start.Add(deadline + margin)))
		if res, err := s.Run(context.Background(), sc, "fp", ran); !errors.Is(err, idem.ErrInFlight) {
			t.Fatalf("at the lease's end: %s, %v; want the key still held", res.Outcome, err)
		}
		time.Sleep(time.Millisecond)
		if res, err := s.Run(context.Background(), sc, "fp", ran); err != nil || res.Outcome != idem.OutcomeTakeover {
			t.Fatalf("1 ms after the lease's end: %s, %v; want a takeover (Run's window)", res.Outcome, err)
		}
	})
}
