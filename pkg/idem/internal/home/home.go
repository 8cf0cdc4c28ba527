// Package home is the home lease of pkg/idem on a global table with
// multi-Region eventual consistency (MREC): which Region's replica takes
// the claims of a set of keys (a slot), under which epoch, and until
// when, as promised by a quorum of voters.
//
// # Promises
//
// A voter is a table that answers conditional writes on its own: a replica
// Region's (each Region's replica evaluates conditions against its own
// items), or a witness's (a table of the same name in a Region that holds
// no replica). Each voter keeps, per slot, one promise item, written only
// through that voter's own endpoint, so that no two Regions ever write it
// and last writer wins never decides it (its copies replicated to the
// other Regions are never read). A promise says: this voter backs home H
// for the slot under epoch E, from From until Until, and backs no other
// home before Until.
//
// A home holds the slot while a quorum of voters (the epoch's Quorum,
// a majority unless a failover chose fewer; the largest any of its
// promises carries) promise it with Until ahead: until the quorum-th
// latest Until. Any store renews the promises of the
// current epoch (the highest one a quorum promises); a promise's Until
// only grows, and a voter never goes back to a lower epoch, nor leaves a
// promise that has not ended for a renewal's. A store that cannot reach a
// quorum cannot renew, so a home cut off from the other voters stops
// taking claims when its lease ends, whether or not it still serves its
// own Region's callers.
//
// # Failover
//
// A failover moves a slot to another home under the next epoch: it
// switches the voters it can reach at once, so that the old home can no
// longer renew (a renewal quorum and the failover's switched voters
// always share one: the failover needs at least n - q + 1 of the n
// voters, q being the old epoch's quorum, or a smaller one it reads),
// and the new home takes claims only from From: the latest Until the switched voters had promised the
// old home, plus the margin and the replication bound. By then the old
// home has stopped writing (its stores stop a margin before Until), and
// every write it made has reached the new home's replica if replication
// kept within the bound. Before it has read the old promises, From is the
// worst case: now plus a lease, twice the margin and the bound. A
// failover that switches too few voters fails, and leaves the old home
// the current one (its voters still a quorum); a voter it missed joins
// the new epoch once its own promise of the old one has ended, and the
// new home then takes claims no earlier than that promise's end plus the
// margin and the bound (the old home may have renewed it long after the
// failover chose its From).
//
// # One home at a time
//
// Two homes never hold the slot at once because any two quorums that can
// both be live meet: a voter they share promised the earlier epoch's
// home until at least that view's Until, and the later one's from no
// earlier than that Until plus the margin and the bound. So a failover's
// quorum is never below n - m + 1, m being the smallest quorum among the
// promises it reads (a majority before any): a smaller one asked for is
// raised to it. Were it not, a failover that switched too few voters
// could leave them a quorum of the new epoch while the voters it missed
// are still one of the old (a quorum of 1 of 3, one voter switched): two
// homes on the two sides of a partition. A quorum is never lowered once
// promised (a lowering reaches the voters one by one, and a failover run
// meanwhile could read the higher one and switch too few). With every
// quorum a majority (the default), any two meet. A quorum below a
// majority comes only from n - m + 1 below one (two voters, 1 of 2; or
// after an epoch that asked for more than a majority): it meets the
// quorums of the promises the failover read, not those of voters it could
// not reach, nor of a failover run at the same time on the other side of
// a partition, so it is safe only while the voters it did not switch
// stay down.
package home

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// Writer is the replica a call's writes go to: its Region, and the epoch
// of its home's lease there (0 for a store without homes).
type Writer struct {
	Region string
	Epoch  int64
}

// writerKey is the context key of a call's Writer.
type writerKey struct{}

// WithWriter returns ctx for a call whose writes go where w says.
func WithWriter(ctx context.Context, w Writer) context.Context {
	return context.WithValue(ctx, writerKey{}, w)
}

