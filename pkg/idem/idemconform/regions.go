package idemconform

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// RegionMode is how the stores of a cell across Regions claim keys, on a
// simulated global table with multi-Region eventual consistency
// (idemtest.NewGlobal, MREC).
type RegionMode int

const (
	// Homes: each store claims every key in its home Region
	// (idem.WithHomes, every key homed in us-east-1 until a failover moves
	// it): the library's mode on MREC. Its cells fail on any violation,
	// double executions included.
	Homes RegionMode = iota + 1
	// Local: each store claims keys in its own Region (idem.WithRegion):
	// the baseline without affinity, which runs a key once per Region that
	// claims it within the replication lag. Its cells measure that (the
	// table's doubles), and fail only on a key run more than once that
	// idemglobal.Detector did not report from the Regions' streams.
	Local
	// MRSC: a simulated global table with multi-Region strong consistency
	// (idemtest.NewGlobal, MRSC): three replicas, or two and a witness,
	// each store in its own Region and told nothing (it learns the
	// table's kind), every Effect committed without a transaction. Its
	// cells fail on any violation, and on any TransactWriteItems,
	// TransactGetItems or UpdateTimeToLive call, a record whose writes
	// still wait after the final deliveries and a Store.Sweep, or a store
	// whose Learn does not say MRSC.
	MRSC
)

func (m RegionMode) String() string {
	switch m {
	case Homes:
		return "homes"
	case Local:
		return "local"
	case MRSC:
		return "mrsc"
	}
	return "RegionMode(" + strconv.Itoa(int(m)) + ")"
}

// The deployment of a cell across Regions: three Regions, every key homed
// in the first until a failover moves it to the second; the stores' home
// lease and replication bound (idem.Homes).
var regionNames = []string{"us-east-1", "us-west-2", "eu-west-1"}

const (
	homeRegion      = "us-east-1"
	failoverRegion  = "us-west-2"
	regionHomeLease = 6 * time.Second
	regionBound     = 2 * time.Second
	// disturbAfter is when a scenario disturbs the deployment, in the
	// thick of the workload; failoverAfter how long after that an
	// operator fails over.
	disturbAfter  = 120 * time.Millisecond
	failoverAfter = time.Second
)

// regionCell is a cell's mode and scenario across Regions.
type regionCell struct {
	mode     RegionMode
	scenario *scenario
}

func (r *regionCell) name() string { return "regions-" + r.mode.String() + "/" + r.scenario.name }

// scenario is what a cell across Regions goes through: a replication lag
// for every Region pair, and a disturbance during the workload.
type scenario struct {
	name string
	lag  time.Duration
	// homesOnly: the scenario is about the homes' failover.
	homesOnly bool
	// disturb acts on the deployment while the workload runs (nil:
	// nothing); clear ends what it began.
	disturb func(d *deployment)
	// unreachable: the home is out of reach of its holders for a while,
	// so an effect's completion may not land (Run's window).
	unreachable bool
	// detects: the home is lost with writes it had not replicated: the
	// keys they were for may run again in the new home (the limit of any
	// failover on MREC), and each must then be reported by the detector
	// (idemglobal.Detector) on the Regions' streams once it is back.
	detects bool

	// An MRSC scenario's table: two replicas and a witness (else three
	// replicas), and how long a write holds its items across the
	// Regions (the synchronous replication's round trip).
	witness      bool
	writeLatency time.Duration
	// arm sets the scenario's faults up, in a world whose workload has n
	// scopes (nil: none); skip says why it cannot apply to a way ("" or
	// nil: it does).
	arm  func(d *deployment, n int)
	skip func(*Way) string
	// budget is the fault budget the scenario must spend at least once
	// (a crash point reached, a conflict served), so that a cell whose
	// fault never showed fails.
	budget func(w *world) *atomic.Int64
}

