package idemtest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"time"
)

// A simulated DynamoDB global table (version 2019.11.21), as the Developer
// Guide's "How DynamoDB global tables work" and the prescriptive guidance
// for global tables describe it: several Regions, each a Server of its
// own with its own endpoint, clients and storage; every table created in
// one of them is a global table with a replica in each.
//
// Multi-Region eventual consistency (MREC): a write commits in its Region
// and is replicated to the others asynchronously, item by item, after the
// lag of the Region pair (SetLag), unless replication is paused (Pause,
// Isolate, as AWS Fault Injection Service's pause-replication action
// does). Conditions are evaluated against the local replica; concurrent
// writes of an item in two Regions are resolved by last writer wins:
// every item carries the timestamp of its last write, and a replicated
// write is applied only if its timestamp is later than the replica's
// (prescriptive guidance: "implemented by a conditional write requiring the
// incoming item's timestamp to be greater than the existing one"). A
// transaction is atomic in its Region only; its items replicate one by
// one. Each Region's stream carries its own writes and the replicated
// ones, several changes of an item delivered together merged into one
// record.
//
// Multi-Region strong consistency (MRSC): exactly three Regions, three
// replicas or two and a witness. A write is applied synchronously to
// every reachable replica before it answers, so conditions and
// strongly consistent reads always see the latest version; a write of an
// item another Region is writing is refused with
// ReplicatedWriteConflictException; a write (or a strongly consistent
// read) needs its Region and one other member (replica or witness)
// reachable. Transactions, TTL and local secondary indexes are refused.
//
// Replication is applied lazily: a change due at time t is applied by the
// first request to any Region, stream read or Global call at or after t,
// on the store's clock (time.Now: fake inside a testing/synctest bubble).
// No test can tell that from an applier of its own, since every
// observation is one of those, and it keeps the simulation deterministic
// and free of goroutines.

// Consistency is a global table's multi-Region consistency mode, as
// DescribeTable's MultiRegionConsistency names it.
type Consistency string

// The two consistency modes of DynamoDB global tables.
const (
	// MREC is multi-Region eventual consistency, the default.
	MREC Consistency = "EVENTUAL"
	// MRSC is multi-Region strong consistency.
	MRSC Consistency = "STRONG"
)

// GlobalConfig describes a simulated global table deployment.
type GlobalConfig struct {
	// Mode is the consistency mode of every table of the deployment; MREC
	// when empty.
	Mode Consistency
	// Regions are the Regions holding a replica, each served by a Server
	// of its own; at least two, distinct. MRSC needs exactly three Regions
	// in all: three here, or two and a Witness.
	Regions []string
	// Witness is, for MRSC, the Region of the witness: it holds no
	// endpoint and serves no requests, but counts towards a write's
	// quorum.
	Witness string
	// Lag is the replication lag of every Region pair (MREC), until
	// SetLag changes a pair's. 0 replicates at the next request.
	Lag time.Duration
	// Jitter adds to each item's lag a part of its own, fixed per item and
	// table, in [0, Jitter): the items of one write request (a
	// transaction) then reach another Region one by one, as DynamoDB's
	// partitions replicate in parallel, while an item's own changes keep
	// their order.
	Jitter time.Duration
	// WriteLatency is, for MRSC, how long a write holds its items across
	// the Regions (the synchronous replication's round trip): the window
	// in which a write of the same item from another Region is refused
	// with ReplicatedWriteConflictException. It runs on time.Sleep, so on
	// fake time in a testing/synctest bubble.
	WriteLatency time.Duration
	// Options configure every Region's Server.
	Options []Option
}

// GlobalStats counts what the simulation did.
type GlobalStats struct {
	// Replicated is how many replicated changes a replica applied.
	Replicated int
	// Superseded is how many replicated changes a replica dropped because
	// it held a later write of the item: last writer wins, silently, as on
	// DynamoDB (nothing is logged there).
	Superseded int
	// Merged is how many replicated changes were folded into a later
	// change of the same item delivered with them: one stream record for
	// several changes.
	Merged int
	// WriteConflicts is how many writes were refused with
	// ReplicatedWriteConflictException (MRSC).
	WriteConflicts int
	// Unavailable is how many requests were refused because their Region
	// could not reach another member of the global table (MRSC), or was
	// down (Down).
	Unavailable int
}

