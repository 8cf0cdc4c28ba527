package idemconform

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// The timings of every cell, in fake time.
const (
	// invocationTimeout is a Lambda function's timeout: the deadline of
	// every invocation, after which the environment is stopped.
	invocationTimeout = 10 * time.Second
	// leaseMargin is the stores' margin, and noDeadlineLease their lease
	// for a holder whose context has no deadline (renewed by heartbeat).
	leaseMargin     = time.Second
	noDeadlineLease = 6 * time.Second
	// storeWait is the wait of the wait mode.
	storeWait = 3 * time.Second
	// visibilityTimeout is the queue's: longer than a lease.
	visibilityTimeout = 30 * time.Second
	maxReceives       = 5
	// asyncRetryDelays are Lambda's retries of a failed asynchronous
	// invocation.
	firstAsyncRetry  = time.Minute
	secondAsyncRetry = 2 * time.Minute
	// requestAttempts bounds an HTTP client's (or a caller's) attempts.
	requestAttempts = 8
	// effectWork is how long an effect takes: long enough for duplicates
	// to meet it in flight.
	effectWork = 150 * time.Millisecond
	// consumers is how many batches a queue's event source mapping
	// invokes the function with at once.
	consumers = 4
	// environments bounds the environments a cell runs at once: Lambda
	// scales out to the concurrent invocations (a queue's consumers
	// bound its own).
	environments = 64
	// batchSize is the queue's batch size.
	batchSize = 3
)

// The names a cell's records live under.
const (
	idemTable    = "idempotency"
	effectsTable = "effects"
	operation    = "POST /orders"
)

// layouts are the idempotency table's layouts (as pkg/idem's own tests
// name them).
var layouts = []struct {
	name   string
	layout idemtable.Layout
}{
	{"default", idemtable.Layout{}},
	{"single", idemtable.Layout{
		PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY", KeyPrefix: "IDEM#",
		Attributes: idemtable.Attributes{
			Status: "st", Fingerprint: "fp", LeaseToken: "lt", LeaseExpiresAt: "lexp",
			ResponseStatus: "rs", ResponseHeaders: "rh", ResponseBody: "rb", ResponseMeta: "rm", Format: "fmt",
			CreatedAt: "cat", CompletedAt: "done_at", CompletionID: "cid", ExpiresAt: "ttl",
		},
	}},
	{"prefix", idemtable.Layout{KeyPrefix: "IDEMPOTENCY#"}},
}

// modes are the stores' modes.
var modes = []string{"plain", "wait", "cache"}

// cell is one run's configuration.
type cell struct {
	way    *Way
	fault  *fault
	layout int // into layouts
	mode   string
	// regions, for a cell across Regions (RunRegions): its mode and
	// scenario; fault is then "none", on the default layout.
	regions *regionCell
}

func (c cell) name() string {
	if c.regions != nil {
		return c.way.Name + "/" + c.regions.name()
	}
	return c.way.Name + "/" + c.fault.name + "/" + layouts[c.layout].name + "-" + c.mode
}

// actor is one delivery source of one request: an HTTP client's request,
// an SQS message, an asynchronous event. Its attempts are sequential.
type actor struct {
	id      int
	caller  string
	key     string
	variant string
	// otherVariant: another actor sends this scope another payload.
	otherVariant bool
	// poison: a queue message the decode function refuses.
	poison bool
	// emptyPrincipal: the caller's principal function names nobody.
	emptyPrincipal bool
	// region is the Region the actor's source delivers in (a cell across
	// Regions; "" otherwise).
	region string
	req    *Request

	// What the source made of it: attempts, last and oks are set by
	// invoke under world.mu (a queue may deliver one message twice at
	// once); the rest by its source.
	attempts int
	last     outcome
	settled  bool // got a definitive answer: the source stops
	oks      int  // successes (and acknowledged not-recorded answers)
	dead     bool // dead-lettered (queue, asynchronous events)
}

func (a *actor) scope() string { return a.caller + "|" + a.key }

func (a *actor) msgID() string { return fmt.Sprintf("m%d-%s-%s-%s", a.id, a.caller, a.key, a.variant) }