// scenarios are the cells of a way across Regions.
var scenarios = []*scenario{
	{name: "lag-0", lag: 0},
	{name: "lag-100ms", lag: 100 * time.Millisecond},
	{name: "lag-1s", lag: time.Second},
	{name: "lag-10s", lag: 10 * time.Second},
	{
		// AWS FIS's pause-replication, every pair, for the whole workload.
		name: "paused", lag: 100 * time.Millisecond, homesOnly: true,
		disturb: func(d *deployment) {
			for _, from := range regionNames {
				for _, to := range regionNames {
					if from != to {
						_ = d.g.Pause(from, to)
					}
				}
			}
		},
	},
	{
		// A planned move of the home while the workload runs (follow the
		// sun, an evacuation): every Region reachable.
		name: "evacuate", lag: 100 * time.Millisecond, homesOnly: true,
		disturb: func(d *deployment) {
			time.Sleep(disturbAfter)
			d.failover()
		},
	},
	{
		// The home unreachable to every client, its replica still
		// replicating; an operator fails over.
		name: "home-unreachable", lag: 100 * time.Millisecond, homesOnly: true, unreachable: true,
		disturb: func(d *deployment) {
			time.Sleep(disturbAfter)
			d.cutClients(homeRegion, true)
			time.Sleep(failoverAfter)
			d.failover()
		},
	},
	{
		// The home lost (its endpoint answers 503, its replication stops)
		// with the writes of its last 100 ms; an operator fails over; it
		// comes back when the faults clear.
		name: "home-lost", lag: 100 * time.Millisecond, homesOnly: true, unreachable: true, detects: true,
		disturb: func(d *deployment) {
			time.Sleep(disturbAfter)
			_ = d.g.Down(homeRegion)
			d.cutClients(homeRegion, true)
			time.Sleep(failoverAfter)
			d.failover()
		},
	},
}

// The Regions of an MRSC cell: three replicas, or the first two and the
// third as the witness; the Region a scenario disturbs.
const (
	strongWriteLatency = 5 * time.Millisecond
	disturbedRegion    = "us-west-2"
	// regionIsolation is how long a Region stays cut from the others in
	// region-isolated, before it catches up.
	regionIsolation = 2 * time.Second
	// regionOutage is how long a Region stays down in region-down and
	// witness-replica-down: past every request's first attempts, and
	// shorter than a queue's receives before its dead-letter queue.
	regionOutage = 10 * time.Second
)

// noIntents is why a crash point among an Effect's writes does not apply
// to a way whose effect is outside DynamoDB.
const noIntents = "its effect is outside DynamoDB: no writes are recorded with its completion, so none is applied after it"

func writesOnly(wy *Way) string {
	if wy.Effect != Writes {
		return noIntents
	}
	return ""
}

// interrupt cuts a Region off in the thick of the workload (cut: the
// simulation's Down or Isolate, which leaves it how), for a while, then
// mends it.
func (d *deployment) interrupt(region, how string, cut, mend func(string) error, a time.Duration) {
	time.Sleep(disturbAfter)
	_ = cut(region)
	d.w.rec.mark("", "%s %s", region, how)
	time.Sleep(a)
	_ = mend(region)
	d.w.rec.mark("", "%s back", region)
}

// outage takes a Region down for regionOutage.
func (d *deployment) outage(region string) {
	d.interrupt(region, "down", d.g.Down, d.g.Up, regionOutage)
}

// injectAll injects a fault times in all, spread over the Regions'
// endpoints (at least once in each): as often as the suite's fault of
// that name injects it into one Region's store.
func (d *deployment) injectAll(op idemtest.Op, f idemtest.Fault, times int) {
	for _, r := range d.regions {
		d.g.Region(r).Inject(op, f, max(1, times/len(d.regions)))
	}
}

