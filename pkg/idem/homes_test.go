package idem_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The library on a simulated global table with multi-Region eventual
// consistency (idemtest.NewGlobal), in a testing/synctest bubble: lags,
// leases and failover waits take no real time.

const east, west, south = "us-east-1", "us-west-2", "eu-west-1"

// The home leases of these tests: short, so that their waits are easy to
// read; the margin is the stores' (WithLease).
const (
	homeLease   = 10 * time.Second
	replication = 2 * time.Second
	margin      = time.Second
)

// planet is a simulated global table of three Regions, a client from
// each Region to each Region's endpoint (a link that can be cut), and
// per Region a store that claims each key in its home.
type planet struct {
	g       *idemtest.Global
	stores  map[string]*idem.Store
	control idemglobal.Control  // as an operator in any Region sees it
	links   map[string]idem.API // "from>to"
	cut     sync.Map            // "from>to" -> true: the link answers nothing
	// slowPut: "from>to" -> the time the link's next PutItem takes to
	// land (the SDK's retries and backoff), or less if its context ends.
	slowPut sync.Map
}

// newPlanet starts a planet at lag, every store homing keys as home says
// (nil: the stores claim in their own Region: WithRegion, no Homes).
func newPlanet(t *testing.T, lag time.Duration, home func(idem.Scope) string, opts ...idem.Option) *planet {
	t.Helper()
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{east, west, south}, Lag: lag})
	must.NoError(t, err)
	t.Cleanup(g.Close)
	p := &planet{g: g, stores: map[string]*idem.Store{}, links: map[string]idem.API{}}
	fast := func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
	}
	for _, from := range g.Regions() {
		for _, to := range g.Regions() {
			p.links[from+">"+to] = &link{API: g.Region(to).HandlerClient(fast), p: p, name: from + ">" + to}
		}
	}
	must.NoError(t, idemtable.Create(context.Background(), g.Region(east).HandlerClient(), "idempotency", idemtable.Layout{}))
	for _, r := range g.Regions() {
		o := append([]idem.Option{idem.WithLease(time.Minute, margin)}, opts...)
		if home == nil {
			o = append(o, idem.WithRegion(r))
		} else {
			clients := map[string]idem.API{}
			for _, to := range g.Regions() {
				clients[to] = p.links[r+">"+to]
			}
			homes := idem.Homes{Region: r, Clients: clients, Home: home, Lease: homeLease, ReplicationBound: replication}
			o = append(o, idem.WithHomes(homes))
			p.control = idemglobal.Control{Table: "idempotency", Homes: homes, Margin: margin}
		}
		s, err := idem.NewStore(p.links[r+">"+r], "idempotency", o...)
		must.NoError(t, err)
		p.stores[r] = s
	}
	return p
}

// cutOff cuts (or, with on false, mends) the links from every Region in
// from to the endpoint of to.
func (p *planet) cutOff(to string, on bool, from ...string) {
	for _, f := range from {
		p.cut.Store(f+">"+to, on)
	}
}

// record reads the record of scope in a Region's replica.
func (p *planet) record(t *testing.T, region string, sc idem.Scope) map[string]types.AttributeValue {
	t.Helper()
	out, err := p.g.Region(region).HandlerClient().GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("idempotency"), Key: idemtable.Layout{}.Key(sc.ID()), ConsistentRead: aws.Bool(true),
	})
	must.NoError(t, err)
	return out.Item
}

func attrS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// link is a client from one Region to one endpoint, which fails every
// request as a connection refused while it is cut.
type link struct {
	idem.API
	p    *planet
	name string
}