// world is one cell's universe, built inside its synctest bubble.
type world struct {
	cell   cell
	server *idemtest.Server
	admin  *dynamodb.Client // the harness's own client: never faulted
	rec    *recorder
	// pools are the environments, by Region ("" in a single Region).
	pools  map[string]*pool
	layout idemtable.Layout
	// regions is the deployment of a cell across Regions, nil otherwise.
	regions *deployment
	// effects is where DynamoDB effects are written: their own table, or
	// the idempotency table itself in the single-table layout.
	effects string

	rngMu sync.Mutex
	rng   *rand.Rand

	// bg is every invocation's goroutine, abandoned ones included.
	bg sync.WaitGroup

	mu         sync.Mutex
	execs      map[string][]*execution // by scope
	nExec      int
	violations []string
	actors     []*actor
	// doubles counts the scopes whose effect ran more than once outside
	// Run's window; detected, across Regions, those the detector
	// reported.
	doubles, detected int

	// The faults in force; cleared before the final deliveries.
	faultsOff      atomic.Bool
	crashBefore    atomic.Int64 // budgets of crashes at each point
	crashAfter     atomic.Int64
	crashCompleted atomic.Int64
	renewalDelay   atomic.Int64 // a renewal's trip to the store, ns
	renewalFails   atomic.Bool
	slowFirst      atomic.Int64 // the first execution of each scope takes this long, ns
	noDeadline     bool         // ways that can run without a deadline do
	// refuseFirst: the completion of each scope's first execution is
	// refused on every attempt, for as long as its lease lasts.
	refuseFirst atomic.Bool
	// On a table without transactions (MRSC): crashes after an Effect's
	// first write applied, and before its finish is sent; and writes
	// refused as meeting another Region's (ReplicatedWriteConflict).
	crashApplied, crashFinish, replicatedStorm atomic.Int64

	// The refusals for good (a transaction cancelled with ValidationError)
	// the store served, those of them whose transaction was one key's
	// (its record and its write), and those a source was told of as a
	// failure.
	refusalsServed, refusalsOneKey, refusalsTold atomic.Int64
}

func newWorld(t *testing.T, c cell) *world {
	h := fnv.New64a()
	_, _ = h.Write([]byte(c.name()))
	w := &world{
		cell: c, rec: &recorder{}, layout: layouts[c.layout].layout,
		rng:   rand.New(rand.NewPCG(h.Sum64(), 26)),
		execs: map[string][]*execution{},
	}
	if c.regions != nil {
		w.regions = newDeployment(t, w)
	} else {
		w.server = idemtest.NewServer()
	}
	w.admin = newClient(w.server, nil)
	ctx := context.Background()
	if err := idemtable.Create(ctx, w.admin, idemTable, w.layout); err != nil {
		t.Fatalf("create the idempotency table: %v", err)
	}
	w.effects = idemTable
	if w.layout.SortKey == "" {
		w.effects = effectsTable
		if _, err := w.admin.CreateTable(ctx, idemtable.Input(effectsTable, idemtable.Layout{})); err != nil {
			t.Fatalf("create the effects table: %v", err)
		}
	}
	w.pools = map[string]*pool{}
	for _, r := range w.regionNames() {
		w.pools[r] = &pool{w: w, region: r, idle: make(chan *env, environments)}
	}
	return w
}

// regionNames are the Regions environments run in: "" alone in a single
// Region.
func (w *world) regionNames() []string {
	if w.regions == nil {
		return []string{""}
	}
	return w.regions.regions
}

// poolOf is the pool of the environments that deliver a's requests.
func (w *world) poolOf(a *actor) *pool { return w.pools[a.region] }

// poolAt is the pool of a source's i-th consumer (a queue's consumer, a
// stream's shard): Regions in turn.
func (w *world) poolAt(i int) *pool {
	names := w.regionNames()
	return w.pools[names[i%len(names)]]
}

func (w *world) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return time.Duration(w.rng.Int64N(int64(d)))
}