// strongScenarios are the cells of a way on MRSC: where its callers run
// (three replicas, two and a witness), what the Regions do (conflicts,
// a Region or the witness cut off or lost), and where a holder stops
// between the steps of a commit without a transaction (after the
// decision, between two writes, before the finish: the next caller or
// the sweep applies what is left).
var strongScenarios = []*scenario{
	{name: "three", writeLatency: strongWriteLatency},
	{name: "witness", witness: true, writeLatency: strongWriteLatency},
	{
		// Writes that meet another Region's write of their item are
		// refused: real ones (a longer round trip, the duplicates in
		// three Regions), and a storm of injected ones on every write.
		name: "conflict-storm", writeLatency: 20 * time.Millisecond,
		arm:    func(d *deployment, n int) { d.w.replicatedStorm.Store(int64(4 * n)) },
		budget: func(w *world) *atomic.Int64 { return &w.replicatedStorm },
	},
	{
		// The write lands and its answer is lost: the SDK retries it, and
		// its retry meets its own write (a claim, a decision, an applied
		// write, a finish).
		name: "lost-answer", writeLatency: strongWriteLatency,
		arm: func(d *deployment, n int) {
			for _, op := range []idemtest.Op{idemtest.OpPutItem, idemtest.OpUpdateItem, idemtest.OpDeleteItem} {
				d.injectAll(op, idemtest.LostAnswer, n/2)
			}
		},
	},
	{
		// The decision (the fenced completion that records the writes;
		// Run's completion for an effect outside DynamoDB) throttled past
		// the SDK's retries: nothing was written, the key is released or
		// its completion tried again.
		name: "decision-throttled", writeLatency: strongWriteLatency,
		arm: func(d *deployment, n int) { d.injectAll(idemtest.OpUpdateItem, idemtest.ThrottledPastRetries, n/2) },
	},
	{
		// A Region cut from the others for a while (its writes and
		// strongly consistent reads fail: 503 to its callers), then
		// reconnected: its replica catches up.
		name: "region-isolated", writeLatency: strongWriteLatency, unreachable: true,
		disturb: func(d *deployment) {
			d.interrupt(disturbedRegion, "isolated", d.g.Isolate, d.g.Reconnect, regionIsolation)
		},
	},
	{
		// A Region lost (its endpoint answers 503, it replicates nothing)
		// through the workload's first deliveries: the other two go on;
		// it comes back before a queue would dead-letter its consumers'
		// messages, and catches up.
		name: "region-down", writeLatency: strongWriteLatency, unreachable: true,
		disturb: func(d *deployment) { d.outage(disturbedRegion) },
	},
	{
		// The witness cut off: the two replicas are a quorum.
		name: "witness-isolated", witness: true, writeLatency: strongWriteLatency,
		disturb: func(d *deployment) {
			time.Sleep(disturbAfter)
			_ = d.g.Isolate(d.g.Witness())
			d.w.rec.mark("", "the witness isolated")
		},
	},
	{
		// A replica lost beside the witness: the other replica and the
		// witness are a quorum.
		name: "witness-replica-down", witness: true, writeLatency: strongWriteLatency, unreachable: true,
		disturb: func(d *deployment) { d.outage(disturbedRegion) },
	},
	{
		// The decision landed, its answer never came back: the holder's
		// environment stopped (every way: for Run, its completion).
		name: "crash-after-decision", writeLatency: strongWriteLatency,
		arm:    func(d *deployment, n int) { d.w.crashCompleted.Store(int64(n / 2)) },
		budget: func(w *world) *atomic.Int64 { return &w.crashCompleted },
	},
	{
		// The first of an Effect's two writes applied, the second not.
		name: "crash-between-writes", writeLatency: strongWriteLatency, skip: writesOnly,
		arm:    func(d *deployment, n int) { d.w.crashApplied.Store(int64(n / 2)) },
		budget: func(w *world) *atomic.Int64 { return &w.crashApplied },
	},
	{
		// Every write applied, the finish (the record told so) never sent.
		name: "crash-before-finish", writeLatency: strongWriteLatency, skip: writesOnly,
		arm:    func(d *deployment, n int) { d.w.crashFinish.Store(int64(n / 2)) },
		budget: func(w *world) *atomic.Int64 { return &w.crashFinish },
	},
}

// scenariosOf are the scenarios of mode.
func scenariosOf(mode RegionMode) []*scenario {
	if mode == MRSC {
		return strongScenarios
	}
	return scenarios
}

