package idem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/home"
)

// Homes makes a store safe on a DynamoDB global table with multi-Region
// eventual consistency (MREC, the default kind), where each Region's
// replica evaluates conditions against its own items, so that a key
// claimed in two Regions within the replication lag is won in both: the
// store claims each key in one Region at a time, the key's home, from
// whichever Region it runs in. Every write and read of the key's record
// (claim, renewal, completion, release, replay, wait), and the writes an
// Effect commits with its completion, go to the home's replica, and every
// record carries the home's Region (origin) and epoch.
//
// A home holds its keys under a lease that a quorum of voters (each
// replica Region's table, and the Witness if set) promise and any store
// renews; a failover moves a home to another Region under the next
// epoch, which takes claims only once the old home's lease has ended and
// the ReplicationBound has passed (pkg/idem/idemglobal's Control.Failover). docs/library.md ("Global tables") gives
// the failover procedure and what is guaranteed when a Region is lost.
type Homes struct {
	// Region is the Region this process runs in.
	Region string
	// Clients holds a client of the table's replica in each Region, by
	// Region name. NewStore's client is Region's: Clients may leave it
	// out.
	Clients map[string]API
	// Home names a scope's home Region, one of Clients'
	// (idemglobal.OneHome homes every key in one Region). Every store of
	// the table must use the same function: it names the home a key was
	// given, which a failover may move.
	Home func(Scope) string
	// Witness, if set, is one more voter: a client of a table of the same
	// name and key schema (idemtable.Create) in a Region that holds no
	// replica. With two replica Regions, both must be reachable to renew
	// a lease, or to fail over, unless a witness makes three voters.
	Witness API
	// Lease is how long a renewal extends a home's lease (default 20 s):
	// a home cut off from a quorum of voters stops taking claims at most
	// this long after its last renewal, less the store's margin
	// (WithLease).
	Lease time.Duration
	// ReplicationBound is how long a write may take to reach every
	// replica (default 10 s; DynamoDB gives no bound, and AWS advises ten
	// times the recent maximum of the ReplicationLatency metric): a new
	// home takes claims only this long, and the margin, after the old
	// home's lease has ended.
	ReplicationBound time.Duration
}

// WithHomes makes the store claim each key in its home Region (Homes),
// on an MREC table: told or learning that its table is regional or MRSC,
// the store refuses to run (an error wrapping errors.ErrUnsupported),
// since such a table has no other replica, or its conditions see every
// Region's writes already.
func WithHomes(h Homes) Option {
	return func(s *Store) {
		s.setups = append(s.setups, func(db API) error {
			if s.region != "" && s.region != h.Region {
				return fmt.Errorf("idem: WithRegion(%q) and Homes.Region %q disagree", s.region, h.Region)
			}
			hs, err := newHomes(s, db, h)
			if err != nil {
				return err
			}
			s.homes, s.region, s.db = hs, h.Region, router{hs}
			return nil
		})
	}
}

// WithRegion tells a store the Region it runs in, on a global table whose
// keys it claims in that Region (no Homes): every claim it writes carries
// the Region (origin), so that a claim another Region's overwrote (a key
// that ran in both) is told from the table's streams
// (pkg/idem/idemglobal). On a global table with multi-Region eventual
// consistency, such a store runs a key once per Region that claims it
// within the replication lag: WithRegion is how a store opts into that
// (without it, or WithHomes, a store refuses an MREC table). On a
// regional or MRSC table it only stamps the claims.
func WithRegion(region string) Option { return func(s *Store) { s.region = region } }

// homes is a store's state on a global table: its voters, and what it
// knows of each slot's home.
type homes struct {
	s       *Store
	cfg     Homes
	ctl     *home.Config
	clients map[string]API

	mu    sync.Mutex
	views map[string]*slotView
}

// slotView is what a store knows of one slot's home; its mutex lets one
// call refresh it while the others wait for the result.
type slotView struct {
	refresh sync.Mutex
	mu      sync.Mutex
	v       home.View
	ok      bool
}

