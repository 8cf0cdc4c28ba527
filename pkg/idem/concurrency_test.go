package idem_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/ddbtest"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// tally counts what concurrent callers of one key saw.
type tally struct {
	executed, replayed, inFlight, other atomic.Int64
}

// call is one request: reserve, then commit business writes, or replay.
func call(ctx context.Context, env *ddbtest.Env, s *idem.Store, sc idem.Scope, fp string, tl *tally) error {
	claim, err := s.Reserve(ctx, sc, fp)
	switch {
	case errors.Is(err, idem.ErrInFlight):
		tl.inFlight.Add(1)
		return nil
	case err != nil:
		tl.other.Add(1)
		return err
	case claim.Replay != nil:
		tl.replayed.Add(1)
		return nil
	}
	id, items := businessWrites(env)
	if err := claim.Lease.Commit(ctx, created(id), items...); err != nil {
		tl.other.Add(1)
		_ = claim.Lease.Release(ctx)
		return err
	}
	tl.executed.Add(1)
	return nil
}

func TestSixtyFourConcurrentCallersOneKeyExecuteOnce(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	s := newStore(t, env)
	sc := scope(t, "one-key")
	const callers = 64
	var tl tally
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // start jitter
			if err := call(context.Background(), env, s, sc, "fp", &tl); err != nil {
				t.Errorf("caller: %v", err)
			}
		})
	}
	wg.Wait()
	t.Logf("callers=%d executed=%d replayed=%d in_flight=%d other=%d products=%d outbox=%d",
		callers, tl.executed.Load(), tl.replayed.Load(), tl.inFlight.Load(), tl.other.Load(),
		countItems(t, env, env.Tables.Products), countItems(t, env, env.Tables.Outbox))
	assert.EqualValues(t, 1, tl.executed.Load(), "exactly one caller executes")
	assert.EqualValues(t, callers-1, tl.replayed.Load()+tl.inFlight.Load(), "everyone else replays or is told in flight")
	assert.Zero(t, tl.other.Load())
	assert.Equal(t, 1, countItems(t, env, env.Tables.Products))
	assert.Equal(t, 1, countItems(t, env, env.Tables.Outbox))
}

func TestThousandKeysTimesEightDuplicatesExecuteThousandTimes(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	s := newStore(t, env)
	const keys, dups, workers = 1000, 8, 64
	type job struct{ key int }
	jobs := make(chan job)
	var tl tally
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				sc := scope(t, fmt.Sprintf("key-%04d", j.key))
				if err := call(context.Background(), env, s, sc, "fp", &tl); err != nil {
					t.Errorf("key %d: %v", j.key, err)
				}
			}
		})
	}
	// Duplicates of a key are queued next to each other, so they overlap.
	for k := range keys {
		for range dups {
			jobs <- job{key: k}
		}
	}
	close(jobs)
	wg.Wait()
	t.Logf("requests=%d executed=%d replayed=%d in_flight=%d other=%d calls: %s",
		keys*dups, tl.executed.Load(), tl.replayed.Load(), tl.inFlight.Load(), tl.other.Load(), env.Counter)
	assert.EqualValues(t, keys, tl.executed.Load())
	assert.EqualValues(t, keys*dups, tl.executed.Load()+tl.replayed.Load()+tl.inFlight.Load())
	assert.Equal(t, keys, countItems(t, env, env.Tables.Products))
	assert.Equal(t, keys, countItems(t, env, env.Tables.Outbox))
	assert.Equal(t, keys, env.Counter.Get("TransactWriteItems"), "one commit per key, no failed commits")
}

// TestConcurrentTakeoverHasOneWinner: many callers find a dead holder's
// key at once; the takeover is one atomic write, so one of them executes.
func TestConcurrentTakeoverHasOneWinner(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	clk := newClock()
	s := newStore(t, env, idem.WithClock(clk.Now))
	sc := scope(t, "dead-holder")
	_, err := s.Reserve(context.Background(), sc, "fp")
	require.NoError(t, err)
	clk.Advance(idem.DefaultLease + idem.DefaultLeaseMargin + time.Millisecond)

	const callers = 32
	var tl tally
	var takeovers atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			claim, err := s.Reserve(context.Background(), sc, "fp")
			switch {
			case errors.Is(err, idem.ErrInFlight):
				tl.inFlight.Add(1)
			case err != nil:
				t.Errorf("reserve: %v", err)
			case claim.Replay != nil:
				tl.replayed.Add(1)
			default:
				if claim.Outcome == idem.OutcomeTakeover {
					takeovers.Add(1)
				}
				id, items := businessWrites(env)
				if err := claim.Lease.Commit(context.Background(), created(id), items...); err != nil {
					t.Errorf("commit: %v", err)
				}
				tl.executed.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("callers=%d takeovers=%d executed=%d replayed=%d in_flight=%d",
		callers, takeovers.Load(), tl.executed.Load(), tl.replayed.Load(), tl.inFlight.Load())
	if env.PutItemReturnsOldItem {
		assert.EqualValues(t, 1, takeovers.Load())
	}
	assert.EqualValues(t, 1, tl.executed.Load())
	assert.EqualValues(t, callers-1, tl.replayed.Load()+tl.inFlight.Load())
	assert.Equal(t, 1, countItems(t, env, env.Tables.Products))
}
