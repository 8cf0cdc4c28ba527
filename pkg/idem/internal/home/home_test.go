package home_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/home"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The promise protocol on its own: each voter a table of its own (a
// voter's item is written only through its own endpoint, so one table
// per voter is what a global table's replicas are to it), each
// reachable or not, in a testing/synctest bubble.

const (
	lease  = 10 * time.Second
	margin = time.Second
	bound  = 2 * time.Second
)

// down is a voter's client that answers nothing while off is set.
type down struct {
	home.DB
	off *atomic.Bool
}

var errUnreachable = errors.New("unreachable")

func (d down) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if d.off.Load() {
		return nil, errUnreachable
	}
	return d.DB.GetItem(ctx, in, opts...)
}

func (d down) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if d.off.Load() {
		return nil, errUnreachable
	}
	return d.DB.UpdateItem(ctx, in, opts...)
}

// voters makes a Config of the named voters, and a switch per voter.
func voters(t *testing.T, names ...string) (*home.Config, map[string]*atomic.Bool) {
	t.Helper()
	cfg := &home.Config{Table: "idempotency", Layout: idemtable.Layout{}.WithDefaults(), Lease: lease, Margin: margin, Bound: bound, Now: time.Now}
	offs := map[string]*atomic.Bool{}
	for _, n := range names {
		s := idemtest.NewServer()
		t.Cleanup(s.Close)
		db := s.HandlerClient(func(o *dynamodb.Options) {
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
		})
		must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
		offs[n] = &atomic.Bool{}
		cfg.Voters = append(cfg.Voters, home.Voter{Name: n, DB: down{db, offs[n]}})
	}
	return cfg, offs
}

// A slot's first home is bootstrapped under epoch 1 by a majority; a
// renewal extends it, and never shortens another store's renewal.
func TestBootstrapAndRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		cfg, _ := voters(t, "a", "b", "c")
		v, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		check.Equal(t, home.View{Slot: "a", Home: "a", Epoch: 1, Quorum: 2, From: time.UnixMilli(0), Until: time.Now().Add(lease)}, v)
		time.Sleep(lease / 4)
		again, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		check.Equal(t, v, again, "more than half a lease left: read, not renewed")
		time.Sleep(lease / 2)
		renewed, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		check.Equal(t, time.Now().Add(lease), renewed.Until)
		// A renewal computed earlier (a slower store) does not shorten it.
		_, ps, err := cfg.Renew(ctx, home.View{Slot: "a", Home: "a", Epoch: 1, Quorum: 2, From: time.UnixMilli(0)})
		must.NoError(t, err)
		for _, p := range ps {
			check.Equal(t, renewed.Until, p.Until, p.Voter)
		}
	})
}

// A failover that reaches too few voters fails, and leaves the old home
// in place: the voters that still promise it are a quorum, and renew it.
// Run again once more voters answer, it begins an epoch of its own, which
// waits for the first one's promises too.
func TestFailoverWithTooFewVotersLeavesTheOldHome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		cfg, off := voters(t, "a", "b", "c")
		_, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		off["a"].Store(true)
		off["b"].Store(true)
		_, _, err = cfg.Failover(ctx, "a", "b", 0)
		check.ErrorIs(t, err, home.ErrFailover, "one voter of three switched, two needed")
		off["a"].Store(false)
		off["b"].Store(false)
		time.Sleep(lease / 2)
		v, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		check.Equal(t, "a", v.Home, "the old home still holds a quorum")
		check.Equal(t, int64(1), v.Epoch)

		first := time.Now()
		v, _, err = cfg.Failover(ctx, "a", "b", 0)
		must.NoError(t, err)
		check.Equal(t, int64(3), v.Epoch, "a failover of its own, after the failed one's epoch 2")
		check.True(t, !v.From.Before(first.Add(margin+bound)), "from %v: after the promises it switched, plus the margin and the bound", v.From)
		got, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		check.Equal(t, "b", got.Home)
		check.Equal(t, v.From, got.From)
	})
}