// RunRegions runs way through the suite's cells across Regions in mode,
// as a subtest of t named after it whose subtests,
// regions-<mode>/<scenario>, run in parallel, and prints its table
// (Table.Write) once they are done.
//
// A cell across Regions runs the workload of the fault "none" on a
// simulated global table of three Regions (idemtest.NewGlobal, MREC),
// with the concurrent duplicates of each key delivered in different
// Regions, each environment's store in its Region: at a replication lag
// of 0, 100 ms, 1 s and 10 s, and, in Homes, under paused replication, a
// planned move of the home, the home unreachable to clients and then
// failed over, and the home lost with writes it had not replicated, then
// failed over and back. In MRSC, on a table with multi-Region strong
// consistency instead (three Regions, or two and a witness): under
// replicated write conflicts, lost answers, a throttled decision, a
// Region isolated or lost, the witness cut off, and a holder that stops
// after the decision, between two writes or before the finish. Its
// history is checked as every cell's is.
func RunRegions(t *testing.T, way Way, mode RegionMode) {
	t.Helper()
	var tb Table
	t.Cleanup(func() { _ = tb.Write(os.Stdout) })
	tb.RunRegions(t, way, mode)
}

// RunRegions runs way through the cells across Regions in mode (see the
// function RunRegions), as a subtest of t named after it, and adds their
// lines to the table's section across Regions.
func (tb *Table) RunRegions(t *testing.T, way Way, mode RegionMode) {
	t.Helper()
	if err := way.check(); err != nil {
		t.Fatal(err)
	}
	if mode < Homes || mode > MRSC {
		t.Fatalf("idemconform: unknown RegionMode %d", mode)
	}
	tb.mu.Lock()
	if tb.start.IsZero() {
		tb.start = time.Now()
	}
	tb.mu.Unlock()
	wy := &way
	none := faults[0]
	t.Run(way.Name, func(t *testing.T) {
		t.Parallel()
		t.Run("regions-"+mode.String(), func(t *testing.T) {
			t.Parallel()
			for _, sc := range scenariosOf(mode) {
				if sc.homesOnly && mode != Homes {
					continue // a failover of the homes' (idem.WithHomes)
				}
				rc := &regionCell{mode: mode, scenario: sc}
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					if sc.skip != nil {
						if why := sc.skip(wy); why != "" {
							t.Skip(why)
						}
					}
					tb.record(runCell(t, cell{way: wy, fault: none, mode: "plain", regions: rc}))
				})
			}
		})
	})
}

// deployment is a cell's global table across Regions, and what its
// scenario does to it.
type deployment struct {
	w    *world
	g    *idemtest.Global
	cell *regionCell
	// regions are the Regions whose endpoints serve callers (an MRSC
	// witness serves none).
	regions []string
	// envs are the environments made so far, whose stores must say MRSC
	// (Learn) on such a table; armed is the scenario's fault budget as
	// armed.
	envs    []*env
	armed   int64
	cut     sync.Map // "from>to": the Region's clients cannot reach the endpoint
	streams map[string]*idemtest.Stream
	// operator is the environment an operator's commands run in, in the
	// Region a failover moves the home to.
	operator *env
	// disturbed is done once the scenario's disturbance has run.
	disturbed sync.WaitGroup

	mu      sync.Mutex
	newHome time.Time // when the new home took claims from
	execs   map[string][]string
	reports map[string][]idemtrace.DoubleExecutionInfo // by harness scope
	// forgiven are the scopes that ran again in the new home after the
	// old one was lost with their claims, each reported by the detector;
	// pending are violations of scopes that may be forgiven.
	forgiven map[string]bool
	pending  []pendingViolation
	// undetected are the keys of a Local cell that ran more than once
	// unreported: the detector's misses.
	undetected []string
}

// pendingViolation is a scope's violation that waits for the detector.
type pendingViolation struct{ scope, what string }

// later keeps a violation of scope's until the detector has spoken.
func (d *deployment) later(scope, what string) {
	d.mu.Lock()
	d.pending = append(d.pending, pendingViolation{scope, what})
	d.mu.Unlock()
}

// deferred records the violations kept by later, but those of the scopes
// forgiven.
func (d *deployment) deferred() {
	d.mu.Lock()
	pending := d.pending
	d.pending = nil
	d.mu.Unlock()
	for _, p := range pending {
		if !d.excused(p.scope) {
			d.w.violate("%s", p.what)
		}
	}
}

