package idem_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// slowResponse is a Run operation that holds its key for d, then answers
// with a fresh id (a second execution would show as another).
func slowResponse(d time.Duration, started chan<- struct{}, runs *atomic.Int64) func(context.Context) (idem.Response, error) {
	return func(context.Context) (idem.Response, error) {
		runs.Add(1)
		close(started)
		time.Sleep(d)
		return created(uuid.NewString()), nil
	}
}

func mustNotRun(t *testing.T) func(context.Context) (idem.Response, error) {
	return func(context.Context) (idem.Response, error) {
		t.Error("a waiting duplicate ran the operation")
		return idem.Response{}, nil
	}
}

// TestWaitingDuplicateGetsTheWinnersResponse: with WithWait, a duplicate
// that arrives during a 1 s first call waits for it and replays its
// response, byte for byte, instead of ErrInFlight: on Run, Do, Execute,
// and Transact meeting a live Execute holder.
func TestWaitingDuplicateGetsTheWinnersResponse(t *testing.T) {
	t.Parallel()
	const hold = time.Second

	t.Run("run", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		holder := newStore(t, env)
		client, calls := env.NewClient(t)
		waiter, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithWait(3*time.Second))
		must.NoError(t, err)
		sc := scope(t, "run-wait")
		started := make(chan struct{})
		var runs atomic.Int64
		var first idem.Result
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			first, err = holder.Run(context.Background(), sc, "fp", slowResponse(hold, started, &runs))
			check.NoError(t, err)
		})
		<-started
		got, err := waiter.Run(context.Background(), sc, "fp", mustNotRun(t))
		wg.Wait()
		must.NoError(t, err, "no ErrInFlight")
		check.Equal(t, idem.OutcomeReplayed, got.Outcome)
		check.Equal(t, first.Response, got.Response, "the winner's response, byte for byte")
		check.EqualValues(t, 1, runs.Load())
		t.Logf("Run: the waiting duplicate made %d calls (%s)", calls.Total(), calls)
		check.Equal(t, 1, calls.Get("PutItem"), "one claim attempt")
		check.Zero(t, calls.Get("UpdateItem")+calls.Get("DeleteItem")+calls.Get("TransactWriteItems"), "a waiter writes nothing")
		// When it answered, and how many polls that took, are pinned in
		// fake time: TestWaitingDuplicateAnswersWhenTheWinnerCompletes.
	})

	t.Run("do", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		holder := newStore(t, env)
		waiter := newStore(t, env, idem.WithWait(3*time.Second))
		sc := scope(t, "do-wait")
		started := make(chan struct{})
		var wg sync.WaitGroup
		var first string
		wg.Go(func() {
			var err error
			first, _, err = idem.Do(context.Background(), holder, sc, "fp", func(context.Context) (string, error) {
				close(started)
				time.Sleep(hold)
				return uuid.NewString(), nil
			})
			check.NoError(t, err)
		})
		<-started
		got, outcome, err := idem.Do(context.Background(), waiter, sc, "fp", func(context.Context) (string, error) {
			t.Error("a waiting duplicate ran the operation")
			return "", nil
		})
		wg.Wait()
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, outcome)
		check.Equal(t, first, got)
	})

	t.Run("execute", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		holder := newStore(t, env)
		client, calls := env.NewClient(t)
		waiter, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithWait(3*time.Second))
		must.NoError(t, err)
		sc := scope(t, "execute-wait")
		started := make(chan struct{})
		var first idem.Result
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			first, err = holder.Execute(context.Background(), sc, "fp", func(ctx context.Context) (idem.Effect, error) {
				close(started)
				time.Sleep(hold)
				return effect(env)(ctx)
			})
			check.NoError(t, err)
		})
		<-started
		// Execute and Transact waiters, at once.
		var ex, tx idem.Result
		var exErr, txErr error
		var waiters sync.WaitGroup
		waiters.Go(func() {
			ex, exErr = waiter.Execute(context.Background(), sc, "fp", func(context.Context) (idem.Effect, error) {
				t.Error("a waiting Execute ran the operation")
				return idem.Effect{}, nil
			})
		})
		txWaiter := newStore(t, env, idem.WithWait(3*time.Second))
		waiters.Go(func() { tx, txErr = txWaiter.Transact(context.Background(), sc, "fp", effect(env)) })
		waiters.Wait()
		wg.Wait()
		must.NoError(t, exErr, "no ErrInFlight")
		must.NoError(t, txErr, "no ErrInFlight")
		check.Equal(t, idem.OutcomeReplayed, ex.Outcome)
		check.Equal(t, idem.OutcomeReplayed, tx.Outcome)
		check.Equal(t, first.Response, ex.Response)
		check.Equal(t, first.Response, tx.Response)
		check.Equal(t, 1, countItems(t, env, env.Tables.Products), "one effect")
		t.Logf("Execute: the waiting duplicate made %d calls (%s)", calls.Total(), calls)
		check.Equal(t, 1, calls.Get("PutItem"))
	})
}