func (l *link) down(ctx context.Context) error {
	switch cut, _ := l.p.cut.Load(l.name); cut := cut.(type) {
	case bool:
		if cut {
			return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
	case time.Duration:
		// Black-holed: the request waits for an answer that never comes,
		// until the client's timeout.
		select {
		case <-time.After(cut):
			return &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (l *link) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := l.down(ctx); err != nil {
		return nil, err
	}
	if d, ok := l.p.slowPut.LoadAndDelete(l.name); ok {
		select {
		case <-time.After(d.(time.Duration)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return l.API.PutItem(ctx, in, opts...)
}

func (l *link) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := l.down(ctx); err != nil {
		return nil, err
	}
	return l.API.GetItem(ctx, in, opts...)
}

func (l *link) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := l.down(ctx); err != nil {
		return nil, err
	}
	return l.API.UpdateItem(ctx, in, opts...)
}

func (l *link) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := l.down(ctx); err != nil {
		return nil, err
	}
	return l.API.DeleteItem(ctx, in, opts...)
}

func (l *link) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if err := l.down(ctx); err != nil {
		return nil, err
	}
	return l.API.TransactWriteItems(ctx, in, opts...)
}

// runEverywhere calls Run for sc in every Region at once, each effect
// taking work, and returns each Region's outcome and error and the
// executions counted.
func (p *planet) runEverywhere(t *testing.T, sc idem.Scope, work time.Duration) (map[string]idem.Outcome, map[string]error, int) {
	t.Helper()
	var runs atomic.Int32
	outcomes, errs := map[string]idem.Outcome{}, map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range []string{east, west, south} {
		wg.Go(func() {
			res, err := p.stores[r].Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
				runs.Add(1)
				time.Sleep(work)
				return idem.Response{Body: []byte("ran in " + r)}, nil
			})
			mu.Lock()
			outcomes[r], errs[r] = res.Outcome, err
			mu.Unlock()
		})
	}
	wg.Wait()
	return outcomes, errs, int(runs.Load())
}

// The problem (issue 37): stores that claim a key in their own Region run
// it once per Region under lag, and last writer wins keeps one record of
// the three, silently.
func TestLocalClaimsRunAKeyInEveryRegionUnderLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPlanet(t, time.Second, nil)
		_, errs, runs := p.runEverywhere(t, scope(t, "k"), 100*time.Millisecond)
		for r, err := range errs {
			must.NoError(t, err, r)
		}
		check.Equal(t, 3, runs, "one execution per Region")
		time.Sleep(time.Second)
		p.g.Settle()
		check.Positive(t, p.g.Stats().Superseded, "the claims of two Regions were overwritten without a trace")
	})
}

// With Homes, the three Regions' calls all claim the key in its home, so
// it runs once at any lag; the others are in flight, then replay; the
// record is the home's, stamped with its Region and epoch, in every
// replica.
func TestHomesRunAKeyOnceAcrossRegions(t *testing.T) {
	for _, lag := range []time.Duration{0, 100 * time.Millisecond, time.Second, 10 * time.Second} {
		t.Run(fmt.Sprint(lag), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPlanet(t, lag, idemglobal.OneHome(east))
				sc := scope(t, "k")
				outcomes, errs, runs := p.runEverywhere(t, sc, 100*time.Millisecond)
				check.Equal(t, 1, runs, "one execution in all Regions")
				executed := 0
				for r, o := range outcomes {
					switch o {
					case idem.OutcomeExecuted:
						executed++
						check.NoError(t, errs[r], r)
					case idem.OutcomeInFlight:
						check.ErrorIs(t, errs[r], idem.ErrInFlight, r)
					default:
						t.Errorf("%s: %s, %v", r, o, errs[r])
					}
				}
				check.Equal(t, 1, executed)
				for _, r := range []string{east, west, south} {
					res, err := p.stores[r].Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
						t.Errorf("%s ran the key again", r)
						return idem.Response{}, nil
					})
					must.NoError(t, err, r)
					check.Equal(t, idem.OutcomeReplayed, res.Outcome, r)
				}
				time.Sleep(lag)
				p.g.Settle()
				for _, r := range []string{east, west, south} {
					rec := p.record(t, r, sc)
					check.Equal(t, "COMPLETED", attrS(rec, "status"), r)
					check.Equal(t, east, attrS(rec, "origin"), "%s: the home's replica took the claim", r)
					check.Equal(t, "1", attrS(rec, "home_epoch"), r)
				}
				check.Equal(t, 0, p.g.Stats().Superseded, "no write of a record lost to another Region's")
			})
		})
	}
}

// run calls Run for sc in a Region's store, its effect counted in runs.
func (p *planet) run(region string, sc idem.Scope, runs *atomic.Int32) (idem.Result, error) {
	return p.stores[region].Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
		runs.Add(1)
		return idem.Response{Body: []byte("ran in " + region)}, nil
	})
}

// warm has every Region's store run a key of its own, so that each knows
// the home of OneHome's slot.
func (p *planet) warm(t *testing.T) {
	t.Helper()
	var runs atomic.Int32
	for _, r := range []string{east, west, south} {
		_, err := p.run(r, scope(t, "warm-"+r), &runs)
		must.NoError(t, err, r)
	}
}