// A voter that missed a failover (it was out of reach) takes the new
// epoch once its promise of the old one has ended, from the renewals of
// the new home; never while it still promises the old home.
func TestAVoterThatMissedTheFailoverJoinsOnceItsPromiseEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		cfg, off := voters(t, "a", "b", "c")
		_, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		off["c"].Store(true)
		v, _, err := cfg.Failover(ctx, "a", "b", 0)
		must.NoError(t, err)
		off["c"].Store(false)
		_, ps, err := cfg.Renew(ctx, v)
		must.NoError(t, err, "a and b promise b")
		check.Equal(t, int64(2), ps[0].Epoch)
		check.Equal(t, int64(2), ps[1].Epoch)
		check.Equal(t, int64(1), ps[2].Epoch, "c still promises a: it keeps that promise")
		check.True(t, ps[2].Until.After(time.Now()), "(its promise had not ended)")
		time.Sleep(time.Until(v.From))
		_, ps, err = cfg.Renew(ctx, v)
		must.NoError(t, err)
		check.Equal(t, int64(2), ps[2].Epoch, "its promise ended (before the new home's From): it joins the new epoch")
		check.Equal(t, "b", ps[2].Home)
	})
}

// Two voters (two Regions, no witness): a renewal needs both, so a home
// cut off from the other stops when its lease ends; a failover needs one
// (2 - 2 + 1), and with a quorum of 1 the new home goes on alone, which
// the old home, needing both, can no longer renew against.
func TestTwoVotersWithoutAWitness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		cfg, off := voters(t, "a", "b")
		_, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		off["a"].Store(true)
		time.Sleep(lease)
		_, err = cfg.Ensure(ctx, "a", "a")
		check.ErrorIs(t, err, home.ErrNoQuorum, "b alone cannot renew a's lease")
		v, _, err := cfg.Failover(ctx, "a", "b", 1)
		must.NoError(t, err)
		check.Equal(t, 1, v.Quorum)
		time.Sleep(time.Until(v.From))
		got, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		check.Equal(t, "b", got.Home)

		// a comes back, its stores reaching a only: it cannot renew its
		// old lease (b promises epoch 2 now).
		off["a"].Store(false)
		off["b"].Store(true)
		_, err = cfg.Ensure(ctx, "a", "a")
		check.ErrorIs(t, err, home.ErrNoQuorum)
	})
}

// A failover that reached too few voters "leaves the old home the
// current one"; but with a quorum below a majority (1 of 3) its one
// switched voter is already a quorum of the new epoch, while the two it
// missed still promise, and renew, the old home's. Stores that reach
// only the missed two then see the old home held, and stores that reach
// the switched one see the new home held, at the same time: two homes
// take the slot's claims.
func TestAFailedFailoverWithAMinorityQuorumMakesNoSecondHome(t *testing.T) {
	t.Skip("review37: open: a failed Failover with quorum 1 of 3 voters gives its one switched voter a quorum of the new epoch while the old epoch keeps its majority (two homes held at once); no small fix")
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		cfg, off := voters(t, "a", "b", "c")
		_, err := cfg.Ensure(ctx, "a", "a")
		must.NoError(t, err)
		off["a"].Store(true)
		off["b"].Store(true)
		_, _, err = cfg.Failover(ctx, "a", "b", 1)
		check.ErrorIs(t, err, home.ErrFailover, "one voter of three switched, two needed")
		off["a"].Store(false)
		off["b"].Store(false)

		// A second view of the same voters, with switches of its own: the
		// stores on the far side of a partition.
		far := *cfg
		farOff := map[string]*atomic.Bool{}
		far.Voters = nil
		for _, v := range cfg.Voters {
			farOff[v.Name] = &atomic.Bool{}
			far.Voters = append(far.Voters, home.Voter{Name: v.Name, DB: down{v.DB.(down).DB, farOff[v.Name]}})
		}
		off["c"].Store(true)    // the old home's side reaches a and b
		farOff["a"].Store(true) // the other side reaches c only
		farOff["b"].Store(true)
		for range 6 {
			time.Sleep(lease / 2)
			near, nerr := cfg.Ensure(ctx, "a", "a")
			other, ferr := far.Ensure(ctx, "a", "a")
			now := time.Now()
			nearHeld := nerr == nil && !now.Before(near.From) && now.Before(near.Until)
			farHeld := ferr == nil && !now.Before(other.From) && now.Before(other.Until)
			check.False(t, nearHeld && farHeld && near.Home != other.Home,
				"at %v two homes hold the slot: %+v and %+v", now, near, other)
		}
	})
}
