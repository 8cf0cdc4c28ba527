package idem_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem"
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
				assert.ErrorIs(t, err, idem.ErrInFlight)
				return
			}
			assert.Equal(t, receipt{ChargeID: "ch_1", Amount: 1999}, r)
		})
	}
	wg.Wait()
	t.Logf("effects=%d outcomes=%v", effects.Load(), outcomes)
	assert.EqualValues(t, 1, effects.Load())
	assert.Equal(t, 1, outcomes[idem.OutcomeExecuted])
	assert.Equal(t, 31, outcomes[idem.OutcomeReplayed]+outcomes[idem.OutcomeInFlight])

	r, outcome, err := idem.Do(context.Background(), s, sc, "fp", func(context.Context) (receipt, error) {
		t.Error("a completed key must not run again")
		return receipt{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, idem.OutcomeReplayed, outcome)
	assert.Equal(t, int64(1999), r.Amount)
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
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, idem.OutcomeReleased, outcome)
	_, ok, err := s.Get(context.Background(), sc)
	require.NoError(t, err)
	assert.False(t, ok, "released")

	r, outcome, err := idem.Do(context.Background(), s, sc, "fp", func(context.Context) (receipt, error) {
		return receipt{ChargeID: "ch_2"}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, idem.OutcomeExecuted, outcome)
	assert.Equal(t, "ch_2", r.ChargeID)
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
		require.NoError(t, err)
		require.NotNil(t, other.Lease)
		return receipt{ChargeID: "ch_3"}, nil
	})
	require.ErrorIs(t, err, idem.ErrNotRecorded)
	require.ErrorIs(t, err, idem.ErrLeaseLost)
	assert.Equal(t, idem.OutcomeNotRecorded, outcome, "the effect happened; its record did not land")
	assert.Equal(t, "ch_3", r.ChargeID, "the effect happened; its value is returned")

	// Errors from the effect keep their identity through Do.
	boom := errors.New("boom")
	_, _, err = idem.Do(context.Background(), s, scope(t, "charge-4"), "fp", func(context.Context) (int, error) { return 0, boom })
	require.ErrorIs(t, err, boom)
}