// WriterFrom returns the Writer of the call whose operation runs with
// ctx; ok is false for a store told of no Region.
func WriterFrom(ctx context.Context) (Writer, bool) {
	w, ok := ctx.Value(writerKey{}).(Writer)
	return w, ok
}

// Defaults of a home lease, for every store and operator of a table.
const (
	// DefaultLease is how long a renewal extends a promise.
	DefaultLease = 20 * time.Second
	// DefaultBound is the replication bound.
	DefaultBound = 10 * time.Second
	// DefaultMargin is the stores' default lease margin (pkg/idem's
	// WithLease).
	DefaultMargin = 2 * time.Second
)

// WitnessName names the witness among the voters.
const WitnessName = "witness"

// Voters are the voters of a table: each Region's client, in the order of
// the Regions' names, then the witness's, if any.
func Voters[DBT DB](clients map[string]DBT, witness DB) []Voter {
	var voters []Voter
	for _, r := range slices.Sorted(maps.Keys(clients)) {
		voters = append(voters, Voter{Name: r, DB: clients[r]})
	}
	if witness != nil {
		voters = append(voters, Voter{Name: WitnessName, DB: witness})
	}
	return voters
}

// DB is the part of a DynamoDB client a voter is asked through.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Voter is one table that promises homes: a replica Region's, or a
// witness's.
type Voter struct {
	Name string
	DB   DB
}

// Config is what every store and failover of one table share.
type Config struct {
	Table  string
	Layout idemtable.Layout // with its defaults
	Voters []Voter
	// Lease is how long a renewal extends a promise.
	Lease time.Duration
	// Margin is what a home leaves before Until, and adds to it for
	// clocks and requests in flight.
	Margin time.Duration
	// Bound is the replication bound: how long a write may take to reach
	// every replica.
	Bound time.Duration
	Now   func() time.Time
}

// The promise item's attributes: its own names, since no record holds
// them (promise items live under keys no scope's ID can spell).
const (
	attrHome   = "home"
	attrEpoch  = "epoch"
	attrQuorum = "quorum"
	attrFrom   = "from_ms"
	attrUntil  = "until_ms"
)

// IDPrefix starts the ID of every promise item; a scope's ID starts with
// "v1|", so none is one.
const IDPrefix = "!home|"

// ID is the ID of a voter's promise item for a slot.
func ID(slot, voter string) string { return IDPrefix + slot + "|" + voter }

// Promise is what one voter promises for a slot.
type Promise struct {
	Voter string
	// Found is false when the voter promises nothing yet (or Err).
	Found  bool
	Home   string
	Epoch  int64
	Quorum int
	From   time.Time
	Until  time.Time
	// Err is why the voter could not be read or written.
	Err error
}

// View is what a quorum of voters promise: Home may take the slot's
// claims from From until Until, under Epoch.
type View struct {
	Slot   string
	Home   string
	Epoch  int64
	Quorum int
	From   time.Time
	Until  time.Time
}

// ErrNoQuorum: too few voters answered for a slot's home to hold it.
var ErrNoQuorum = errors.New("too few voters promise the home")

// Majority is a majority of n voters.
func Majority(n int) int { return n/2 + 1 }

func (c *Config) key(slot, voter string) map[string]types.AttributeValue {
	return c.Layout.Key(ID(slot, voter))
}

// decode reads a promise item; a missing item is a promise not found.
func decode(voter string, item map[string]types.AttributeValue) Promise {
	p := Promise{Voter: voter}
	if len(item) == 0 {
		return p
	}
	r := ddbitem.Read(item)
	p.Home = r.S(attrHome)
	p.Epoch = r.Int(attrEpoch)
	p.Quorum = int(r.Int(attrQuorum))
	p.From = time.UnixMilli(r.Int(attrFrom))
	p.Until = time.UnixMilli(r.Int(attrUntil))
	if err := r.Err(); err != nil {
		p.Err = fmt.Errorf("promise of %s: %w", voter, err)
		return p
	}
	p.Found = true
	return p
}