// newHomes checks h for the store s.
func newHomes(s *Store, db API, h Homes) (*homes, error) {
	if h.Lease == 0 {
		h.Lease = home.DefaultLease
	}
	if h.ReplicationBound == 0 {
		h.ReplicationBound = home.DefaultBound
	}
	clients := maps.Clone(h.Clients)
	if clients == nil {
		clients = map[string]API{}
	}
	if _, ok := clients[h.Region]; !ok && h.Region != "" {
		clients[h.Region] = db
	}
	switch {
	case h.Region == "":
		return nil, errors.New("idem: Homes.Region is empty")
	case len(clients) < 2:
		return nil, fmt.Errorf("idem: Homes.Clients names %d Regions: a global table has at least two", len(clients))
	case h.Home == nil:
		return nil, errors.New("idem: Homes.Home is nil (OneHome homes every key in one Region)")
	case h.Lease <= 2*s.margin || h.ReplicationBound < 0:
		return nil, fmt.Errorf("idem: Homes.Lease %v must exceed twice the margin (%v), the bound %v must not be negative", h.Lease, s.margin, h.ReplicationBound)
	}
	for r, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("idem: Homes.Clients[%q] is nil", r)
		}
	}
	var witness home.DB
	if h.Witness != nil {
		witness = h.Witness
	}
	return &homes{
		s: s, cfg: h, clients: clients, views: map[string]*slotView{},
		ctl: &home.Config{
			Table: s.table, Layout: s.layout, Voters: home.Voters(clients, witness),
			Lease: h.Lease, Margin: s.margin, Bound: h.ReplicationBound, Now: s.now,
		},
	}, nil
}

// route is where a call's records go: the home of its slot, under an
// epoch.
type route struct {
	slot   string
	region string
	epoch  int64
	db     API
}

// noHome is ErrNoHome for slot, for the reason err.
func noHome(slot string, err error) error {
	return fmt.Errorf("%w: home %s: %w", ErrNoHome, slot, err)
}

// routeKey is the context key of a call's route.
type routeKey struct{}

// routeOf is the route of the call whose requests run with ctx, nil when
// the store has no Homes.
func routeOf(ctx context.Context) *route {
	r, _ := ctx.Value(routeKey{}).(*route)
	return r
}

// routed is ctx for a call whose records go where r says; its operation
// learns the Region and epoch from it (idemglobal.WriterOf).
func routed(ctx context.Context, r *route) context.Context {
	if r == nil {
		return ctx
	}
	ctx = home.WithWriter(ctx, home.Writer{Region: r.region, Epoch: r.epoch})
	return context.WithValue(ctx, routeKey{}, r)
}

// slotOf is the home the store's Homes gives scope, checked.
func (h *homes) slotOf(scope Scope) (string, error) {
	slot := h.cfg.Home(scope)
	if _, ok := h.clients[slot]; !ok {
		return "", fmt.Errorf("idem: Homes.Home gives %s the home %q, which Homes.Clients does not name", scope.Operation, slot)
	}
	return slot, nil
}

// route is the route of a call on scope: its slot's home, which must
// hold the slot's lease now (not yet, during a failover's wait: a
// ErrNoHome).
func (h *homes) route(ctx context.Context, scope Scope) (*route, error) {
	slot, err := h.slotOf(scope)
	if err != nil {
		return nil, err
	}
	return h.routeSlot(ctx, slot)
}

// routeSlot is the route to slot's home now.
func (h *homes) routeSlot(ctx context.Context, slot string) (*route, error) {
	v, err := h.view(ctx, slot)
	if err != nil {
		return nil, err
	}
	if err := h.usable(v); err != nil {
		return nil, err
	}
	return &route{slot: slot, region: v.Home, epoch: v.Epoch, db: h.clients[v.Home]}, nil
}

// usable refuses a view whose home may not take claims now: before its
// From (a failover's wait), or within the margin of its Until.
func (h *homes) usable(v home.View) error {
	now := h.s.now()
	switch {
	case now.Before(v.From):
		return noHome(v.Slot, fmt.Errorf("epoch %d moved it to %s, which takes claims in %v, from %s", v.Epoch, v.Home, v.From.Sub(now).Round(time.Millisecond), v.From.UTC().Format(time.RFC3339Nano)))
	case !now.Before(v.Until.Add(-h.s.margin)):
		return noHome(v.Slot, fmt.Errorf("the lease of %s (epoch %d) ended", v.Home, v.Epoch))
	}
	if _, ok := h.clients[v.Home]; !ok {
		return noHome(v.Slot, fmt.Errorf("epoch %d homes it in %s, which Homes.Clients does not name", v.Epoch, v.Home))
	}
	return nil
}

// slot is the store's state of one slot.
func (h *homes) slot(name string) *slotView {
	h.mu.Lock()
	defer h.mu.Unlock()
	sv := h.views[name]
	if sv == nil {
		sv = &slotView{}
		h.views[name] = sv
	}
	return sv
}