func (w *world) violate(format string, args ...any) {
	w.mu.Lock()
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

// take spends one of a fault's budget; none once the faults are off.
func (w *world) take(budget *atomic.Int64) bool {
	if w.faultsOff.Load() {
		return false
	}
	for {
		n := budget.Load()
		if n <= 0 {
			return false
		}
		if budget.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// clearFaults turns every fault off: the store's, the network's, the
// crash budgets and slow effects.
func (w *world) clearFaults() {
	w.faultsOff.Store(true)
	if w.regions != nil {
		w.regions.clear()
		return
	}
	w.server.ClearFaults()
	w.server.SetTransactionLatency(0)
}

// principal is what a caller's principal function returns.
func (a *actor) principal() string {
	if a.emptyPrincipal {
		return ""
	}
	return a.caller
}

func (a *actor) order() Payload { return Payload{Key: a.key, Variant: a.variant} }

// env is one simulated Lambda environment: its own client (its own
// network to the store) and store (its own cache).
type env struct {
	id     int
	w      *world
	region string // the Region it runs in ("" in a single Region)
	db     *dynamodb.Client
	store  *idem.Store
	ctx    context.Context
	kill   context.CancelFunc
	dead   atomic.Bool
	// busy is the call it is running; crash abandons it.
	busy atomic.Pointer[call]
}

func (w *world) newEnv(id int, region string) *env {
	e := &env{id: id, w: w, region: region}
	e.ctx, e.kill = context.WithCancel(context.Background())
	var opts []idem.Option
	if w.regions != nil {
		e.db, opts = w.regions.env(e)
	} else {
		e.db = newClient(w.server, &network{e: e})
	}
	opts = append(opts,
		idem.WithLayout(w.layout),
		idem.WithLease(noDeadlineLease, leaseMargin),
		// The store's trace reports each call's outcome: a success the
		// way in answered may be one the store could not record.
		idem.WithTrace(&idemtrace.Trace{CallDone: func(ctx context.Context, i idemtrace.CallDoneInfo) {
			if c := callOf(ctx); c != nil {
				c.done(idem.Outcome(i.Outcome), i.Err)
			}
		}}),
	)
	switch w.cell.mode {
	case "wait":
		opts = append(opts, idem.WithWait(storeWait))
	case "cache":
		opts = append(opts, idem.WithCache(64, 0))
	}
	s, err := idem.NewStore(e.db, idemTable, opts...)
	if err != nil {
		panic(err)
	}
	e.store = s
	return e
}

// crash stops the environment: its network is cut, its invocation's
// context is cancelled and its output will be unknown. The call it runs
// is marked crashed before the kill: the kill ends that call's invoke,
// which then clears busy, and the checker excuses an effect run before
// a crash only in a call marked crashed.
func (e *env) crash(why string) {
	if !e.dead.CompareAndSwap(false, true) {
		return
	}
	if c := e.busy.Load(); c != nil {
		c.crashed.Store(true)
		for _, a := range c.actors {
			e.w.rec.mark(a.scope(), "env %d stops: %s", e.id, why)
		}
	}
	e.kill()
}

// pool hands out environments, one invocation at a time each, at most
// `environments` at once; a crashed one is replaced by a fresh one (a
// cold start).
type pool struct {
	w      *world
	region string
	idle   chan *env
	mu     sync.Mutex
	live   int
	next   int
}

func (p *pool) acquire() *env {
	select {
	case e := <-p.idle:
		return e
	default:
	}
	p.mu.Lock()
	if p.live < environments {
		p.live++
		p.next++
		id := p.next
		p.mu.Unlock()
		return p.w.newEnv(id, p.region)
	}
	p.mu.Unlock()
	return <-p.idle
}

func (p *pool) release(e *env) {
	if e.dead.Load() {
		p.mu.Lock()
		p.next++
		id := p.next
		p.mu.Unlock()
		e = p.w.newEnv(id, p.region)
	}
	p.idle <- e
}

// fresh is an environment of its own, outside the pool.
func (p *pool) fresh() *env {
	p.mu.Lock()
	p.next++
	id := p.next
	p.mu.Unlock()
	return p.w.newEnv(id, p.region)
}

// call is one invocation of a way in, in one environment, for one
// actor (a queue's batch: several).
type call struct {
	w       *world
	env     *env
	actors  []*actor
	crashed atomic.Bool

	mu sync.Mutex
	// execs are the executions this call ran, by actor.
	execs map[*actor]*execution
	// last is the execution whose completion comes next.
	last *execution
	// reported is the last outcome the store's trace reported in this
	// call (its CallDone).
	reported *reported
	// applied counts the writes the call applied after a decision (MRSC).
	applied int
}

type reported struct {
	outcome idem.Outcome
	err     error
}

type callKey struct{}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

func (c *call) done(o idem.Outcome, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reported = &reported{o, err}
}

// candidate is the answer of a's execution in c, if it produced one.
func (c *call) candidate(a *actor) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ex := c.execs[a]; ex != nil {
		return ex.answer
	}
	return ""
}

// ranUnrecorded reports whether a's execution in c applied its effect
// and its completion did not land.
func (c *call) ranUnrecorded(a *actor) bool {
	ex := c.execOf(a)
	if ex == nil {
		return false
	}
	c.w.mu.Lock()
	applied := ex.applied
	c.w.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	return applied && !ex.landed
}

func (c *call) execOf(a *actor) *execution {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.execs[a]
}

// invoke runs one invocation of the cell's way in an environment of the
// pool, for actors, recording one operation per actor, and returns what
// each actor's source saw: the way's answers, or unknown where the
// environment stopped. With a deadline (a Lambda invocation), the
// environment is stopped at it if the way has not answered, as Lambda
// stops a function that times out.
func (w *world) invoke(e *env, actors []*actor, sweep bool) []outcome {
	c := &call{w: w, env: e, actors: actors, execs: map[*actor]*execution{}}
	e.busy.Store(c)
	defer e.busy.Store(nil)
	ops := make([]*op, len(actors))
	reqs := make([]*Request, len(actors))
	for i, a := range actors {
		w.mu.Lock()
		a.attempts++
		attempt := a.attempts
		w.mu.Unlock()
		ops[i] = w.rec.begin(a, attempt, e.id)
		ops[i].sweep = sweep
		reqs[i] = a.req
	}
	ctx := context.WithValue(e.ctx, callKey{}, c)
	var done atomic.Bool
	if w.hasDeadline() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, invocationTimeout)
		defer cancel()
		timer := time.AfterFunc(invocationTimeout, func() {
			if !done.Load() {
				e.crash("the invocation timed out")
			}
		})
		defer timer.Stop()
	}
	// An invocation whose environment stops is abandoned: its source
	// hears of it at once, while what it was doing runs on, cut off.
	inv := &Invocation{w: w, c: c, reqs: reqs}
	result := make(chan []Answer, 1)
	w.bg.Go(func() { result <- w.cell.way.Deliver(ctx, inv) })
	var got []Answer
	stopped := false
	select {
	case got = <-result:
	case <-e.ctx.Done():
		stopped = true
	}
	done.Store(true)
	outs := make([]outcome, len(actors))
	for i, a := range actors {
		var out outcome
		switch {
		case stopped || c.crashed.Load() || e.dead.Load():
			out = outcome{class: unknown, detail: "the environment stopped during the invocation"}
			out.candidate = c.candidate(a)
		case len(got) != len(actors):
			out = outcome{class: Unclassified, detail: fmt.Sprintf("the way answered %d of the invocation's %d requests", len(got), len(actors))}
		default:
			out = w.outcomeOf(c, got[i], len(actors) == 1)
		}
		if out.class != unknown && !acked(out) && c.ranUnrecorded(a) {
			// Whatever the way in made of it: the effect ran and its
			// completion did not land, so the delivery is done, and a
			// source told otherwise delivers it again.
			out.unacked = true
		}
		if out.class == NotRecorded && !out.unacked && !out.fencedOut {
			if ex := c.execOf(a); ex != nil {
				w.mu.Lock()
				ex.ackedNotRecorded = true
				w.mu.Unlock()
			}
		}
		w.rec.end(ops[i], out)
		w.mu.Lock()
		a.last = out
		if acked(out) {
			a.oks++
		}
		w.mu.Unlock()
		outs[i] = out
	}
	return outs
}