// The old home unreachable to every client while its replica still
// replicates: its lease holds (the other voters renew it) and calls
// answer unavailable, until an operator fails over. The new home takes
// claims once the old lease and the replication bound have passed; until
// then a call answers ErrNoHome with that wait. What the old home took
// before it was cut off replays everywhere, and new claims carry the new
// home and epoch.
func TestHomesFailoverFromAnUnreachableHome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := newPlanet(t, 100*time.Millisecond, idemglobal.OneHome(east))
		p.warm(t)
		var runs atomic.Int32
		before := scope(t, "before")
		_, err := p.run(west, before, &runs)
		must.NoError(t, err)

		p.cutOff(east, true, east, west, south)
		_, err = p.run(south, scope(t, "during"), &runs)
		check.True(t, idem.IsUnavailable(err), "%v", err)
		check.NotErrorIs(t, err, idem.ErrNoHome, "the old home still holds its lease: nobody failed over")

		failedOver := time.Now()
		st, err := p.control.Failover(ctx, east, west, 0)
		must.NoError(t, err)
		check.Equal(t, west, st.Home)
		check.Equal(t, int64(2), st.Epoch)
		check.True(t, st.From.After(failedOver), "the new home waits: from %v", st.From)
		check.True(t, !st.From.After(failedOver.Add(homeLease+2*margin+replication)), "at most a lease, twice the margin and the bound: from %v", st.From)

		// The stores learn of it when the lease they know of ends.
		time.Sleep(homeLease)
		_, err = p.run(south, scope(t, "during"), &runs)
		check.ErrorIs(t, err, idem.ErrNoHome, "the new home waits")
		check.True(t, idem.IsUnavailable(err))
		check.ErrorContains(t, err, "takes claims in")

		time.Sleep(time.Until(st.From))
		for _, r := range []string{east, west, south} {
			res, err := p.run(r, before, &runs)
			must.NoError(t, err, r)
			check.Equal(t, idem.OutcomeReplayed, res.Outcome, "%s: the old home's claim reached the new home", r)
		}
		during := scope(t, "during")
		res, err := p.run(south, during, &runs)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, res.Outcome)
		check.Equal(t, int32(2), runs.Load(), "before, and during once")
		rec := p.record(t, west, during)
		check.Equal(t, west, attrS(rec, "origin"))
		check.Equal(t, "2", attrS(rec, "home_epoch"))

		status, err := p.control.Status(ctx, east)
		must.NoError(t, err)
		check.True(t, status.Held)
		check.Equal(t, west, status.Home)
		check.Len(t, status.Voters, 3)
	})
}

// The old home cut off from the other Regions (its replication paused,
// its clients reaching only its own endpoint, nobody else reaching it):
// its stores cannot renew its lease without a quorum, so it stops taking
// claims by the margin before the lease ends, and a holder's operation
// is cancelled then (ErrLeaseLost): before the new home, which a
// failover lets take claims only after that lease's end and the
// replication bound.
func TestHomesOldHomeStopsWhenCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := newPlanet(t, 100*time.Millisecond, idemglobal.OneHome(east))
		p.warm(t)
		must.NoError(t, p.g.Isolate(east))
		p.cutOff(west, true, east)
		p.cutOff(south, true, east)
		p.cutOff(east, true, west, south)
		cut := time.Now()

		var cancelled time.Time
		var holder error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, holder = p.stores[east].Run(ctx, scope(t, "long"), "fp", func(ctx context.Context) (idem.Response, error) {
				<-ctx.Done()
				cancelled = time.Now()
				return idem.Response{}, context.Cause(ctx)
			})
		})

		var lastClaim time.Time
		var runs atomic.Int32
		for i := 0; ; i++ {
			_, err := p.run(east, scope(t, fmt.Sprint("k", i)), &runs)
			if err != nil {
				check.ErrorIs(t, err, idem.ErrNoHome)
				break
			}
			lastClaim = time.Now()
			time.Sleep(500 * time.Millisecond)
		}
		wg.Wait()
		check.ErrorIs(t, holder, idem.ErrLeaseLost, "the holder was told its home lost the key")
		check.True(t, !lastClaim.After(cut.Add(homeLease)), "east claimed until %v, cut at %v", lastClaim, cut)
		check.True(t, !cancelled.After(cut.Add(homeLease)), "the holder was cancelled at %v", cancelled)

		st, err := p.control.Failover(ctx, east, west, 0)
		must.NoError(t, err)
		t.Logf("cut at %v, east's last claim %v, holder cancelled %v, new home from %v", cut, lastClaim.Sub(cut), cancelled.Sub(cut), st.From.Sub(cut))
		check.True(t, !st.From.Before(lastClaim.Add(replication)), "the new home takes claims from %v, after the old home's last (%v) and the bound", st.From, lastClaim)
		check.True(t, !st.From.Before(cancelled.Add(replication)), "and after the holder stopped")
	})
}

