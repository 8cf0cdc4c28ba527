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

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// tally counts what concurrent callers of one key saw.
type tally struct {
	executed, replayed, inFlight, other atomic.Int64
}

func (tl *tally) add(res idem.Result, err error) {
	switch {
	case errors.Is(err, idem.ErrInFlight):
		tl.inFlight.Add(1)
	case err != nil:
		tl.other.Add(1)
	case res.Outcome == idem.OutcomeReplayed:
		tl.replayed.Add(1)
	default:
		tl.executed.Add(1)
	}
}

func TestSixtyFourConcurrentCallersOneKeyExecuteOnce(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		env.concurrent(t)
		sc := scope(t, "one-key")
		const callers = 64
		// Each caller is its own process-like client, so its calls can be
		// counted on their own.
		stores := make([]*idem.Store, callers)
		counters := make([]*callCounter, callers)
		for i := range callers {
			client, c := env.NewClient(t)
			s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithMode(mode))
			must.NoError(t, err)
			stores[i], counters[i] = s, c
		}
		var tl tally
		results := make([]idem.Result, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // start jitter
				res, err := stores[i].Execute(context.Background(), sc, "fp", effect(env))
				if err != nil && !errors.Is(err, idem.ErrInFlight) {
					t.Errorf("caller %d: %v", i, err)
				}
				tl.add(res, err)
				results[i] = res
			})
		}
		wg.Wait()
		winner := -1
		callsByCaller := map[int]int{}
		for i, r := range results {
			if r.Outcome == idem.OutcomeExecuted {
				winner = i
			}
			callsByCaller[counters[i].Total()]++
		}
		t.Logf("mode=%s callers=%d executed=%d replayed=%d in_flight=%d other=%d products=%d outbox=%d calls-per-caller=%v",
			mode, callers, tl.executed.Load(), tl.replayed.Load(), tl.inFlight.Load(), tl.other.Load(),
			countItems(t, env, env.Tables.Products), countItems(t, env, env.Tables.Outbox), callsByCaller)
		check.EqualValues(t, 1, tl.executed.Load(), "exactly one caller executes")
		check.Zero(t, tl.other.Load())
		check.Equal(t, 1, countItems(t, env, env.Tables.Products), "exactly one business write")
		check.Equal(t, 1, countItems(t, env, env.Tables.Outbox))
		must.GreaterOrEqual(t, winner, 0)
		switch mode {
		case idem.ModeReserve:
			check.EqualValues(t, callers-1, tl.replayed.Load()+tl.inFlight.Load(), "everyone else replays or is told in flight")
		case idem.ModeTransact:
			// A duplicate whose transaction met the winner's running one
			// is in flight; every other replays the winner's response.
			check.EqualValues(t, callers-1, tl.replayed.Load()+tl.inFlight.Load())
			for i, r := range results {
				if r.Outcome == idem.OutcomeReplayed {
					check.Equal(t, results[winner].Response, r.Response, "caller %d answers with the winner's response", i)
				}
			}
			check.Equal(t, map[string]int{"TransactWriteItems": 1}, counters[winner].Snapshot(), "a first execution is one call")
		}
		// Without a wait, a duplicate costs one call, whatever it met:
		// the record (replay, or in flight) or the winner's running
		// transaction (in flight at once, no read).
		for i := range callers {
			if i != winner {
				check.Equal(t, 1, counters[i].Total(), "caller %d: %s", i, counters[i])
			}
		}
	})
}

// TestManyKeysTimesEightDuplicatesExecuteOncePerKey: 200 keys, each sent 8
// times at once by 64 workers. (200, not more: the embedded store copies
// every table a transaction touches, so its cost grows with the tables.)
func TestManyKeysTimesEightDuplicatesExecuteOncePerKey(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		env.concurrent(t)
		s := newStore(t, env, idem.WithMode(mode))
		const keys, dups, workers = 200, 8, 64
		jobs := make(chan int)
		var tl tally
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for k := range jobs {
					res, err := s.Execute(context.Background(), scope(t, fmt.Sprintf("key-%04d", k)), "fp", effect(env))
					if err != nil && !errors.Is(err, idem.ErrInFlight) {
						t.Errorf("key %d: %v", k, err)
					}
					tl.add(res, err)
				}
			})
		}
		// Duplicates of a key are queued next to each other, so they overlap.
		for k := range keys {
			for range dups {
				jobs <- k
			}
		}
		close(jobs)
		wg.Wait()
		t.Logf("mode=%s requests=%d executed=%d replayed=%d in_flight=%d other=%d calls: %s",
			mode, keys*dups, tl.executed.Load(), tl.replayed.Load(), tl.inFlight.Load(), tl.other.Load(), env.Counter)
		check.EqualValues(t, keys, tl.executed.Load())
		check.EqualValues(t, keys*dups, tl.executed.Load()+tl.replayed.Load()+tl.inFlight.Load())
		check.Equal(t, keys, countItems(t, env, env.Tables.Products))
		check.Equal(t, keys, countItems(t, env, env.Tables.Outbox))
		// Without a wait, a duplicate that meets the winner's running
		// transaction is in flight at once: no read, no second write.
		check.Zero(t, env.Counter.Get("GetItem"), "no read")
		switch mode {
		case idem.ModeReserve:
			check.Equal(t, keys, env.Counter.Get("TransactWriteItems"), "one commit per key, no failed commits")
			check.Equal(t, keys*dups, env.Counter.Get("PutItem"), "one claim per request")
		case idem.ModeTransact:
			check.Zero(t, env.Counter.Get("PutItem"), "the claim rides in the transaction")
			check.Equal(t, keys*dups, env.Counter.Get("TransactWriteItems"), "one transaction per request")
		}
	})
}

// TestConcurrentTakeoverHasOneWinner: many callers find a dead holder's
// key at once; the takeover is one atomic write, so one of them executes.
func TestConcurrentTakeoverHasOneWinner(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		env.concurrent(t)
		clk := newClock()
		dead := newStore(t, env, idem.WithClock(clk.Now))
		s := newStore(t, env, idem.WithClock(clk.Now), idem.WithMode(mode))
		sc := scope(t, "dead-holder")
		_, err := dead.Reserve(context.Background(), sc, "fp") // reserves, then dies
		must.NoError(t, err)
		clk.Advance(leaseTotal + time.Millisecond)

		const callers = 32
		var tl tally
		var takeovers atomic.Int64
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				res, err := s.Execute(context.Background(), sc, "fp", effect(env))
				if err != nil && !errors.Is(err, idem.ErrInFlight) {
					t.Errorf("execute: %v", err)
				}
				if res.Outcome == idem.OutcomeTakeover {
					takeovers.Add(1)
				}
				tl.add(res, err)
			})
		}
		wg.Wait()
		t.Logf("mode=%s callers=%d takeovers=%d executed=%d replayed=%d in_flight=%d",
			mode, callers, takeovers.Load(), tl.executed.Load(), tl.replayed.Load(), tl.inFlight.Load())
		if env.PutItemReturnsOldItem && mode == idem.ModeReserve {
			check.EqualValues(t, 1, takeovers.Load())
		}
		check.EqualValues(t, 1, tl.executed.Load())
		check.EqualValues(t, callers-1, tl.replayed.Load()+tl.inFlight.Load())
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))
	})
}