func newDeployment(t *testing.T, w *world) *deployment {
	rc := w.cell.regions
	cfg := idemtest.GlobalConfig{Regions: regionNames, Lag: rc.scenario.lag}
	if rc.mode == MRSC {
		cfg = idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: regionNames, WriteLatency: rc.scenario.writeLatency}
		if rc.scenario.witness {
			cfg.Regions, cfg.Witness = regionNames[:2], regionNames[2]
		}
	}
	g, err := idemtest.NewGlobal(cfg)
	if err != nil {
		t.Fatalf("a global table: %v", err)
	}
	t.Cleanup(g.Close)
	d := &deployment{w: w, g: g, cell: rc, regions: cfg.Regions, streams: map[string]*idemtest.Stream{}}
	for _, r := range d.regions {
		d.streams[r] = g.Region(r).Stream(idemTable)
	}
	d.operator = &env{id: 0, w: w, region: failoverRegion, ctx: context.Background(), kill: func() {}}
	w.server = g.Region(homeRegion)
	return d
}

// env gives an environment of its Region its client and its store's
// options, as the cell's mode has it.
func (d *deployment) env(e *env) (*dynamodb.Client, []idem.Option) {
	local := newClient(d.g.Region(e.region), &network{e: e, to: e.region})
	switch d.cell.mode {
	case Local:
		return local, []idem.Option{idem.WithRegion(e.region)}
	case MRSC:
		d.mu.Lock()
		d.envs = append(d.envs, e)
		d.mu.Unlock()
		return local, nil // the store learns the table's kind
	}
	return local, []idem.Option{idem.WithHomes(d.homes(e))}
}

// homes is the Homes of a store of environment e.
func (d *deployment) homes(e *env) idem.Homes {
	clients := map[string]idem.API{}
	for _, r := range regionNames {
		clients[r] = newClient(d.g.Region(r), &network{e: e, to: r})
	}
	return idem.Homes{
		Region: e.region, Clients: clients, Home: idemglobal.OneHome(homeRegion),
		Lease: regionHomeLease, ReplicationBound: regionBound,
	}
}

// isCut reports whether clients in from cannot reach the endpoint of to.
func (d *deployment) isCut(from, to string) bool {
	cut, _ := d.cut.Load(from + ">" + to)
	return cut == true
}

// cutClients cuts (or mends) every Region's clients from to's endpoint.
func (d *deployment) cutClients(to string, on bool) {
	for _, from := range regionNames {
		d.cut.Store(from+">"+to, on)
	}
	d.w.rec.mark("", "clients cut from %s: %v", to, on)
}

// failover is an operator's failover of the home to failoverRegion, from
// failoverRegion.
func (d *deployment) failover() {
	ctl := idemglobal.Control{Table: idemTable, Layout: d.w.layout, Homes: d.homes(d.operator), Margin: leaseMargin}
	st, err := ctl.Failover(context.Background(), homeRegion, failoverRegion, 0)
	if err != nil {
		d.w.violate("the failover from %s to %s: %v", homeRegion, failoverRegion, err)
		return
	}
	d.mu.Lock()
	d.newHome = st.From
	d.mu.Unlock()
	d.w.rec.mark("", "failover to %s (epoch %d): it takes claims from %s", st.Home, st.Epoch, st.From.Format("15:04:05.000"))
}

// start arms the scenario's faults, for a workload of n scopes, and
// begins its disturbance.
func (d *deployment) start(n int) {
	if arm := d.cell.scenario.arm; arm != nil {
		arm(d, n)
	}
	if b := d.cell.scenario.budget; b != nil {
		d.armed = b(d.w).Load()
	}
	if d.cell.scenario.disturb == nil {
		return
	}
	d.disturbed.Go(func() { d.cell.scenario.disturb(d) })
}

// clear ends the disturbance: every Region (and the witness) up,
// reachable and replicating, and no fault left in an endpoint.
func (d *deployment) clear() {
	d.disturbed.Wait()
	for _, r := range regionNames {
		d.cutClients(r, false)
		_ = d.g.Up(r)
		_ = d.g.Reconnect(r)
		for _, to := range regionNames {
			if r != to {
				_ = d.g.Resume(r, to)
			}
		}
	}
	for _, r := range d.regions {
		d.g.Region(r).ClearFaults()
	}
}