// The limit of any failover on MREC: a Region lost before its writes
// replicated takes them along (DynamoDB keeps them, and sends them once
// the Region is back). A key the lost home completed, whose record had
// not reached the new home, runs again there after the failover: the
// library cannot see it. When the Region comes back, its stream shows its
// record overwritten by the new home's (last writer wins keeps the later
// claim), and the detector reports the key, with both answers and both
// homes' epochs.
func TestHomesLostRegionsUnreplicatedKeysAreDetected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := newPlanet(t, time.Second, idemglobal.OneHome(east))
		p.warm(t)
		time.Sleep(2 * time.Second)
		eastStream := p.g.Region(east).Stream("idempotency")
		eastStream.Read() // what came before

		lost := scope(t, "lost")
		var runs atomic.Int32
		_, err := p.run(west, lost, &runs)
		must.NoError(t, err)
		must.NoError(t, p.g.Down(east)) // within the lag: its record stays in east
		p.cutOff(east, true, east, west, south)

		st, err := p.control.Failover(ctx, east, west, 0)
		must.NoError(t, err)
		time.Sleep(time.Until(st.From) + homeLease)
		res, err := p.run(south, lost, &runs)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, res.Outcome, "the new home never saw the lost home's claim")
		check.Equal(t, int32(2), runs.Load(), "the key ran twice: the lost Region's unreplicated claim")

		must.NoError(t, p.g.Up(east))
		p.cutOff(east, false, east, west, south)
		time.Sleep(2 * time.Second)
		var batch []events.DynamoDBEventRecord
		for _, r := range eastStream.Read() {
			batch = append(batch, r.DynamoDBEventRecord)
		}
		found := (&idemglobal.Detector{}).Detect(ctx, batch)
		must.Len(t, found, 1)
		got := found[0]
		check.Equal(t, lost.ID(), got.ScopeID)
		check.Equal(t, east, got.Overwritten.Origin)
		check.Equal(t, int64(1), got.Overwritten.Epoch)
		check.Equal(t, "ran in "+west, string(got.Overwritten.Body))
		check.Equal(t, west, got.Overwriting.Origin)
		check.Equal(t, int64(2), got.Overwriting.Epoch)
		check.Equal(t, "ran in "+south, string(got.Overwriting.Body))
	})
}

// An operation learns which Region's replica takes its writes (to stamp
// them: an outbox event's origin): the key's home with Homes, whichever
// Region the call came in, and after a failover the new home, under its
// epoch; a store's own Region with WithRegion.
func TestTheOperationKnowsWhichReplicaTakesItsWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		writer := func(s *idem.Store, key string) string {
			var got string
			_, err := s.Transact(ctx, scope(t, key), "fp", func(ctx context.Context) (idem.Effect, error) {
				r, e, ok := idemglobal.WriterOf(ctx)
				got = fmt.Sprint(r, " ", e, " ", ok)
				return idem.Effect{}, nil
			})
			must.NoError(t, err)
			return got
		}
		p := newPlanet(t, 100*time.Millisecond, idemglobal.OneHome(east))
		check.Equal(t, east+" 1 true", writer(p.stores[south], "a"))
		st, err := p.control.Failover(ctx, east, west, 0)
		must.NoError(t, err)
		time.Sleep(time.Until(st.From) + homeLease)
		check.Equal(t, west+" 2 true", writer(p.stores[south], "b"))

		local := newPlanet(t, 100*time.Millisecond, nil)
		check.Equal(t, south+" 0 true", writer(local.stores[south], "c"))
		plain, err := idem.NewStore(local.links[east+">"+east], "idempotency")
		must.NoError(t, err)
		check.Equal(t, " 0 false", writer(plain, "d"))
	})
}