// TestWaitingDuplicateAnswersWhenTheWinnerCompletes pins in fake time
// (testing/synctest, the strict store served in-process) what a wall
// clock cannot under load: a duplicate waiting up to 3 s for a 1 s
// holder answers with its replay at the first poll after the completion
// (the polls begin at 25 ms and double up to 500 ms), not at the end of
// its wait, and reads the record more than once to see it.
func TestWaitingDuplicateAnswersWhenTheWinnerCompletes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const hold, wait, maxPoll = time.Second, 3 * time.Second, 500 * time.Millisecond
		srv, store := inBubble(t)
		ctx := context.Background()
		holder, waiter := store(), store(idem.WithWait(wait))
		sc := scope(t, "fake-wait")
		started := make(chan struct{})
		var runs atomic.Int64
		var first idem.Result
		var completed time.Time
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			first, err = holder.Run(ctx, sc, "fp", slowResponse(hold, started, &runs))
			completed = time.Now()
			check.NoError(t, err)
		})
		<-started
		srv.ResetCalls()
		t0 := time.Now()
		got, err := waiter.Run(ctx, sc, "fp", mustNotRun(t))
		took := time.Since(t0)
		wg.Wait()
		must.NoError(t, err, "no ErrInFlight")
		check.Equal(t, idem.OutcomeReplayed, got.Outcome)
		check.Equal(t, first.Response, got.Response, "the winner's response, byte for byte")
		check.EqualValues(t, 1, runs.Load())
		check.GreaterOrEqual(t, took, hold, "not before the winner completed")
		check.LessOrEqual(t, t0.Add(took).Sub(completed), maxPoll, "at the first poll after the completion, not at the end of the wait (%v)", wait)
		check.GreaterOrEqual(t, srv.Calls(idemtest.OpGetItem), 2, "a capped poll cannot see a 1 s holder complete in one read")
		check.Equal(t, 1, srv.Calls(idemtest.OpPutItem), "one claim attempt, the waiter's")
	})
}

// inBubble is the strict store served in-process, for a test in a
// testing/synctest bubble, with its idempotency table, and a store on it
// made with opts.
func inBubble(t *testing.T) (*idemtest.Server, func(opts ...idem.Option) *idem.Store) {
	t.Helper()
	srv := idemtest.NewServer()
	t.Cleanup(srv.Close)
	db := srv.HandlerClient()
	must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
	return srv, func(opts ...idem.Option) *idem.Store {
		s, err := idem.NewStore(db, "idempotency", opts...)
		must.NoError(t, err)
		return s
	}
}

// TestWaitRunsOutWhileTheHolderLives: a waiter whose holder never
// completes (it hangs with a live lease) answers ErrInFlight once its
// maximum wait is over, not before; a context deadline shorter than the
// wait ends it earlier with an answer, not the deadline's error; another
// payload never waits. In fake time (testing/synctest), so that load
// cannot move the bounds; the conformance module's fake-time tests pin
// them to the millisecond.
func TestWaitRunsOutWhileTheHolderLives(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, store := inBubble(t)
		holder := store()
		sc := scope(t, "hung")
		claim, err := holder.Reserve(context.Background(), sc, "fp")
		must.NoError(t, err)
		must.NotNil(t, claim.Lease)

		const wait = 600 * time.Millisecond
		waiter := store(idem.WithWait(wait))
		t0 := time.Now()
		res, err := waiter.Run(context.Background(), sc, "fp", mustNotRun(t))
		took := time.Since(t0)
		var inflight *idem.InFlightError
		must.ErrorAs(t, err, &inflight)
		check.Equal(t, idem.OutcomeInFlight, res.Outcome)
		check.GreaterOrEqual(t, took, wait)
		check.Less(t, took, wait+time.Second, "not long after the wait ran out")
		check.Greater(t, inflight.RetryAfter, 50*time.Second, "the holder's lease still has most of its minute")

		// The caller's deadline comes first: the wait stops before it, and
		// answers.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		long := store(idem.WithWait(10 * time.Second))
		_, err = long.Run(ctx, sc, "fp", mustNotRun(t))
		must.ErrorIs(t, err, idem.ErrInFlight, "an answer, not the deadline's error")

		// Another payload never waits: key reuse on the claim's own answer.
		other := store(idem.WithWait(10 * time.Second))
		srv.ResetCalls()
		_, err = other.Run(context.Background(), sc, "other", mustNotRun(t))
		must.ErrorIs(t, err, idem.ErrKeyReuse)
		check.Equal(t, 1, srv.Calls(idemtest.OpPutItem))
		check.Zero(t, srv.Calls(idemtest.OpGetItem), "no poll")
	})
}