// finish delivers what replication still holds, and reads what the
// Regions' streams show; on MRSC, it sweeps the table and holds it to
// what the library promises there (strongFinish).
func (d *deployment) finish() {
	if n := d.g.Settle(); n > 0 {
		d.w.violate("%d replicated changes still pending once every Region is up and replicating", n)
	}
	if d.cell.mode == MRSC {
		// The detector is MREC's: a condition on MRSC sees every
		// Region's writes, and a replica that catches up shows merged
		// changes (a release and the next claim as one) that it would
		// read as an overwrite.
		d.strongFinish()
		return
	}
	det := &idemglobal.Detector{Layout: d.w.layout}
	reports := map[string][]idemtrace.DoubleExecutionInfo{}
	for _, r := range d.regions {
		var batch []events.DynamoDBEventRecord
		for _, rec := range d.streams[r].Read() {
			batch = append(batch, rec.DynamoDBEventRecord)
		}
		for _, info := range det.Detect(context.Background(), batch) {
			sc := d.scopeOf(info.ScopeID)
			reports[sc] = append(reports[sc], info)
		}
	}
	d.mu.Lock()
	d.reports = reports
	d.mu.Unlock()
}

// strongFinish holds an MRSC cell's table to what the library promises
// there, once the final deliveries are done: a Store.Sweep, past the
// time after which a completion's writes count as stranded, applies what
// no caller did; then no record holds writes waiting, no Region was sent
// a transaction or a TTL change, and every live environment's store, and
// a new one in each Region, says the table is MRSC.
func (d *deployment) strongFinish() {
	w, ctx := d.w, context.Background()
	time.Sleep(2 * time.Minute) // past SweepOptions.Stranded's minute
	sweeper, err := idem.NewStore(w.admin, idemTable, idem.WithLayout(w.layout))
	if err == nil {
		_, err = sweeper.Sweep(ctx, idem.SweepOptions{})
	}
	if err != nil {
		w.violate("the sweep after the final deliveries: %v", err)
	}
	intents := w.layout.WithDefaults().Attributes.Intents
	p := dynamodb.NewScanPaginator(w.admin, &dynamodb.ScanInput{TableName: aws.String(idemTable), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			w.violate("read the idempotency table: %v", err)
			break
		}
		for _, item := range page.Items {
			if l, ok := item[intents].(*types.AttributeValueMemberL); ok {
				id, _ := w.layout.ID(item)
				w.violate("record %s: %d writes still waiting after the final deliveries and a sweep", id, len(l.Value))
			}
		}
	}
	for _, r := range d.regions {
		for _, op := range []idemtest.Op{idemtest.OpTransactWriteItems, idemtest.OpTransactGetItems, idemtest.Op("UpdateTimeToLive")} {
			if n := d.g.Region(r).Calls(op); n > 0 {
				w.violate("%s was sent %d %s requests: MRSC supports none", r, n, op)
			}
		}
		s, err := idem.NewStore(newClient(d.g.Region(r), nil), idemTable, idem.WithLayout(w.layout))
		if err != nil {
			w.violate("a store in %s: %v", r, err)
			continue
		}
		if info, err := s.Learn(ctx); err != nil || info.Kind != idemtable.MRSC || info.Region != r {
			w.violate("a new store in %s learned %+v, %v: want MRSC in %s", r, info, err, r)
		}
	}
	d.mu.Lock()
	envs := slices.Clone(d.envs)
	d.mu.Unlock()
	for _, e := range envs {
		if e.dead.Load() {
			continue
		}
		if info, err := e.store.Learn(ctx); err != nil || info.Kind != idemtable.MRSC {
			w.violate("the store of env %d in %s says %+v, %v: want MRSC", e.id, e.region, info, err)
		}
	}
	if b := d.cell.scenario.budget; b != nil && b(w).Load() == d.armed {
		w.violate("the scenario's fault never showed: none of its %d was spent", d.armed)
	}
}

