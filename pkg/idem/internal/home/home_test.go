package home_test

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
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

// Failovers and renewals at once, from every Region of a simulated
// global table (MREC, three Regions, each Region's table a voter): each
// Region's stores and each operator see the voters through links of
// their own, cut and restored at random, and the operators fail the slot
// over to a random home, with a majority or a quorum of 1. Every view a
// store is given, held from From (or when it read it) until Until, is a
// stretch of time its home holds the slot: no two stretches of
// different homes or epochs may overlap.
func TestFailoversAndRenewalsAtOnceMakeOneHomeAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		regions := []string{"a", "b", "c"}
		g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: regions, Lag: 100 * time.Millisecond})
		must.NoError(t, err)
		t.Cleanup(g.Close)
		fast := func(o *dynamodb.Options) {
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
		}
		clients := map[string]home.DB{}
		for _, r := range regions {
			clients[r] = g.Region(r).HandlerClient(fast)
		}
		// A global table is created once, in one Region, and replicated.
		must.NoError(t, idemtable.Create(ctx, g.Region("a").HandlerClient(fast), "idempotency", idemtable.Layout{}))
		// view is a Config whose links to the voters a goroutine cuts on
		// its own.
		view := func() (*home.Config, []*atomic.Bool) {
			cfg := &home.Config{Table: "idempotency", Layout: idemtable.Layout{}.WithDefaults(), Lease: lease, Margin: margin, Bound: bound, Now: time.Now}
			var cuts []*atomic.Bool
			for _, v := range home.Voters(clients, nil) {
				cut := &atomic.Bool{}
				cuts = append(cuts, cut)
				cfg.Voters = append(cfg.Voters, home.Voter{Name: v.Name, DB: down{v.DB, cut}})
			}
			return cfg, cuts
		}
		// shake cuts each link with probability 1/3 (a partition of its
		// own), from a generator per goroutine.
		shake := func(rng *rand.Rand, cuts []*atomic.Bool) {
			for _, c := range cuts {
				c.Store(rng.IntN(3) == 0)
			}
		}

		type stretch struct {
			home        string
			epoch       int64
			from, until time.Time
			by          string
		}
		var (
			mu        sync.Mutex
			held      []stretch
			failovers = map[string]int{}
		)
		const rounds = 400
		var wg sync.WaitGroup
		for i, r := range regions {
			// Two stores per Region.
			for s := range 2 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(i), uint64(s)))
					cfg, cuts := view()
					for range rounds {
						shake(rng, cuts)
						v, err := cfg.Ensure(ctx, "slot", "a")
						now := time.Now()
						if err == nil && now.Before(v.Until) {
							mu.Lock()
							held = append(held, stretch{v.Home, v.Epoch, later(v.From, now), v.Until, r + strconv.Itoa(s)})
							mu.Unlock()
						}
						time.Sleep(time.Duration(rng.IntN(int(lease / 2))))
					}
				})
			}
			// An operator per Region.
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(i), 99))
				cfg, cuts := view()
				for range rounds / 8 {
					time.Sleep(time.Duration(rng.IntN(int(4 * lease))))
					shake(rng, cuts)
					_, _, err := cfg.Failover(ctx, "slot", regions[rng.IntN(len(regions))], rng.IntN(2))
					mu.Lock()
					switch {
					case err == nil:
						failovers["done"]++
					case errors.Is(err, home.ErrFailover):
						failovers["failed"]++
					default:
						failovers["other"]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()

		homes := map[string]bool{}
		overlaps := 0
		for i, x := range held {
			homes[x.home] = true
			for _, y := range held[i+1:] {
				if (x.home != y.home || x.epoch != y.epoch) && x.from.Before(y.until) && y.from.Before(x.until) {
					if overlaps < 5 {
						t.Errorf("two homes hold the slot at once: %+v and %+v", x, y)
					}
					overlaps++
				}
			}
		}
		t.Logf("%d views held, homes %v, failovers %v, overlaps %d", len(held), slices.Sorted(maps.Keys(homes)), failovers, overlaps)
		check.Equal(t, 0, overlaps, "moments with two homes")
		// What the run must have exercised for the count to mean anything.
		check.True(t, failovers["done"] >= 5, "failovers that switched enough voters: %v", failovers)
		check.True(t, failovers["failed"] >= 5, "failovers that switched too few: %v", failovers)
		check.True(t, len(homes) >= 2, "homes seen held: %v", homes)
		check.True(t, len(held) >= rounds, "views held: %d", len(held))
	})
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