// TestWaitEndsInFlightWhenTheHolderDies: a holder whose lease ends without
// a completion leaves its waiter ErrInFlight as soon as the lease is seen
// to have ended, without taking the key over inside the wait; the
// client's retry takes it over. In fake time, as above.
func TestWaitEndsInFlightWhenTheHolderDies(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, store := inBubble(t)
		const lease = 400 * time.Millisecond
		holder := store(idem.WithLease(lease, 0))
		sc := scope(t, "dies")
		t0 := time.Now()
		claim, err := holder.Reserve(context.Background(), sc, "fp") // reserves, then "dies"
		must.NoError(t, err)
		must.NotNil(t, claim.Lease)

		waiter := store(idem.WithWait(5 * time.Second))
		_, err = waiter.Run(context.Background(), sc, "fp", mustNotRun(t))
		took := time.Since(t0)
		must.ErrorIs(t, err, idem.ErrInFlight)
		check.GreaterOrEqual(t, took, lease, "the holder was live until its lease ended")
		check.LessOrEqual(t, took, lease+500*time.Millisecond, "the wait ended at the first poll after the holder died, not at its maximum")
		rec, ok, err := waiter.Get(context.Background(), sc)
		must.NoError(t, err)
		must.True(t, ok)
		check.Equal(t, idem.StatusInProgress, rec.Status)
		check.Equal(t, claim.Lease.Token(), rec.LeaseToken, "not taken over inside the wait")

		// The client's retry takes the key over and runs.
		var runs atomic.Int64
		res, err := waiter.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
			runs.Add(1)
			return created("retry"), nil
		})
		must.NoError(t, err)
		check.Contains(t, []idem.Outcome{idem.OutcomeTakeover, idem.OutcomeExecuted}, res.Outcome)
		check.EqualValues(t, 1, runs.Load())
	})
}

// TestWithoutWaitInFlightAtOnce: without WithWait (or with a call's wait
// turned off) a duplicate is ErrInFlight at once, with one claim attempt;
// a call's own wait turns waiting on for a store without one.
func TestWithoutWaitInFlightAtOnce(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	holder := newStore(t, env)
	sc := scope(t, "no-wait")
	claim, err := holder.Reserve(context.Background(), sc, "fp")
	must.NoError(t, err)
	must.NotNil(t, claim.Lease)

	for name, tc := range map[string]struct {
		opts []idem.Option
		call []idem.CallOption
	}{
		"default":        {nil, nil},
		"call turns off": {[]idem.Option{idem.WithWait(5 * time.Second)}, []idem.CallOption{idem.CallWait(0)}},
	} {
		client, calls := env.NewClient(t)
		s, err := idem.NewStore(client, env.Tables.Idempotency, tc.opts...)
		must.NoError(t, err)
		ctx := context.Background()
		res, err := s.Run(ctx, sc, "fp", mustNotRun(t), tc.call...)
		must.ErrorIs(t, err, idem.ErrInFlight, name)
		check.Equal(t, idem.OutcomeInFlight, res.Outcome, name)
		check.Equal(t, 1, calls.Get("PutItem"), name)
		check.LessOrEqual(t, calls.Total(), 2, "%s: %s", name, calls)
		res, err = s.Transact(ctx, sc, "fp", effect(env), tc.call...)
		must.ErrorIs(t, err, idem.ErrInFlight, name)
		check.Equal(t, idem.OutcomeInFlight, res.Outcome, name)
	}

	// A call's own wait, on a store without one.
	s := newStore(t, env)
	t0 := time.Now()
	_, err = s.Run(context.Background(), sc, "fp", mustNotRun(t), idem.CallWait(300*time.Millisecond))
	must.ErrorIs(t, err, idem.ErrInFlight)
	check.GreaterOrEqual(t, time.Since(t0), 300*time.Millisecond, "the call waited")

	_, err = idem.NewStore(env.Client, env.Tables.Idempotency, idem.WithWait(-time.Second))
	must.Error(t, err, "a negative wait is refused")
}

// TestConcurrentWaitingDuplicatesRunOnce: 32 concurrent duplicates with
// waiting on: one runs the effect, and all 32 answer with its response.
func TestConcurrentWaitingDuplicatesRunOnce(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.concurrent(t)
	client, calls := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithWait(5*time.Second))
	must.NoError(t, err)
	sc := scope(t, "herd")
	const n = 32
	var runs atomic.Int64
	results := make([]idem.Result, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = s.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
				runs.Add(1)
				time.Sleep(300 * time.Millisecond)
				return created(uuid.NewString()), nil
			})
		})
	}
	close(start)
	wg.Wait()
	must.EqualValues(t, 1, runs.Load(), "exactly one effect")
	outcomes := map[idem.Outcome]int{}
	for i := range n {
		must.NoError(t, errs[i], "caller %d", i)
		outcomes[results[i].Outcome]++
		check.Equal(t, results[0].Response, results[i].Response, "caller %d has the winner's response", i)
	}
	check.Equal(t, map[idem.Outcome]int{idem.OutcomeExecuted: 1, idem.OutcomeReplayed: n - 1}, outcomes)
	t.Logf("%d callers, %d calls in all (%s), %.1f per waiting duplicate", n, calls.Total(), calls, float64(calls.Total()-2)/float64(n-1))
}