// each runs fn for every voter at once and returns their answers, in the
// voters' order. A voter gets the margin to answer (the time a request
// may be in flight): one whose Region is lost without refusing
// connections would otherwise hold up every renewal of a home that a
// quorum still promises until the client times out, past the lease. A
// request cut short may still land; it counts as unanswered, which
// renews less and switches fewer voters than landed, never more.
func (c *Config) each(ctx context.Context, fn func(ctx context.Context, v Voter) Promise) []Promise {
	out := make([]Promise, len(c.Voters))
	var wg sync.WaitGroup
	for i, v := range c.Voters {
		wg.Go(func() {
			ctx := ctx
			if c.Margin > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.Margin)
				defer cancel()
			}
			out[i] = fn(ctx, v)
		})
	}
	wg.Wait()
	return out
}

// Read reads every voter's promise for slot, consistently, at once.
func (c *Config) Read(ctx context.Context, slot string) []Promise {
	return c.each(ctx, func(ctx context.Context, v Voter) Promise {
		out, err := v.DB.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(c.Table), Key: c.key(slot, v.Name), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return Promise{Voter: v.Name, Err: err}
		}
		return decode(v.Name, out.Item)
	})
}

// Highest is the promise of the highest epoch among ps (the latest From
// among its voters'), and whether any voter promised anything.
func Highest(ps []Promise) (Promise, bool) {
	var top Promise
	found := false
	for _, p := range ps {
		if !p.Found {
			continue
		}
		if !found || p.Epoch > top.Epoch || p.Epoch == top.Epoch && p.From.After(top.From) {
			top, found = p, true
		}
	}
	return top, found
}

// Decide is the view ps give of slot at now: the highest epoch that a
// quorum of its voters (its Quorum) promise beyond now, valid until the
// quorum-th latest Until among them, from the latest From. ok is false
// when no epoch has such a quorum: the view is then the highest epoch
// promised. (A failover that switched too few voters leaves the epoch
// before it the one with a quorum, and its home in place.)
func Decide(slot string, ps []Promise, now time.Time) (View, bool) {
	type key struct {
		epoch int64
		home  string
	}
	live := map[key][]Promise{}
	for _, p := range ps {
		if p.Found && p.Until.After(now) {
			k := key{p.Epoch, p.Home}
			live[k] = append(live[k], p)
		}
	}
	var best View
	ok := false
	for k, vs := range live {
		// The largest quorum any of its promises carries: two failovers
		// run at once to the same home and epoch may have asked for
		// different ones.
		q := 0
		for _, p := range vs {
			q = max(q, p.Quorum)
		}
		if q < 1 || len(vs) < q || ok && k.epoch <= best.Epoch {
			continue
		}
		v := View{Slot: slot, Home: k.home, Epoch: k.epoch, Quorum: q}
		untils := make([]time.Time, 0, len(vs))
		for _, p := range vs {
			untils = append(untils, p.Until)
			if p.From.After(v.From) {
				v.From = p.From
			}
		}
		slices.SortFunc(untils, func(a, b time.Time) int { return b.Compare(a) })
		v.Until = untils[q-1]
		best, ok = v, true
	}
	if ok {
		return best, true
	}
	top, found := Highest(ps)
	if !found {
		return View{Slot: slot}, false
	}
	return View{Slot: slot, Home: top.Home, Epoch: top.Epoch, Quorum: top.Quorum, From: top.From}, false
}