// Global is a simulated global table deployment: its Regions, the
// replication between them and the faults that cut it. It is safe for
// concurrent use.
type Global struct {
	mode         Consistency
	names        []string // replica Regions, sorted
	witness      string
	regions      map[string]*Server
	jitter       time.Duration
	writeLatency time.Duration

	// delivering serializes deliveries: once deliver returns, every
	// change that was due is applied (or waits for a held item).
	delivering sync.Mutex

	mu       sync.Mutex
	lag      map[link]time.Duration
	paused   map[link]bool
	isolated map[string]bool // Regions (or the witness) cut from the others
	down     map[string]bool // Regions whose endpoint answers nothing
	pending  map[string][]*change
	seq      uint64
	inflight map[string]string // MRSC: item -> the Region whose write holds it
	stats    GlobalStats
}

// link is a replication direction between two Regions.
type link struct{ from, to string }

// change is a replicated write of one item, on its way to a Region.
type change struct {
	from  string
	table string
	pk    string // the item's primary key text
	name  string // the item's hold name
	key   attrs
	item  attrs // nil: deleted
	st    stamp
	due   time.Time
	seq   uint64
}

// stamp is an item's last write time, DynamoDB's private timestamp for
// last writer wins: writes compare by time, then (at the same instant,
// common on a fake clock) by Region name.
type stamp struct {
	at     time.Time
	region string
}

// after reports whether a is a later write than b.
func (a stamp) after(b stamp) bool {
	if c := a.at.Compare(b.at); c != 0 {
		return c > 0
	}
	return a.region > b.region
}

// ErrUnknownRegion is returned for a Region a Global does not have.
var ErrUnknownRegion = errors.New("idemtest: unknown Region")

// NewGlobal returns a simulated global table deployment: a Server for
// each of cfg.Regions (not started: reach them in-process with
// HandlerClient, or call Start), sharing every table any of them
// creates. Create it inside a testing/synctest bubble to run it on fake
// time. Close it when done.
func NewGlobal(cfg GlobalConfig) (*Global, error) {
	if cfg.Mode == "" {
		cfg.Mode = MREC
	}
	names := slices.Clone(cfg.Regions)
	sort.Strings(names)
	if len(names) < 2 || len(slices.Compact(slices.Clone(names))) != len(names) || slices.Contains(names, "") {
		return nil, fmt.Errorf("idemtest: a global table needs two or more distinct Regions, got %q", cfg.Regions)
	}
	switch cfg.Mode {
	case MREC:
		if cfg.Witness != "" {
			return nil, errors.New("idemtest: a witness needs multi-Region strong consistency (MRSC)")
		}
	case MRSC:
		members := len(names)
		if cfg.Witness != "" {
			members++
			if slices.Contains(names, cfg.Witness) {
				return nil, fmt.Errorf("idemtest: the witness %s is also a replica Region", cfg.Witness)
			}
		}
		if members != 3 {
			return nil, fmt.Errorf("idemtest: multi-Region strong consistency needs exactly three Regions (three replicas, or two and a witness), got %d", members)
		}
	default:
		return nil, fmt.Errorf("idemtest: unknown consistency mode %q (want MREC or MRSC)", cfg.Mode)
	}
	g := &Global{
		mode: cfg.Mode, names: names, witness: cfg.Witness, regions: map[string]*Server{},
		jitter: cfg.Jitter, writeLatency: cfg.WriteLatency,
		lag: map[link]time.Duration{}, paused: map[link]bool{}, isolated: map[string]bool{}, down: map[string]bool{},
		pending: map[string][]*change{}, inflight: map[string]string{},
	}
	for _, from := range names {
		for _, to := range names {
			if from != to {
				g.lag[link{from, to}] = cfg.Lag
			}
		}
	}
	for _, r := range names {
		s := NewServer(cfg.Options...)
		s.region, s.g = r, g
		g.regions[r] = s
	}
	return g, nil
}

// Mode is the deployment's consistency mode.
func (g *Global) Mode() Consistency { return g.mode }

// Regions are the Regions holding a replica, sorted.
func (g *Global) Regions() []string { return slices.Clone(g.names) }

// Witness is the witness Region ("" without one).
func (g *Global) Witness() string { return g.witness }

// Region is the Server of a replica Region, nil for another name. Its
// Client and HandlerClient are configured for that Region.
func (g *Global) Region(name string) *Server { return g.regions[name] }

// Start serves every Region on a loopback port of its own (Server.URL,
// Server.Client); Close stops them.
func (g *Global) Start() {
	for _, r := range g.names {
		s := g.regions[r]
		if s.httpSrv == nil {
			s.httpSrv = httptest.NewServer(s)
		}
	}
}