// scopeOf is the harness's scope (caller|key) of a record's scope ID,
// whose encoding ends with the principal and the key, each prefixed by
// its length ("...|5:alice|2:k0"); the ID itself when no actor's matches.
func (d *deployment) scopeOf(id string) string {
	for _, a := range d.w.actors {
		if strings.HasSuffix(id, fmt.Sprintf("|%d:%s|%d:%s", len(a.caller), a.caller, len(a.key), a.key)) {
			return a.scope()
		}
	}
	return id
}

// check holds a scope's executions, n of them, excused in Run's window,
// to what the detector reported of it: where the home was lost (detects),
// a scope that ran more than once must be reported, and a reported scope
// is forgiven what follows from the lost home's claim that the new home
// never saw (it ran again there, or another payload's call completed it:
// the limit of a failover); in every cell, a report that a completed
// execution was overwritten must be of a scope that ran more than once.
func (d *deployment) check(scope string, n, excused int) {
	w := d.w
	reports := d.reported(scope)
	if n > 1+excused {
		if len(reports) > 0 {
			w.detected++
		} else if d.cell.mode == Local {
			// Every such key's claim was overwritten, in its Region at
			// least, by a claim that had not seen it: the detector must
			// say so (a Local cell fails on nothing else).
			d.mu.Lock()
			d.undetected = append(d.undetected, fmt.Sprintf("%s ran %d times, and the detector reported nothing on the Regions' streams", scope, n))
			d.mu.Unlock()
		}
	}
	for _, r := range reports {
		if r.Overwritten.Status == "COMPLETED" && n < 2 {
			w.violate("%s: the detector reported in %s that a completed execution (%s, epoch %d) was overwritten by another (%s, epoch %d), but it ran %d times",
				scope, r.Region, r.Overwritten.Origin, r.Overwritten.Epoch, r.Overwriting.Origin, r.Overwriting.Epoch, n)
		}
	}
	if !d.cell.scenario.detects {
		return
	}
	if len(reports) == 0 {
		if n > 1+excused {
			w.violate("%s: the effect ran %d times after the home was lost, and the detector reported nothing on the Regions' streams", scope, n)
		}
		return
	}
	d.mu.Lock()
	if d.forgiven == nil {
		d.forgiven = map[string]bool{}
	}
	d.forgiven[scope] = true
	d.mu.Unlock()
	w.rec.mark(scope, "ran %d times: the lost home's claim, which the new home did not see, reported by the detector in %s", n, reports[0].Region)
}

// excused reports whether scope ran again after the home was lost, as the
// detector reported.
func (d *deployment) excused(scope string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.forgiven[scope]
}

// reported is what the detector reported of a scope.
func (d *deployment) reported(scope string) []idemtrace.DoubleExecutionInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reports[scope]
}

// effectWrite is an execution's effect across Regions: an item of its own.
func (d *deployment) effectWrite(scope string, exec int) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(d.w.effects),
		Item: map[string]types.AttributeValue{
			"id":    &types.AttributeValueMemberS{Value: scope + "#" + strconv.Itoa(exec)},
			"scope": &types.AttributeValueMemberS{Value: scope},
		},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	}}
}

// committed counts a scope's effect items, in the home's replica once
// replication has settled.
func (d *deployment) committed(scope string) (int, []string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.execs == nil {
		d.execs = map[string][]string{}
		p := dynamodb.NewScanPaginator(d.w.admin, &dynamodb.ScanInput{TableName: aws.String(d.w.effects), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				d.execs = nil
				return 0, nil, err
			}
			for _, it := range page.Items {
				id, _ := it["id"].(*types.AttributeValueMemberS)
				sc, _ := it["scope"].(*types.AttributeValueMemberS)
				if id == nil || sc == nil {
					continue
				}
				d.execs[sc.Value] = append(d.execs[sc.Value], strings.TrimPrefix(id.Value, sc.Value+"#"))
			}
		}
	}
	execs := slices.Sorted(slices.Values(d.execs[scope]))
	return len(execs), execs, nil
}
