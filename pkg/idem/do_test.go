package idem_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

type receipt struct {
	ChargeID string `json:"charge_id"`
	Amount   int64  `json:"amount"`
}

func TestDoRunsTheEffectOnceAcrossConcurrentCallers(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.concurrent(t)
	s := newStore(t, env)
	sc := scope(t, "charge-1")
	var effects atomic.Int64
	outcomes := map[idem.Outcome]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			r, outcome, err := idem.Do(context.Background(), s, sc, "fp", func(context.Context) (receipt, error) {
				effects.Add(1)
				return receipt{ChargeID: "ch_1", Amount: 1999}, nil
			})
			mu.Lock()
			outcomes[outcome]++
			mu.Unlock()
			if err != nil {
				check.ErrorIs(t, err, idem.ErrInFlight)
				return
			}
			check.Equal(t, receipt{ChargeID: "ch_1", Amount: 1999}, r)
		})
	}
	wg.Wait()
	t.Logf("effects=%d outcomes=%v", effects.Load(), outcomes)
	check.EqualValues(t, 1, effects.Load())
	check.Equal(t, 1, outcomes[idem.OutcomeExecuted])
	check.Equal(t, 31, outcomes[idem.OutcomeReplayed]+outcomes[idem.OutcomeInFlight])

	r, outcome, err := idem.Do(context.Background(), s, sc, "fp", func(context.Context) (receipt, error) {
		t.Error("a completed key must not run again")
		return receipt{}, nil
	})
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, outcome)
	check.Equal(t, int64(1999), r.Amount)
}

func TestDoReleasesWhenTheEffectFailsOnACancelledContext(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env)
	sc := scope(t, "charge-2")
	ctx, cancel := context.WithCancel(context.Background())
	_, outcome, err := idem.Do(ctx, s, sc, "fp", func(ctx context.Context) (receipt, error) {
		cancel() // the client disconnects mid-request
		return receipt{}, ctx.Err()
	})
	must.ErrorIs(t, err, context.Canceled)
	check.Equal(t, idem.OutcomeReleased, outcome)
	_, ok, err := s.Get(context.Background(), sc)
	must.NoError(t, err)
	check.False(t, ok, "released")

	r, outcome, err := idem.Do(context.Background(), s, sc, "fp", func(context.Context) (receipt, error) {
		return receipt{ChargeID: "ch_2"}, nil
	})
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, outcome)
	check.Equal(t, "ch_2", r.ChargeID)
}

func TestDoReportsAnEffectWhoseCompletionWasLost(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	clk := newClock()
	s := newStore(t, env, idem.WithClock(clk.Now))
	sc := scope(t, "charge-3")
	r, outcome, err := idem.Do(context.Background(), s, sc, "fp", func(context.Context) (receipt, error) {
		// The effect outlives the lease, and another caller takes over.
		clk.Advance(leaseTotal + time.Millisecond)
		other, err := s.Reserve(context.Background(), sc, "fp")
		must.NoError(t, err)
		must.NotNil(t, other.Lease)
		return receipt{ChargeID: "ch_3"}, nil
	})
	must.ErrorIs(t, err, idem.ErrNotRecorded)
	must.ErrorIs(t, err, idem.ErrLeaseLost)
	check.Equal(t, idem.OutcomeNotRecorded, outcome, "the effect happened; its record did not land")
	check.Equal(t, "ch_3", r.ChargeID, "the effect happened; its value is returned")

	// Errors from the effect keep their identity through Do.
	boom := errors.New("boom")
	_, _, err = idem.Do(context.Background(), s, scope(t, "charge-4"), "fp", func(context.Context) (int, error) { return 0, boom })
	must.ErrorIs(t, err, boom)
}
