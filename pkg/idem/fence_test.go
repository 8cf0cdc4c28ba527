package idem_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A holder that outlived its lease and whose key another caller has
// taken over, and still holds (its operation running), finishes: its
// completion, Execute's commit or Run's update, is fenced out by the
// token, whatever the record's status, and nothing of it lands. The new
// holder's claim survives and completes with its own response. (With the
// new holder already completed, the status alone would refuse the old
// one's write: TestZombieHolderCannotCommitAfterTakeover.)
func TestAZombieCompletionIsFencedOutOfALiveTakeover(t *testing.T) {
	for _, way := range []string{"Execute", "Run"} {
		t.Run(way, func(t *testing.T) {
			env := newEnv(t)
			clk := newClock()
			a := newStore(t, env, idem.WithClock(clk.Now))
			b := newStore(t, env, idem.WithClock(clk.Now))
			sc := scope(t, "zombie-over-a-live-holder")
			ctx := context.Background()
			var taken idem.Claim
			takeOver := func() {
				clk.Advance(leaseTotal + time.Second) // A stalls past its lease
				var err error
				taken, err = b.Reserve(ctx, sc, "fp") // B takes over, and runs on
				must.NoError(t, err)
				must.NotNil(t, taken.Lease)
			}
			var res idem.Result
			var err error
			switch way {
			case "Execute":
				res, err = a.Execute(ctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
					takeOver()
					return effect(env)(ctx) // A wakes up with its own product
				})
				check.Equal(t, 0, countItems(t, env, env.Tables.Products), "none of A's writes landed")
			case "Run":
				res, err = a.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) {
					takeOver()
					return idem.Response{Body: []byte("A")}, nil
				})
			}
			check.ErrorIs(t, err, idem.ErrLeaseLost, "A's completion is fenced out: %s", res.Outcome)

			rec, ok, err := b.Get(ctx, sc)
			must.NoError(t, err)
			must.True(t, ok)
			check.Equal(t, idem.StatusInProgress, rec.Status, "B's claim survives A's completion")
			check.Equal(t, taken.Lease.Token(), rec.LeaseToken)
			must.NoError(t, taken.Lease.Complete(ctx, idem.Response{Body: []byte("B")}), "B completes its own lease")
			replay, err := a.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
			must.NoError(t, err)
			check.Equal(t, "B", string(replay.Response.Body), "B's response stands")
		})
	}
}