// Close stops every Region (releasing held requests) and drops what was
// not replicated.
func (g *Global) Close() {
	for _, r := range g.names {
		g.regions[r].Close()
	}
	g.mu.Lock()
	g.pending = map[string][]*change{}
	g.mu.Unlock()
}

// member reports whether name is a Region or the witness.
func (g *Global) member(name string) bool {
	return g.regions[name] != nil || name != "" && name == g.witness
}

// SetLag sets the replication lag from one Region to another (MREC), for
// writes committed from now on.
func (g *Global) SetLag(from, to string, d time.Duration) error {
	if err := g.checkLink(from, to); err != nil {
		return err
	}
	g.mu.Lock()
	g.lag[link{from, to}] = d
	g.mu.Unlock()
	return nil
}

// Pause stops replication from one Region to another (MREC), as AWS FIS's
// aws:dynamodb:global-table-pause-replication does: writes keep
// committing in both Regions, and what one sends the other waits,
// however long its lag, until Resume.
func (g *Global) Pause(from, to string) error {
	if err := g.checkLink(from, to); err != nil {
		return err
	}
	if g.mode == MRSC {
		return errors.New("idemtest: multi-Region strong consistency replicates synchronously: Isolate a Region instead of pausing a pair")
	}
	g.mu.Lock()
	g.paused[link{from, to}] = true
	g.mu.Unlock()
	return nil
}

// Resume restarts replication from one Region to another: what waited is
// delivered at the next request, several changes of an item merged into
// one.
func (g *Global) Resume(from, to string) error {
	if err := g.checkLink(from, to); err != nil {
		return err
	}
	g.mu.Lock()
	delete(g.paused, link{from, to})
	g.mu.Unlock()
	return nil
}

func (g *Global) checkLink(from, to string) error {
	if g.regions[from] == nil || g.regions[to] == nil || from == to {
		return fmt.Errorf("%w: %q to %q (Regions: %v)", ErrUnknownRegion, from, to, g.names)
	}
	return nil
}

// Isolate cuts a Region (or the witness) from every other member, its
// endpoint still serving its clients. MREC: replication to and from it
// pauses; its writes commit locally and are sent once it is reconnected.
// MRSC: it can reach no quorum, so its writes and strongly consistent
// reads fail (InternalServerError, HTTP 500) while its eventually
// consistent reads answer from its replica; the other Regions go on
// while two members reach each other, and the isolated replica catches
// up when reconnected.
func (g *Global) Isolate(region string) error { return g.setFlag(g.isolated, region, true) }

// Reconnect ends Isolate.
func (g *Global) Reconnect(region string) error { return g.setFlag(g.isolated, region, false) }

// Down makes a Region's endpoint fail every request with
// ServiceUnavailable (HTTP 503), as a Region that is lost; it is cut from
// the others as by Isolate. Up ends it.
func (g *Global) Down(region string) error {
	if g.regions[region] == nil {
		return fmt.Errorf("%w: %q (Regions: %v)", ErrUnknownRegion, region, g.names)
	}
	return g.setFlag(g.down, region, true)
}

// Up ends Down.
func (g *Global) Up(region string) error { return g.setFlag(g.down, region, false) }

func (g *Global) setFlag(m map[string]bool, region string, on bool) error {
	if !g.member(region) {
		return fmt.Errorf("%w: %q (Regions: %v, witness %q)", ErrUnknownRegion, region, g.names, g.witness)
	}
	g.mu.Lock()
	if on {
		m[region] = true
	} else {
		delete(m, region)
	}
	g.mu.Unlock()
	return nil
}

// Pending is how many replicated changes are on their way to a Region,
// delivered or not yet due (paused ones included).
func (g *Global) Pending(to string) int {
	g.deliver(false)
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending[to])
}

// Settle delivers every pending change whose link is up, due or not, as
// if the lag had passed, and returns how many changes are still pending
// (paused links, isolated or down Regions, items a running write holds).
func (g *Global) Settle() int {
	g.deliver(true)
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, p := range g.pending {
		n += len(p)
	}
	return n
}