// outcomeOf reads a way's answer. A single request's success whose
// completion the store reported not recorded (its trace's CallDone) is
// NotRecorded: the source was told the effect's answer, which the store
// does not hold.
func (w *world) outcomeOf(c *call, ans Answer, single bool) outcome {
	out := outcome{class: ans.Class, answer: ans.Body, detail: ans.Detail, retryAfter: ans.RetryAfter, checkpoint: ans.Checkpoint, untried: ans.Untried}
	if out.class == OK && single {
		c.mu.Lock()
		h := c.reported
		c.mu.Unlock()
		if h != nil && errors.Is(h.err, idem.ErrNotRecorded) {
			out.class, ans.Err, out.detail = NotRecorded, h.err, h.err.Error()
		}
	}
	switch out.class {
	case InFlight, Unavailable:
		if out.retryAfter <= 0 {
			out.retryAfter = time.Second
		}
	case NotRecorded:
		out.unacked = ans.Redeliver
		out.fencedOut = errors.Is(ans.Err, idem.ErrLeaseLost)
		out.outOfTime = errors.Is(ans.Err, context.DeadlineExceeded)
		if ans.Outcome != "" && ans.Outcome != idem.OutcomeNotRecorded && (ans.Outcome != idem.OutcomeLeaseLost || !out.fencedOut) {
			out.wrong = fmt.Sprintf("an answer of an effect not recorded with Outcome %q (intended: %q)", ans.Outcome, idem.OutcomeNotRecorded)
		}
	case Failed:
		out.again = ans.Redeliver
		if refusedForGood(ans.Err) {
			if !w.cell.fault.refusal {
				out.class = Unclassified
				out.detail = "a transaction refused for good where no fault refuses one: " + out.detail
				break
			}
			w.refusalsTold.Add(1)
		}
	case OK, LeaseLost, KeyReuse, Refused, Unclassified:
	default:
		out.class, out.detail = Unclassified, fmt.Sprintf("an answer of class %q: %s", ans.Class, out.detail)
	}
	return out
}

