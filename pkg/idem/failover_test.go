package idem_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// operator is a Control whose clients reach each voter through a link of
// its own ("op>region"), so that a test can cut the operator off from
// some voters and not the stores.
func (p *planet) operator() idemglobal.Control {
	fast := func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
	}
	clients := map[string]idem.API{}
	for _, r := range p.g.Regions() {
		clients[r] = &link{API: p.g.Region(r).HandlerClient(fast), p: p, name: "op>" + r}
	}
	c := p.control
	c.Homes.Clients = clients
	return c
}

// A failover that reached too few voters leaves the old home in place,
// which goes on renewing its lease with the voters the failover missed,
// past the failover's worst-case From. When that lease later lapses (the
// old home cut off from those voters), a store elsewhere converts the
// lapsed voters to the failed failover's epoch, whose From has long
// passed: the new home takes claims as soon as the old lease ends, with
// no replication bound, and a key the old home claimed just before is
// run again while its claim is still on the way, though replication kept
// within the bound.
func TestHomesFailedFailoverThenLapsedLeaseWaitsTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := newPlanet(t, replication, idemglobal.OneHome(east))
		p.warm(t)
		op := p.operator()

		// The operator reaches only east's voter: one of three switched,
		// two needed.
		p.cutOff(west, true, "op")
		p.cutOff(south, true, "op")
		_, err := op.Failover(ctx, east, west, 0)
		check.ErrorIs(t, err, idemglobal.ErrFailover)
		p.cutOff(west, false, "op")
		p.cutOff(south, false, "op")

		// East goes on serving, renewing epoch 1 with west's and south's
		// voters, well past the failed failover's worst-case From.
		var runs atomic.Int32
		for i := range 30 {
			_, err := p.run(east, scope(t, "busy"+strconv.Itoa(i)), &runs)
			must.NoError(t, err, i)
			time.Sleep(time.Second)
		}
		st, err := op.Status(ctx, east)
		must.NoError(t, err)
		must.True(t, st.Held, "epoch 1 still held")
		check.Equal(t, int64(1), st.Epoch)
		check.Equal(t, east, st.Home)

		// East's stores lose the other voters (not the replication, which
		// keeps within the bound): they take claims on the lease they know
		// until its margin.
		p.cutOff(west, true, east)
		p.cutOff(south, true, east)
		time.Sleep(time.Until(st.Until) - margin - 500*time.Millisecond)
		k := scope(t, "k")
		res, err := p.run(east, k, &runs)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, res.Outcome)

		time.Sleep(time.Until(st.Until) + 100*time.Millisecond)
		before := runs.Load()
		res, err = p.run(south, k, &runs)
		if err == nil {
			check.NotEqual(t, idem.OutcomeExecuted, res.Outcome, "south ran the key east had claimed %v before", margin+600*time.Millisecond)
		}
		check.Equal(t, before, runs.Load(), "the key ran in east and again in its new home: %v, %v", res.Outcome, err)
		check.ErrorIs(t, err, idem.ErrNoHome, "the new home waits the bound after the old lease")

		time.Sleep(margin + replication)
		res, err = p.run(south, k, &runs)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, res.Outcome, "east's claim reached the new home")
		check.Equal(t, before, runs.Load())
	})
}

// A voter's Region lost the way Regions are often lost: its endpoint
// answers nothing, and each request to it waits for the client's
// timeout. The home (east) and the third voter are up, a quorum: calls
// homed in east should not wait for the lost voter, nor lose the home's
// lease because a renewal waited for it.
func TestHomesABlackholedVoterDoesNotStallTheHome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPlanet(t, 100*time.Millisecond, idemglobal.OneHome(east))
		p.warm(t)
		const timeout = 30 * time.Second // the SDK's default dial timeout
		for _, from := range []string{east, west, south} {
			p.cut.Store(from+">"+south, time.Duration(timeout))
		}
		var runs atomic.Int32
		var slowest time.Duration
		failed := 0
		for i := range 40 {
			start := time.Now()
			_, err := p.run(east, scope(t, "k"+strconv.Itoa(i)), &runs)
			if err != nil {
				failed++
			}
			slowest = max(slowest, time.Since(start))
			time.Sleep(time.Second)
		}
		check.Equal(t, 0, failed, "calls failed while a quorum of voters was up")
		check.True(t, slowest < homeLease/2, "a call waited %v for the lost voter", slowest)
	})
}

// A claim the old home's store routed before its stop point (the margin
// before the lease it knows ends) but whose request the SDK retried,
// landing seconds later: after a failover's new home took the key, and
// before the new home's claim reached the old home's replica (within the
// replication bound). The old home's claim wins there and its operation
// runs: the key runs in both homes. A write routed to a home must not
// land after the holder's stop point.
func TestHomesARetriedClaimDoesNotLandAfterTheStopPoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := newPlanet(t, 100*time.Millisecond, idemglobal.OneHome(east))
		p.warm(t)
		must.NoError(t, p.g.SetLag(west, east, replication)) // within the bound
		st, err := p.control.Status(ctx, east)
		must.NoError(t, err)
		must.True(t, st.Held)
		// East's stores lose the other voters; an operator fails over.
		p.cutOff(west, true, east)
		p.cutOff(south, true, east)
		moved, err := p.control.Failover(ctx, east, west, 0)
		must.NoError(t, err)

		var runs atomic.Int32
		k := scope(t, "k")
		time.Sleep(time.Until(st.Until) - margin - 500*time.Millisecond)
		p.slowPut.Store(east+">"+east, 2*margin+replication+time.Second)
		var wg sync.WaitGroup
		var eastErr error
		wg.Go(func() { _, eastErr = p.run(east, k, &runs) })

		time.Sleep(time.Until(moved.From) + 100*time.Millisecond)
		res, err := p.run(south, k, &runs)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, res.Outcome, "the new home runs the key")
		wg.Wait()
		check.Equal(t, int32(1), runs.Load(), "the key ran in both homes (east: %v)", eastErr)
		check.True(t, idem.IsUnavailable(eastErr), "east's call answers unavailable: %v", eastErr)
	})
}