// known is the slot's view as last read, if any.
func (sv *slotView) known() (home.View, bool) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.v, sv.ok
}

// view is slot's view: as known while more than half a lease is left of
// it, else read from the voters and renewed (one call at a time; the
// others wait for its result). When the voters cannot be read or
// renewed, a view known with time left is kept.
func (h *homes) view(ctx context.Context, slot string) (home.View, error) {
	sv := h.slot(slot)
	fresh := func() (home.View, bool) {
		v, ok := sv.known()
		return v, ok && v.Until.Sub(h.s.now()) >= h.cfg.Lease/2
	}
	if v, ok := fresh(); ok {
		return v, nil
	}
	sv.refresh.Lock()
	defer sv.refresh.Unlock()
	if v, ok := fresh(); ok {
		return v, nil
	}
	v, err := h.ctl.Ensure(ctx, slot, slot)
	if err != nil {
		// The voters cannot be read or renewed now: a view known with
		// time left still holds (its home renews it, or a quorum saw to
		// it that nobody else can take the slot before it ends).
		if known, ok := sv.known(); ok && h.s.now().Before(known.Until.Add(-h.s.margin)) {
			return known, nil
		}
		return home.View{}, noHome(slot, err)
	}
	sv.mu.Lock()
	sv.v, sv.ok = v, true
	sv.mu.Unlock()
	return v, nil
}

// check refuses a write of the call routed by r once r's home no longer
// holds its slot: the slot's view (renewed when due) names another home
// or epoch, or its lease is ending.
func (h *homes) check(ctx context.Context, r *route) error {
	v, err := h.view(ctx, r.slot)
	if err != nil {
		return err
	}
	if v.Home != r.region || v.Epoch != r.epoch {
		return noHome(r.slot, fmt.Errorf("epoch %d moved it from %s to %s", v.Epoch, r.region, v.Home))
	}
	return h.usable(v)
}

// until is when r's home must have stopped acting on its lease, as the
// store knows it: the margin before the lease ends, or now if the slot
// moved.
func (h *homes) until(r *route) time.Time {
	v, ok := h.slot(r.slot).known()
	if !ok || v.Home != r.region || v.Epoch != r.epoch {
		return h.s.now()
	}
	return v.Until.Add(-h.s.margin)
}

// router is the store's client with Homes: each call's requests go to
// its route's Region; every write first checks that the route's home
// still holds its slot, and is sent (its retries too) only until the
// holder's stop point, the margin before the home's lease ends: a retry
// landing later could land after a failover's new home took the key,
// before its claim reached the old home's replica.
type router struct{ h *homes }

func (r router) client(ctx context.Context, write bool) (API, error) {
	rt := routeOf(ctx)
	if rt == nil {
		return r.h.clients[r.h.cfg.Region], nil
	}
	if write {
		if err := r.h.check(ctx, rt); err != nil {
			return nil, err
		}
	}
	return rt.db, nil
}

// writing is ctx for a write of the call routed with it: ending at its
// home's stop point.
func (r router) writing(ctx context.Context) (context.Context, context.CancelFunc) {
	rt := routeOf(ctx)
	if rt == nil {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, r.h.until(rt))
}

func (r router) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	db, err := r.client(ctx, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.writing(ctx)
	defer cancel()
	return db.PutItem(ctx, in, opts...)
}

func (r router) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	db, err := r.client(ctx, false)
	if err != nil {
		return nil, err
	}
	return db.GetItem(ctx, in, opts...)
}

func (r router) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	db, err := r.client(ctx, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.writing(ctx)
	defer cancel()
	return db.UpdateItem(ctx, in, opts...)
}

func (r router) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	db, err := r.client(ctx, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.writing(ctx)
	defer cancel()
	return db.DeleteItem(ctx, in, opts...)
}

func (r router) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	db, err := r.client(ctx, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.writing(ctx)
	defer cancel()
	return db.TransactWriteItems(ctx, in, opts...)
}

// stamp adds to a claim's item the Region whose replica takes it and its
// home's epoch, when the store knows them.
func (s *Store) stamp(ctx context.Context, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if r := routeOf(ctx); r != nil {
		item[s.attr.Origin] = str(r.region)
		item[s.attr.Epoch] = num(r.epoch)
	} else if s.region != "" {
		item[s.attr.Origin] = str(s.region)
	}
	return item
}