// Stats returns what the simulation did so far.
func (g *Global) Stats() GlobalStats {
	g.deliver(false)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// isDown reports whether a Region's endpoint is down.
func (g *Global) isDown(region string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down[region] {
		g.stats.Unavailable++
		return true
	}
	return false
}

// reachable reports whether a member is neither isolated nor down; call it
// holding g.mu.
func (g *Global) reachable(name string) bool { return !g.isolated[name] && !g.down[name] }

// quorum reports whether a write in region can reach a second member of an
// MRSC table; call it holding g.mu.
func (g *Global) quorum(region string) bool {
	if !g.reachable(region) {
		return false
	}
	for _, m := range append(slices.Clone(g.names), g.witness) {
		if m != "" && m != region && g.reachable(m) {
			return true
		}
	}
	return false
}

// open reports whether changes flow from one Region to another; call it
// holding g.mu. An MRSC replica catches up from whichever member is
// reachable.
func (g *Global) open(l link) bool {
	if g.mode == MRSC {
		return g.reachable(l.to)
	}
	return !g.paused[l] && g.reachable(l.from) && g.reachable(l.to)
}

// jitterOf is an item's own part of its lag, fixed per table and key.
func (g *Global) jitterOf(table, pk string) time.Duration {
	if g.jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(table))
	h.Write([]byte{0})
	h.Write([]byte(pk))
	return time.Duration(h.Sum64() % uint64(g.jitter))
}

// send queues a committed write of one Region for the table's other
// replicas.
func (g *Global) send(from string, gt *gtable, c change, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, to := range gt.replicas {
		if to == from {
			continue
		}
		cc := c
		g.seq++
		cc.from, cc.seq = from, g.seq
		cc.due = now.Add(g.lag[link{from, to}] + g.jitterOf(c.table, c.pk))
		g.enqueue(to, &cc)
	}
}

// enqueue adds a change to a Region's pending ones, in due order; call it
// holding g.mu.
func (g *Global) enqueue(to string, c *change) {
	p := g.pending[to]
	i := sort.Search(len(p), func(i int) bool {
		return p[i].due.After(c.due) || p[i].due.Equal(c.due) && p[i].seq > c.seq
	})
	p = append(p, nil)
	copy(p[i+1:], p[i:])
	p[i] = c
	g.pending[to] = p
}

// deliver applies the pending changes that are due (all those whose link
// is up, with force), each Region's at once, several changes of an item
// merged into the last. Changes for an item a running write holds in
// their Region wait for the next delivery.
func (g *Global) deliver(force bool) {
	g.delivering.Lock()
	defer g.delivering.Unlock()
	now := time.Now()
	g.mu.Lock()
	var batch map[string][]*change
	for to, p := range g.pending {
		var keep []*change
		for i, c := range p {
			if !force && c.due.After(now) {
				keep = append(keep, p[i:]...)
				break
			}
			if !g.open(link{c.from, to}) {
				keep = append(keep, c)
				continue
			}
			if batch == nil {
				batch = map[string][]*change{}
			}
			batch[to] = append(batch[to], c)
		}
		g.pending[to] = keep
	}
	g.mu.Unlock()
	if batch == nil {
		return
	}
	for _, to := range sortedKeys(batch) {
		changes := batch[to]
		// The last change of each item stands for all of them.
		last := map[string]*change{}
		for _, c := range changes {
			if prev := last[c.name]; prev == nil || c.st.after(prev.st) {
				last[c.name] = c
			}
		}
		merged := len(changes) - len(last)
		var apply []*change
		for _, c := range changes {
			if last[c.name] == c {
				apply = append(apply, c)
			}
		}
		applied, superseded, waiting := g.regions[to].applyReplicated(apply)
		g.mu.Lock()
		g.stats.Replicated += applied
		g.stats.Superseded += superseded
		g.stats.Merged += merged
		for _, c := range waiting {
			g.enqueue(to, c)
		}
		g.mu.Unlock()
	}
}

// applyReplicated applies replicated changes to this Region's replicas:
// each only if it is a later write than the replica's (last writer wins).
// A change for an item a running write holds here is returned to wait.
func (s *Server) applyReplicated(changes []*change) (applied, superseded int, waiting []*change) {
	now := time.Now()
	s.schema.Lock()
	defer s.schema.Unlock()
	for _, c := range changes {
		d := s.data[c.table]
		if d == nil || d.meta.gt == nil {
			continue // the replica was deleted
		}
		s.mu.Lock()
		held := s.held[c.name] != nil
		s.mu.Unlock()
		if held {
			waiting = append(waiting, c)
			continue
		}
		if !c.st.after(d.stamps[c.pk]) {
			superseded++
			continue
		}
		s.applyChange(d, c, now)
		applied++
	}
	return applied, superseded, waiting
}

// applyChange writes a change into a replica, its stamp and stream record
// with it; call it holding s.schema for writing.
func (s *Server) applyChange(d *tableData, c *change, now time.Time) {
	old := d.write(c.key, c.pk, c.item)
	d.stamps[c.pk] = c.st
	s.remember(c.table, c.name, c.key, c.item, now)
	s.appendStream(d, c.key, old, c.item, c.from, now)
}