// hasDeadline reports whether this cell's invocations run with a
// deadline: a Lambda's; a way that runs either way runs without one in
// the cells of renewals (which only a holder without one makes).
func (w *world) hasDeadline() bool {
	switch w.cell.way.Deadline {
	case DeadlineNone:
		return false
	case DeadlineEither:
		return !w.noDeadline
	}
	return true
}

// canRunWithoutDeadline reports whether the way runs without a deadline.
func canRunWithoutDeadline(wy *Way) bool { return wy.Deadline != DeadlineLambda }

// leaseWhileRunning reports whether the effect runs under a lease the
// store holds (Transact and the batches claim in their commit).
func leaseWhileRunning(wy *Way) bool { return wy.Effect == Outside || wy.ClaimFirst }

// execution is one run of an operation's effect (or, for a DynamoDB
// effect, of the function computing its writes).
type execution struct {
	n       int
	actor   *actor
	env     *env
	call    *call
	start   time.Time
	startAt int64 // in the recorder's sequence
	// applied: an outside effect happened (the counter moved), at.
	applied   bool
	appliedAt int64
	appliedT  time.Time
	// landed: its completion reached the store and succeeded.
	landed           bool
	ackedNotRecorded bool
	reply            Reply
	// answer is the reply's JSON: an unknown outcome's candidate.
	answer string
}

// begin starts an execution for a in c.
func (w *world) begin(c *call, a *actor) *execution {
	w.mu.Lock()
	w.nExec++
	ex := &execution{n: w.nExec, actor: a, env: c.env, call: c, start: time.Now(), startAt: w.rec.seq.Add(1)}
	ex.reply = Reply{Caller: a.caller, Key: a.key, Variant: a.variant, Exec: ex.n}
	ex.answer = ex.reply.JSON()
	w.execs[a.scope()] = append(w.execs[a.scope()], ex)
	w.mu.Unlock()
	c.mu.Lock()
	c.execs[a], c.last = ex, ex
	c.mu.Unlock()
	return ex
}

// isFirst reports whether ex is its scope's first execution.
func (w *world) isFirst(ex *execution) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.execs[ex.actor.scope()][0] == ex
}

// flaky is the scope whose first execution fails on purpose.
const flakyKey = "k1"

