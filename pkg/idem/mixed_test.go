package idem_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// Both modes read and write one record format, so stores of either mode
// may share a table and a key, as during a rollout from one to the other.

func TestReserveHolderInFlightMakesTransactCallerWait(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	reserve := newStore(t, env)
	transact := newStore(t, env, idem.WithMode(idem.ModeTransact))
	sc := scope(t, "mixed-in-flight")
	ctx := context.Background()

	started, finish := make(chan struct{}), make(chan struct{})
	var holder idem.Result
	var holderErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		holder, holderErr = reserve.Execute(ctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
			close(started)
			<-finish // the reserve holder's work takes a while
			return effect(env)(ctx)
		})
	})
	<-started
	res, err := transact.Execute(ctx, sc, "fp", effect(env))
	var inflight *idem.InFlightError
	must.ErrorAs(t, err, &inflight, "a live reserve holder makes the transact caller answer 409")
	check.Equal(t, idem.OutcomeInFlight, res.Outcome)
	check.Positive(t, inflight.RetryAfter)
	check.Zero(t, countItems(t, env, env.Tables.Products), "the transact caller wrote nothing")

	close(finish)
	wg.Wait()
	must.NoError(t, holderErr)
	after, err := transact.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, after.Outcome)
	check.Equal(t, holder.Response, after.Response)
	check.Equal(t, 1, countItems(t, env, env.Tables.Products))
}

func TestTransactCallerTakesOverADeadReserveHolder(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	clk := newClock()
	reserve := newStore(t, env, idem.WithClock(clk.Now))
	transact := newStore(t, env, idem.WithClock(clk.Now), idem.WithMode(idem.ModeTransact))
	sc := scope(t, "mixed-takeover")
	ctx := context.Background()

	dead, err := reserve.Reserve(ctx, sc, "fp")
	must.NoError(t, err)
	clk.Advance(leaseTotal + time.Millisecond)

	client, counter := env.NewClient(t)
	counted, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithClock(clk.Now), idem.WithMode(idem.ModeTransact))
	must.NoError(t, err)
	res, err := counted.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, res.Outcome)
	check.Equal(t, map[string]int{"TransactWriteItems": 1}, counter.Snapshot(), "the takeover is the one transaction")

	id, items := businessWrites(env)
	err = dead.Lease.Commit(ctx, created(id), items...)
	must.ErrorIs(t, err, idem.ErrLeaseLost, "the dead holder's late commit is refused")
	must.ErrorIs(t, dead.Lease.Release(ctx), idem.ErrLeaseLost)
	check.Equal(t, 1, countItems(t, env, env.Tables.Products))

	replay, err := transact.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, res.Response, replay.Response)
}

func TestTransactCompletedKeyReplaysToReserveCaller(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	transact := newStore(t, env, idem.WithMode(idem.ModeTransact))
	reserve := newStore(t, env)
	sc := scope(t, "mixed-replay")
	ctx := context.Background()

	first, err := transact.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err)
	res, err := reserve.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, res.Outcome)
	check.Equal(t, first.Response, res.Response)
	_, err = reserve.Execute(ctx, sc, "other", effect(env))
	must.ErrorIs(t, err, idem.ErrKeyReuse)
	v, outcome, err := idem.Do(ctx, reserve, scope(t, "mixed-do"), "fp", func(context.Context) (int, error) { return 7, nil })
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, outcome)
	check.Equal(t, 7, v)
	check.Equal(t, 1, countItems(t, env, env.Tables.Products))
}

// TestMixedModesRaceOnOneKey: 32 reserve and 32 transact callers at once.
func TestMixedModesRaceOnOneKey(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.concurrent(t)
	stores := []*idem.Store{newStore(t, env), newStore(t, env, idem.WithMode(idem.ModeTransact))}
	sc := scope(t, "mixed-race")
	var tl tally
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			res, err := stores[i%2].Execute(context.Background(), sc, "fp", effect(env))
			if err != nil && !errors.Is(err, idem.ErrInFlight) {
				t.Errorf("caller %d: %v", i, err)
			}
			tl.add(res, err)
		})
	}
	wg.Wait()
	t.Logf("executed=%d replayed=%d in_flight=%d other=%d", tl.executed.Load(), tl.replayed.Load(), tl.inFlight.Load(), tl.other.Load())
	check.EqualValues(t, 1, tl.executed.Load())
	check.EqualValues(t, 63, tl.replayed.Load()+tl.inFlight.Load())
	check.Equal(t, 1, countItems(t, env, env.Tables.Products))
	check.Equal(t, 1, countItems(t, env, env.Tables.Outbox))
}
