package idem_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem"
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
		t0 := time.Now()
		got, err := waiter.Run(context.Background(), sc, "fp", mustNotRun(t))
		took := time.Since(t0)
		wg.Wait()
		must.NoError(t, err, "no ErrInFlight")
		check.Equal(t, idem.OutcomeReplayed, got.Outcome)
		check.Equal(t, first.Response, got.Response, "the winner's response, byte for byte")
		check.EqualValues(t, 1, runs.Load())
		check.Less(t, took, 3*time.Second, "answered when the winner completed, not at the end of the wait")
		t.Logf("Run: the waiting duplicate took %v and %d calls (%s)", took.Round(time.Millisecond), calls.Total(), calls)
		check.Equal(t, 1, calls.Get("PutItem"), "one claim attempt")
		check.Zero(t, calls.Get("UpdateItem")+calls.Get("DeleteItem")+calls.Get("TransactWriteItems"), "a waiter writes nothing")
		// What the wait costs (one consistent GetItem per poll) depends
		// on when the polls fall: BenchmarkWaitingDuplicate reports it.
		check.GreaterOrEqual(t, calls.Get("GetItem"), 2, "a capped poll cannot see a 1 s holder complete in one read")
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
		var exTook time.Duration
		var waiters sync.WaitGroup
		waiters.Go(func() {
			t0 := time.Now()
			ex, exErr = waiter.Execute(context.Background(), sc, "fp", func(context.Context) (idem.Effect, error) {
				t.Error("a waiting Execute ran the operation")
				return idem.Effect{}, nil
			})
			exTook = time.Since(t0)
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
		t.Logf("Execute: the waiting duplicate took %v and %d calls (%s)", exTook.Round(time.Millisecond), calls.Total(), calls)
		check.Equal(t, 1, calls.Get("PutItem"))
	})
}

// TestWaitRunsOutWhileTheHolderLives: a waiter whose holder never
// completes (it hangs with a live lease) answers ErrInFlight once its
// maximum wait is over, not before; a context deadline shorter than the
// wait ends it earlier with an answer, not the deadline's error; another
// payload never waits. How soon after each bound the answer comes is a
// matter of scheduling here; the conformance module's fake-time tests
// pin those boundaries to the millisecond.
func TestWaitRunsOutWhileTheHolderLives(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	holder := newStore(t, env)
	sc := scope(t, "hung")
	claim, err := holder.Reserve(context.Background(), sc, "fp")
	must.NoError(t, err)
	must.NotNil(t, claim.Lease)

	const wait = 600 * time.Millisecond
	waiter := newStore(t, env, idem.WithWait(wait))
	t0 := time.Now()
	res, err := waiter.Run(context.Background(), sc, "fp", mustNotRun(t))
	took := time.Since(t0)
	var inflight *idem.InFlightError
	must.ErrorAs(t, err, &inflight)
	check.Equal(t, idem.OutcomeInFlight, res.Outcome)
	check.GreaterOrEqual(t, took, wait)
	check.Greater(t, inflight.RetryAfter, 50*time.Second, "the holder's lease still has most of its minute")

	// The caller's deadline comes first: the wait stops before it, and
	// answers.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	long := newStore(t, env, idem.WithWait(10*time.Second))
	_, err = long.Run(ctx, sc, "fp", mustNotRun(t))
	must.ErrorIs(t, err, idem.ErrInFlight, "an answer, not the deadline's error")

	// Another payload never waits: key reuse on the claim's own answer.
	client, calls := env.NewClient(t)
	other, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithWait(10*time.Second))
	must.NoError(t, err)
	_, err = other.Run(context.Background(), sc, "other", mustNotRun(t))
	must.ErrorIs(t, err, idem.ErrKeyReuse)
	check.Equal(t, 1, calls.Get("PutItem"))
	check.LessOrEqual(t, calls.Total(), 2, "no poll: %s", calls)
}

// TestWaitEndsInFlightWhenTheHolderDies: a holder whose lease ends without
// a completion leaves its waiter ErrInFlight as soon as the lease is seen
// to have ended, without taking the key over inside the wait; the
// client's retry takes it over.
func TestWaitEndsInFlightWhenTheHolderDies(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const lease = 400 * time.Millisecond
	holder := newStore(t, env, idem.WithLease(lease, 0))
	sc := scope(t, "dies")
	claim, err := holder.Reserve(context.Background(), sc, "fp") // reserves, then "dies"
	must.NoError(t, err)
	must.NotNil(t, claim.Lease)

	waiter := newStore(t, env, idem.WithWait(5*time.Second))
	t0 := time.Now()
	_, err = waiter.Run(context.Background(), sc, "fp", mustNotRun(t))
	took := time.Since(t0)
	must.ErrorIs(t, err, idem.ErrInFlight)
	check.GreaterOrEqual(t, took, lease-50*time.Millisecond, "the holder was live until its lease ended")
	check.Less(t, took, lease+time.Second, "the wait ended when the holder died, not at its maximum")
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