// ErrDeclined is the business failure an effect returns on purpose.
var ErrDeclined = fmt.Errorf("conformance: declined on purpose")

// work is an effect's work: effectWork (or, under the slow-first fault,
// longer for a scope's first execution), cut short when ctx ends. It
// returns ctx's error then.
func (w *world) work(ctx context.Context, ex *execution) error {
	d := effectWork
	if slow := time.Duration(w.slowFirst.Load()); slow > 0 && !w.faultsOff.Load() && w.isFirst(ex) {
		d = slow
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// Invocation is one invocation of a way: its environment's store, the
// requests it delivers, and the effect the way's operation runs.
type Invocation struct {
	w    *world
	c    *call
	reqs []*Request
}

// Store is the invocation's environment's store: each environment has a
// client and a store of its own (its own cache), configured with the
// cell's table layout and mode.
func (inv *Invocation) Store() *idem.Store { return inv.c.env.store }

// Requests are the requests the invocation delivers: one, or a Queue's or
// Stream's batch.
func (inv *Invocation) Requests() []*Request { return inv.reqs }

// Lookup is the first of the invocation's requests that carries m (the
// same caller, key and variant), or nil.
func (inv *Invocation) Lookup(m Message) *Request {
	for _, r := range inv.reqs {
		if a := r.a; a.caller == m.Caller && a.key == m.Key && a.variant == m.Variant {
			return r
		}
	}
	return nil
}

// Effect is an Outside effect for r, as a well-behaved one runs: it
// takes its time, checks its context right before it applies, and
// returns the Reply the way answers with. Under the faults it may stop
// the environment before or after it applies; a key's first execution
// fails on purpose (an error the answer classes as Failed).
func (inv *Invocation) Effect(ctx context.Context, r *Request) (Reply, error) {
	w, c, a := inv.w, inv.c, r.a
	ex := w.begin(c, a)
	if err := w.work(ctx, ex); err != nil {
		return Reply{}, err
	}
	if w.take(&w.crashBefore) {
		c.env.crash("crash point: before the effect")
		return Reply{}, context.Canceled
	}
	if err := ctx.Err(); err != nil || c.env.dead.Load() {
		return Reply{}, fmt.Errorf("the effect did not start: %w", context.Cause(ctx))
	}
	if a.key == flakyKey && w.isFirst(ex) {
		return Reply{}, ErrDeclined
	}
	w.mu.Lock()
	ex.applied, ex.appliedAt, ex.appliedT = true, w.rec.seq.Add(1), time.Now()
	w.mu.Unlock()
	w.rec.mark(a.scope(), "effect of execution %d applied (env %d)", ex.n, c.env.id)
	if w.take(&w.crashAfter) {
		c.env.crash("crash point: after the effect, before its completion")
	}
	return ex.reply, nil
}

// Writes is a Writes effect for r: the DynamoDB writes that commit with
// the key's completion, and the Reply the way answers with. It takes its
// time; under the faults it may stop the environment before it returns;
// a key's first execution fails on purpose.
func (inv *Invocation) Writes(ctx context.Context, r *Request) (Reply, []types.TransactWriteItem, error) {
	w, c, a := inv.w, inv.c, r.a
	ex := w.begin(c, a)
	if err := w.work(ctx, ex); err != nil {
		return Reply{}, nil, err
	}
	if w.take(&w.crashBefore) {
		c.env.crash("crash point: before the effect")
		return Reply{}, nil, context.Canceled
	}
	if a.key == flakyKey && w.isFirst(ex) {
		return Reply{}, nil, ErrDeclined
	}
	return ex.reply, w.effectWrites(a.scope(), ex.n), nil
}

// Execution is one execution of a request's Writes effect in a batch
// whose writes are computed together (Begin, BatchWrites).
type Execution struct{ ex *execution }

// Reply is what the execution answers with.
func (e *Execution) Reply() Reply { return e.ex.reply }

// Begin starts an execution of r's Writes effect, for a batch whose
// writes are computed together (BatchWrites), or whose items carry their
// answers before the writes are (Store.ExecuteBatch).
func (inv *Invocation) Begin(r *Request) *Execution {
	return &Execution{inv.w.begin(inv.c, r.a)}
}

// BatchWrites computes the writes of a batch's executions, which commit
// together: it takes one effect's time, may stop the environment first
// (under the faults), and returns one write per execution. No execution
// of a batch fails on purpose.
func (inv *Invocation) BatchWrites(ctx context.Context, exs []*Execution) ([]types.TransactWriteItem, error) {
	w, c := inv.w, inv.c
	if w.take(&w.crashBefore) {
		c.env.crash("crash point: before the effect")
		return nil, context.Canceled
	}
	if len(exs) == 0 {
		return nil, nil
	}
	if err := w.work(ctx, exs[0].ex); err != nil {
		return nil, err
	}
	writes := make([]types.TransactWriteItem, 0, len(exs))
	for _, e := range exs {
		writes = append(writes, w.effectWrites(e.ex.actor.scope(), e.ex.n)...)
	}
	return writes, nil
}

// effectWrites are one execution's effect: ADD 1 to its scope's count,
// and its number to the scope's set of executions. Across the Regions of
// an MREC table, an item of its own instead (last writer wins would merge
// two Regions' updates of one item into one, hiding an execution); on
// MRSC both, so that a holder can stop between two writes applied one by
// one.
func (w *world) effectWrites(scope string, exec int) []types.TransactWriteItem {
	switch {
	case w.regions == nil:
		return []types.TransactWriteItem{w.countWrite(scope, exec)}
	case w.regions.cell.mode == MRSC:
		return []types.TransactWriteItem{w.countWrite(scope, exec), w.regions.effectWrite(scope, exec)}
	}
	return []types.TransactWriteItem{w.regions.effectWrite(scope, exec)}
}

// countWrite is an execution's update of its scope's count.
func (w *world) countWrite(scope string, exec int) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(w.effects),
		Key:                       w.effectKey(scope),
		UpdateExpression:          aws.String("ADD #n :one, #x :x"),
		ExpressionAttributeNames:  map[string]string{"#n": "n", "#x": "execs"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":x": &types.AttributeValueMemberSS{Value: []string{strconv.Itoa(exec)}}},
	}}
}