// Renew asks every voter to promise v (its home, epoch, quorum and From)
// until now plus the lease: a voter that promises v's home and epoch
// extends its promise (never shortening it, never changing its From); one
// with no promise, or whose promise of a lower epoch has ended (it missed
// the failover to v's), takes v's whole. It returns the view the answers
// give; ErrNoQuorum when too few voters promised.
func (c *Config) Renew(ctx context.Context, v View) (View, []Promise, error) {
	now := c.Now()
	until := time.UnixMilli(now.Add(c.Lease).UnixMilli())
	ps := c.each(ctx, func(ctx context.Context, vt Voter) Promise {
		p, err := c.extend(ctx, vt, v, until)
		if err == nil && p.Found && p.Epoch < v.Epoch && !p.Until.After(now) {
			p, err = c.grant(ctx, vt, v, p, now, until)
		}
		if err != nil {
			return Promise{Voter: vt.Name, Err: err}
		}
		return p
	})
	got, ok := Decide(v.Slot, ps, now)
	if !ok {
		return got, ps, fmt.Errorf("%w: %s", ErrNoQuorum, tally(got, ps, now))
	}
	return got, ps, nil
}

// extend extends vt's promise of v's home and epoch to until, or
// bootstraps it where vt promises nothing: the voter's promise as it then
// stands (a later Until of another store's, a lower or higher epoch).
func (c *Config) extend(ctx context.Context, vt Voter, v View, until time.Time) (Promise, error) {
	_, err := vt.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(c.Table),
		Key:                       c.key(v.Slot, vt.Name),
		UpdateExpression:          aws.String("SET #u = :u, #h = if_not_exists(#h, :h), #e = if_not_exists(#e, :e), #q = if_not_exists(#q, :q), #f = if_not_exists(#f, :f)"),
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR (#e = :e AND #h = :h AND #u <= :u)"),
		ExpressionAttributeNames:  c.names(),
		ExpressionAttributeValues: c.values(v, until),
		// A later promise of the same home (another store renewed
		// further), or another epoch: the voter's as it stands.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return decode(vt.Name, ccf.Item), nil
	}
	if err != nil {
		return Promise{}, err
	}
	return Promise{Voter: vt.Name, Found: true, Home: v.Home, Epoch: v.Epoch, Quorum: v.Quorum, From: time.UnixMilli(v.From.UnixMilli()), Until: until}, nil
}

// grant replaces vt's ended promise of a lower epoch (old) with v's,
// until until, from no earlier than old's end plus the margin and the
// bound: the old epoch may have been renewed long after the failover
// that began v's chose v.From (one that switched too few voters), and
// its home's last writes must reach v's home before it takes claims.
func (c *Config) grant(ctx context.Context, vt Voter, v View, old Promise, now, until time.Time) (Promise, error) {
	if after := old.Until.Add(c.Margin + c.Bound); after.After(v.From) {
		v.From = after
	}
	values := c.values(v, until)
	values[":now"] = ddbitem.N(now.UnixMilli())
	values[":old"] = ddbitem.N(old.Until.UnixMilli())
	_, err := vt.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(c.Table),
		Key:                                 c.key(v.Slot, vt.Name),
		UpdateExpression:                    aws.String("SET #h = :h, #e = :e, #q = :q, #f = :f, #u = :u"),
		ConditionExpression:                 aws.String("#e < :e AND #u < :now AND #u <= :old"),
		ExpressionAttributeNames:            c.names("#h", "#e", "#q", "#f", "#u"),
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return decode(vt.Name, ccf.Item), nil
	}
	if err != nil {
		return Promise{}, err
	}
	return Promise{Voter: vt.Name, Found: true, Home: v.Home, Epoch: v.Epoch, Quorum: v.Quorum, From: time.UnixMilli(v.From.UnixMilli()), Until: until}, nil
}

// names are a promise's attribute names for an expression: those of
// only, or every one (the partition key's "#pk" included).
func (c *Config) names(only ...string) map[string]string {
	all := map[string]string{
		"#pk": c.Layout.PartitionKey, "#h": attrHome, "#e": attrEpoch, "#q": attrQuorum, "#f": attrFrom, "#u": attrUntil,
	}
	if len(only) == 0 {
		return all
	}
	out := make(map[string]string, len(only))
	for _, n := range only {
		out[n] = all[n]
	}
	return out
}