// gtable is a global table: the Regions holding its replicas.
type gtable struct {
	name     string
	replicas []string // sorted; guarded by the Global's mu after creation
}

// stampFor is the stamp of a write of an item now in this Region: later
// than the item's last write and than the Region's previous write, so
// that a write wins over what it overwrote, everywhere; call it holding
// s.schema for writing.
func (s *Server) stampFor(d *tableData, pk string, now time.Time) stamp {
	at := now
	if prev := d.stamps[pk].at; !at.After(prev) {
		at = prev.Add(time.Nanosecond)
	}
	if !at.After(s.lastStamp) {
		at = s.lastStamp.Add(time.Nanosecond)
	}
	s.lastStamp = at
	return stamp{at: at, region: s.region}
}

// unavailable is the answer of a Region that cannot serve a request of
// a global table: down, or (MRSC) unable to reach a second member.
func unavailable(down bool) answer {
	if down {
		return answerError(http.StatusServiceUnavailable, "ServiceUnavailable", "idemtest: the Region is down (Global.Down)")
	}
	return answerError(http.StatusInternalServerError, "InternalServerError",
		"idemtest: the Region cannot reach another replica or the witness of the global table (multi-Region strong consistency needs two of its three Regions)")
}

// errWriteConflict is DynamoDB's answer to an MRSC write of an item another
// Region is writing.
var errWriteConflict = &apiError{code: "ReplicatedWriteConflictException",
	msg: "The request was rejected because one or more items in the request are being modified by a request in another Region."}

// strongBegin starts an MRSC write of items from a Region: refused when the
// Region cannot reach a second member, or with
// ReplicatedWriteConflictException when another Region is writing one of
// the items; else the items are marked as written from this Region for the
// write's round trip. Call release when the write is done.
func (g *Global) strongBegin(region string, names []string) (release func(), _ *answer) {
	g.mu.Lock()
	if !g.quorum(region) {
		g.stats.Unavailable++
		g.mu.Unlock()
		a := unavailable(false)
		return nil, &a
	}
	for _, n := range names {
		if r, ok := g.inflight[n]; ok && r != region {
			g.stats.WriteConflicts++
			g.mu.Unlock()
			a := errorAnswer(errWriteConflict)
			return nil, &a
		}
	}
	for _, n := range names {
		g.inflight[n] = region
	}
	g.mu.Unlock()
	if g.writeLatency > 0 {
		time.Sleep(g.writeLatency)
	}
	return func() {
		g.mu.Lock()
		for _, n := range names {
			delete(g.inflight, n)
		}
		g.mu.Unlock()
	}, nil
}

// commitStrong applies one request's writes (MRSC) to every reachable
// replica at once, all their Regions locked in name order, so that no
// strongly consistent read anywhere sees the write before another saw it.
// A replica that cannot be reached gets the changes when it is reconnected.
func (g *Global) commitStrong(origin *Server, actions []*action) error {
	g.mu.Lock()
	var reach []*Server
	var missed []string
	for _, r := range g.names {
		if r == origin.region || g.reachable(r) {
			reach = append(reach, g.regions[r])
		} else {
			missed = append(missed, r)
		}
	}
	g.mu.Unlock()
	for _, s := range reach {
		s.schema.Lock()
		defer s.schema.Unlock()
	}
	for _, a := range actions {
		if origin.data[a.table] == nil {
			return &apiError{code: "ResourceNotFoundException", msg: "Requested resource not found"}
		}
	}
	now := time.Now()
	var changes []change
	for _, a := range actions {
		if !a.writes() {
			continue
		}
		pk := a.meta.primaryKey(a.key)
		if a.meta.gt == nil { // a regional table of the origin's
			origin.data[a.table].write(a.key, pk, a.next)
			origin.remember(a.table, a.name, a.key, a.next, now)
			continue
		}
		c := change{from: origin.region, table: a.table, pk: pk, name: a.name, key: a.key, item: a.next,
			st: origin.stampFor(origin.data[a.table], pk, now)}
		for _, s := range reach {
			if d := s.data[a.table]; d != nil {
				s.applyChange(d, &c, now)
			}
		}
		changes = append(changes, c)
	}
	if len(missed) > 0 {
		g.mu.Lock()
		for _, c := range changes {
			for _, to := range missed {
				cc := c
				g.seq++
				cc.seq, cc.due = g.seq, now
				g.enqueue(to, &cc)
			}
		}
		g.mu.Unlock()
	}
	return nil
}