func (w *world) effectKey(scope string) map[string]types.AttributeValue {
	if w.effects == idemTable {
		return map[string]types.AttributeValue{
			w.layout.PartitionKey: &types.AttributeValueMemberS{Value: "EFFECTS"},
			w.layout.SortKey:      &types.AttributeValueMemberS{Value: scope},
		}
	}
	return map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: scope}}
}

// committed reads a scope's DynamoDB effects: how many, and which
// executions.
func (w *world) committed(scope string) (int, []string, error) {
	if w.regions != nil && w.regions.cell.mode != MRSC {
		return w.regions.committed(scope)
	}
	out, err := w.admin.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(w.effects), Key: w.effectKey(scope), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, nil, err
	}
	n := 0
	if v, ok := out.Item["n"].(*types.AttributeValueMemberN); ok {
		n, _ = strconv.Atoi(v.Value)
	}
	var execs []string
	if v, ok := out.Item["execs"].(*types.AttributeValueMemberSS); ok {
		execs = slices.Sorted(slices.Values(v.Value))
	}
	if w.regions != nil {
		// MRSC: each execution counted has its item too, and no other.
		_, items, err := w.regions.committed(scope)
		if err != nil {
			return 0, nil, err
		}
		if !slices.Equal(items, execs) {
			w.violate("%s: the count holds executions %v, the items are those of %v: an Effect's writes applied in part", scope, execs, items)
		}
	}
	return n, execs, nil
}

// httpAnswer renders an HTTP response as the answer a client compares:
// status, the headers the store keeps (not Idempotent-Replayed, which
// says how it was served), body.
func httpAnswer(status int, h http.Header, body []byte) string {
	var s string
	s = strconv.Itoa(status) + "\n"
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}) {
		if http.CanonicalHeaderKey(k) == "Idempotent-Replayed" {
			continue
		}
		for _, v := range h[k] {
			s += http.CanonicalHeaderKey(k) + ": " + v + "\n"
		}
	}
	return s + "\n" + string(body)
}