// values are a promise's values: v's, until until.
func (c *Config) values(v View, until time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":h": ddbitem.S(v.Home), ":e": ddbitem.N(v.Epoch), ":q": ddbitem.N(int64(v.Quorum)),
		":f": ddbitem.N(v.From.UnixMilli()), ":u": ddbitem.N(until.UnixMilli()),
	}
}

// tally says what each voter answered, for an error.
func tally(v View, ps []Promise, now time.Time) string {
	s := fmt.Sprintf("slot %s, epoch %d (home %s) needs %d of %d voters:", v.Slot, v.Epoch, v.Home, v.Quorum, len(ps))
	for _, p := range ps {
		switch {
		case p.Err != nil:
			s += fmt.Sprintf(" %s: %v;", p.Voter, p.Err)
		case !p.Found:
			s += fmt.Sprintf(" %s: no promise;", p.Voter)
		case p.Until.After(now):
			s += fmt.Sprintf(" %s: epoch %d home %s until %s;", p.Voter, p.Epoch, p.Home, p.Until.UTC().Format(time.RFC3339Nano))
		default:
			s += fmt.Sprintf(" %s: epoch %d home %s, ended %s;", p.Voter, p.Epoch, p.Home, p.Until.UTC().Format(time.RFC3339Nano))
		}
	}
	return s
}

// Ensure is the slot's view at now: read from the voters, and renewed
// when the quorum's promises end within half a lease, or no epoch has a
// quorum (then the highest epoch's is renewed); bootstrapped for home
// first (epoch 1, a majority) when no voter promises anything yet.
func (c *Config) Ensure(ctx context.Context, slot, first string) (View, error) {
	now := c.Now()
	ps := c.Read(ctx, slot)
	v, ok := Decide(slot, ps, now)
	if ok && v.Until.Sub(now) >= c.Lease/2 {
		return v, nil
	}
	if _, found := Highest(ps); !found {
		if reached(ps) == 0 {
			return v, fmt.Errorf("%w: %s", ErrNoQuorum, tally(v, ps, now))
		}
		v = View{Slot: slot, Home: first, Epoch: 1, Quorum: Majority(len(c.Voters)), From: time.UnixMilli(0)}
	}
	v, _, err := c.Renew(ctx, v)
	return v, err
}

// reached is how many voters answered.
func reached(ps []Promise) int {
	n := 0
	for _, p := range ps {
		if p.Err == nil {
			n++
		}
	}
	return n
}

// ErrFailover: a failover could not switch enough voters (it switched
// those it reached, which a later read or failover completes).
var ErrFailover = errors.New("failover incomplete")

