package idemglobal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/home"
)

// OneHome homes every key in one Region (idem.Homes.Home): AWS's "write
// to one Region" mode, for the idempotency records.
func OneHome(region string) func(idem.Scope) string {
	return func(idem.Scope) string { return region }
}

// WriterOf returns the Region whose replica takes the writes of the call
// whose operation runs with ctx (every way in passes it to the function
// it runs), and the epoch of its home there: with idem.WithHomes, the
// key's home; with idem.WithRegion, the store's Region (epoch 0). ok is
// false for a store told of no Region. Stamp it on the items an Effect
// writes (an outbox event's origin), so that a consumer of the table's
// streams in every Region acts on each item once, in the Region that
// wrote it, rather than once per Region its replica reaches.
func WriterOf(ctx context.Context) (region string, epoch int64, ok bool) {
	w, ok := home.WriterFrom(ctx)
	return w.Region, w.Epoch, ok
}

// Control is an operator's view of the homes of one table, as its stores
// configure them (idem.WithHomes): what each voter promises, and the
// failover that moves a home to another Region.
type Control struct {
	// Table is the idempotency table's name.
	Table string
	// Layout is the table's layout (idem.WithLayout's).
	Layout idemtable.Layout
	// Homes is the stores' (its Clients, Witness, Lease and
	// ReplicationBound; Region and Home are not used).
	Homes idem.Homes
	// Margin is the stores' lease margin (idem.WithLease's; 0: their
	// default, 2 s).
	Margin time.Duration
}

// Status is what the voters promise for one home (a Region Homes.Home
// gives keys): the Region that takes their claims, and each voter's
// promise.
type Status struct {
	// Slot is the home the keys were given.
	Slot string
	// Home is the Region that takes their claims under Epoch, from From
	// until Until, as Quorum voters promise; Held is false when fewer
	// promise it now (a failover's wait, a lease no store renewed: the
	// next call renews it if it can).
	Home   string
	Epoch  int64
	Quorum int
	From   time.Time
	Until  time.Time
	Held   bool
	// Voters are each voter's promise, in order: the Regions by name, then
	// the witness.
	Voters []Vote
}

// Vote is one voter's promise for a home.
type Vote struct {
	Voter string
	// Found is false when the voter promises nothing (or Err).
	Found bool
	Home  string
	Epoch int64
	From  time.Time
	Until time.Time
	// Err is why the voter could not be read or switched.
	Err error
}

// ErrFailover: a failover reached too few voters to move the home; the
// voters it did reach promise the new home (whose wait began then), and a
// failover run again once more voters answer moves the home under an
// epoch of its own, after that one's.
var ErrFailover = home.ErrFailover

func (c Control) config() (*home.Config, error) {
	h := c.Homes
	if len(h.Clients) < 2 {
		return nil, fmt.Errorf("idemglobal: Homes.Clients names %d Regions: a global table has at least two", len(h.Clients))
	}
	if c.Table == "" {
		return nil, errors.New("idemglobal: empty table name")
	}
	cfg := &home.Config{
		Table: c.Table, Layout: c.Layout.WithDefaults(), Lease: h.Lease, Margin: c.Margin, Bound: h.ReplicationBound, Now: time.Now,
	}
	if cfg.Lease == 0 {
		cfg.Lease = home.DefaultLease
	}
	if cfg.Bound == 0 {
		cfg.Bound = home.DefaultBound
	}
	if cfg.Margin == 0 {
		cfg.Margin = home.DefaultMargin
	}
	var witness home.DB
	if h.Witness != nil {
		witness = h.Witness
	}
	cfg.Voters = home.Voters(h.Clients, witness)
	return cfg, nil
}

func status(v home.View, held bool, ps []home.Promise) Status {
	st := Status{Slot: v.Slot, Home: v.Home, Epoch: v.Epoch, Quorum: v.Quorum, From: v.From, Until: v.Until, Held: held}
	for _, p := range ps {
		st.Voters = append(st.Voters, Vote{Voter: p.Voter, Found: p.Found, Home: p.Home, Epoch: p.Epoch, From: p.From, Until: p.Until, Err: p.Err})
	}
	return st
}

// Status reads what every voter promises for slot (a Region Homes.Home
// gives keys), renewing nothing.
func (c Control) Status(ctx context.Context, slot string) (Status, error) {
	cfg, err := c.config()
	if err != nil {
		return Status{}, err
	}
	ps := cfg.Read(ctx, slot)
	v, held := home.Decide(slot, ps, cfg.Now())
	return status(v, held, ps), nil
}

// Failover moves the keys homed in slot (a Region Homes.Home gives keys)
// to the Region to, under the next epoch. Every voter it reaches stops
// promising the old home at once, so the old home cannot renew its
// lease, and the new home takes claims once the old home's lease has
// ended (by the latest Until those voters had promised it), plus the
// margin and Homes.ReplicationBound: Status.From. Until then a call
// answers idem.ErrNoHome, saying when.
//
// It needs all the voters but q - 1 of them, q being the old epoch's
// quorum (a majority: two of three voters, or with two Regions and no
// witness, one of two); fewer is ErrFailover. quorum is the new epoch's:
// 0 is a majority of the voters; it is raised to all the voters but
// q - 1 if fewer (q the smallest quorum among the promises it reads), so
// that the voters a failover switched are never a quorum while those it
// missed still are: Status.Quorum is the one used. Below a majority (1,
// with two Regions and no witness) it lets the new home renew its lease
// without the voters it could not reach, which is safe only while they
// are down: a Region cut off but alive could be failed over to on its
// own side too. docs/operations.md's
// failover runbook says when to run it, and what to check first.
func (c Control) Failover(ctx context.Context, slot, to string, quorum int) (Status, error) {
	cfg, err := c.config()
	if err != nil {
		return Status{}, err
	}
	if _, ok := c.Homes.Clients[to]; !ok {
		return Status{}, fmt.Errorf("idemglobal: failover to %q, which Homes.Clients does not name", to)
	}
	v, ps, err := cfg.Failover(ctx, slot, to, quorum)
	if err != nil {
		return status(v, false, ps), fmt.Errorf("idemglobal: %w", err)
	}
	return status(v, false, ps), nil
}