// Failover moves slot to home to under the epoch after the highest one
// the voters promise, with a quorum of quorum voters (0: a majority),
// raised to n - q + 1 if fewer, q being the smallest quorum among the
// promises it reads. It switches every voter it reaches, and needs
// n - q + 1 of them; then it brings From forward to the latest
// Until those voters had promised, plus the margin and the bound. Run
// again after one that reached too few voters (or whose answer was
// lost), it begins the epoch after that one's, whose From waits for
// every promise it switched, that one's included. It returns the new
// view (Until is zero until a renewal from From on).
func (c *Config) Failover(ctx context.Context, slot, to string, quorum int) (View, []Promise, error) {
	n := len(c.Voters)
	if quorum == 0 {
		quorum = Majority(n)
	}
	if quorum < 1 || quorum > n {
		return View{}, nil, fmt.Errorf("a quorum of %d of %d voters", quorum, n)
	}
	before := c.Read(ctx, slot)
	if reached(before) == 0 {
		return View{}, before, fmt.Errorf("%w: no voter answered: %s", ErrFailover, tally(View{Slot: slot}, before, c.Now()))
	}
	now := c.Now()
	worst := time.UnixMilli(now.Add(c.Lease + 2*c.Margin + c.Bound).UnixMilli())
	top, _ := Highest(before)
	// The smallest quorum among the promises read (a majority before
	// any): the old epoch's, or a failed failover's, or an ended one's.
	// The failover needs n - oldQuorum + 1 voters, so that the voters it
	// leaves cannot be that quorum; and its own quorum is at least as
	// many, so that the voters it switched are never a quorum while the
	// ones it missed still are (a failover that switched too few).
	oldQuorum := 0
	for _, p := range before {
		if p.Found && p.Quorum >= 1 && (oldQuorum == 0 || p.Quorum < oldQuorum) {
			oldQuorum = p.Quorum
		}
	}
	if oldQuorum == 0 {
		oldQuorum = Majority(n)
	}
	quorum = max(quorum, n-oldQuorum+1)
	v := View{Slot: slot, Home: to, Epoch: top.Epoch + 1, Quorum: quorum, From: worst}
	switched := c.each(ctx, func(ctx context.Context, vt Voter) Promise {
		out, err := vt.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                aws.String(c.Table),
			Key:                      c.key(slot, vt.Name),
			UpdateExpression:         aws.String("SET #h = :h, #e = :e, #q = :q, #f = :f, #u = :f"),
			ConditionExpression:      aws.String("attribute_not_exists(#pk) OR #e < :e"),
			ExpressionAttributeNames: c.names(),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":h": ddbitem.S(to), ":e": ddbitem.N(v.Epoch), ":q": ddbitem.N(int64(v.Quorum)), ":f": ddbitem.N(v.From.UnixMilli()),
			},
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			p := decode(vt.Name, ccf.Item)
			return Promise{Voter: vt.Name, Err: fmt.Errorf("promises epoch %d (home %s) already: another failover ran", p.Epoch, p.Home)}
		}
		if err != nil {
			return Promise{Voter: vt.Name, Err: err}
		}
		old := decode(vt.Name, out.Attributes)
		old.Found = true // switched; Until is what it had promised before
		return old
	})
	var ok []Promise
	for _, p := range switched {
		if p.Err == nil {
			ok = append(ok, p)
		}
	}
	if len(ok) < n-oldQuorum+1 {
		return v, switched, fmt.Errorf("%w: switched %d of %d voters to epoch %d (home %s), %d needed so the old home cannot renew: %s",
			ErrFailover, len(ok), n, v.Epoch, to, n-oldQuorum+1, tally(v, switched, now))
	}
	// The old home's lease ended by the latest Until it was promised by
	// the switched voters (they share one with any quorum that renewed it).
	var end time.Time
	for _, p := range ok {
		if p.Until.After(end) {
			end = p.Until
		}
	}
	tight := time.UnixMilli(end.Add(c.Margin + c.Bound).UnixMilli())
	if !tight.Before(worst) {
		return v, switched, nil
	}
	v.From = tight
	c.each(ctx, func(ctx context.Context, vt Voter) Promise {
		_, err := vt.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                aws.String(c.Table),
			Key:                      c.key(slot, vt.Name),
			UpdateExpression:         aws.String("SET #f = :t, #u = :t"),
			ConditionExpression:      aws.String("#e = :e AND #h = :h AND #f = :w AND #u = :w"),
			ExpressionAttributeNames: c.names("#h", "#e", "#f", "#u"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":h": ddbitem.S(to), ":e": ddbitem.N(v.Epoch), ":w": ddbitem.N(worst.UnixMilli()), ":t": ddbitem.N(tight.UnixMilli()),
			},
		})
		return Promise{Voter: vt.Name, Err: err}
	})
	return v, switched, nil
}

// Describe is a promise for an operator: "epoch 2 home us-west-2 until
// ...".
func (p Promise) Describe() string {
	switch {
	case p.Err != nil:
		return "unreachable: " + p.Err.Error()
	case !p.Found:
		return "no promise"
	}
	return "epoch " + strconv.FormatInt(p.Epoch, 10) + " home " + p.Home + " from " + p.From.UTC().Format(time.RFC3339Nano) + " until " + p.Until.UTC().Format(time.RFC3339Nano)
}
