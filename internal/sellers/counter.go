package sellers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// Operation is the idempotency scope's operation of the counter: with the
// event's source as principal and its CloudEvent id as key, a delivery of
// the same event finds the same record.
const Operation = "sellerstats ProductCreated"

// ErrOverflow reports a total that would pass what int64 holds. From the
// counter, the event is not counted (no shard of its seller can take it),
// and no retry can change that; from the reader, a seller's shards hold
// more than int64 in all (which the counter never writes: see Shards).
var ErrOverflow = errors.New("sellers: total would overflow")

// Counter applies ProductCreated events to the sellers table, each event
// once: a batch's idempotency records and one update per seller (of one
// of its shards) commit in one TransactWriteItems (pkg/idem/idemsqs's
// Transact).
type Counter struct {
	store  *idem.Store
	table  string
	now    func() time.Time
	limit  int64 // the largest count or total a seller has in all: math.MaxInt64
	shards int   // Shards, but in the sweep's measurements
	homes  *homes
}

// NewCounter returns a Counter writing to the sellers table. Its batches
// claim their keys in their own transactions (the update is computed from
// the event alone, so a duplicate needs no IN_PROGRESS state to wait on).
func NewCounter(store *idem.Store, table string) (*Counter, error) {
	if store == nil || table == "" {
		return nil, errors.New("sellers: counter needs an idempotency store and the sellers table name")
	}
	return &Counter{store: store, table: table, now: time.Now, limit: math.MaxInt64, shards: Shards, homes: newHomes(Shards)}, nil
}

// applied is what counting an event changes: its JSON is the event's
// fingerprint, so the same id with another product is key reuse.
type applied struct {
	EventID   string `json:"event_id"`
	SellerID  string `json:"seller_id"`
	ProductID string `json:"product_id"`
	Currency  string `json:"currency"`
	Cents     int64  `json:"cents"`
}

// ApplyMessages counts the events an SQS batch carries, each once, with
// pkg/idem/idemsqs: decode reads each message's event (an error is that
// message's alone), and the batch's new events commit in one
// TransactWriteItems, each event's idempotency record with one update per
// seller adding its events' count and per-currency totals to one of the
// seller's shards. Events delivered before are acknowledged without
// changing anything, and the rest commit in one more transaction
// (Store.ExecuteBatch, which also retries conflicts with full jitter
// within ctx). It returns one Result per message, in order; a message
// fails only for its own sake. Err wraps decode's error, ErrPoison (an
// event id that is no key), ErrOverflow, idem.ErrKeyReuse (another event
// under the same id: never counted), idem.ErrInFlight, or a store error
// (idem.IsUnavailable tells one a retry can fix).
func (c *Counter) ApplyMessages(ctx context.Context, ev events.SQSEvent, decode func(events.SQSMessage) (ProductCreated, error)) []idemsqs.Result {
	values := make(map[string]applied, len(ev.Records)) // by messageId
	entry := func(m events.SQSMessage) (idemsqs.Entry[applied], error) {
		pc, err := decode(m)
		if err != nil {
			return idemsqs.Entry[applied]{}, err
		}
		v := appliedOf(pc)
		values[m.MessageId] = v
		return idemsqs.Entry[applied]{Principal: pc.Source, Key: pc.EventID, Value: v}, nil
	}
	// ExecuteBatch calls the shared writes once per transaction it sends,
	// one after another: each updates the batch's home shard of its
	// sellers, and after one cancelled because another transaction held
	// that shard, the next goes to another (see homes).
	home := c.homes.take()
	defer func() { c.homes.give(home) }()
	_, res := idemsqs.Transact(ctx, c.store, ev, Operation, entry, func(executing []applied, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		if heldShard(contended, c.table) {
			home = c.homes.move(home)
		}
		return c.updates(executing, func(string) int { return home }), nil
	})
	for i, r := range res {
		m := ev.Records[i]
		if overflowed(r.Err) {
			// The shard it met is full; another may not be.
			r = c.onEveryShard(ctx, m, entry)
		}
		switch v := values[m.MessageId]; {
		case overflowed(r.Err):
			r.Err = fmt.Errorf("%w: seller %s, %s total or product count: %w", ErrOverflow, v.SellerID, v.Currency, r.Err)
		case r.Outcome == idem.OutcomeRejected && errors.Is(r.Err, idem.ErrInvalidKey):
			r.Err = fmt.Errorf("%w: %w", ErrPoison, r.Err)
		}
		res[i] = r
	}
	return res
}

// appliedOf is what counting pc changes: the response stored for its key.
func appliedOf(pc ProductCreated) applied {
	p := pc.Product
	return applied{
		EventID: pc.EventID, SellerID: p.SellerID().String(), ProductID: p.ID().String(),
		Currency: string(p.Price().Currency()), Cents: p.Price().Cents(),
	}
}

// overflowed reports whether err is a seller update's own condition
// failing alone (pkg/idem's ErrConditionFailed): the only condition of
// those updates is the overflow guard.
func overflowed(err error) bool { return errors.Is(err, idem.ErrConditionFailed) }

// onEveryShard counts one message's event that the shard it met could not
// take without passing its cap: it tries each shard of the seller in turn
// (one transaction each, from a random one), until one takes it, or the
// event turns out to be counted meanwhile, or fails for another reason.
// Refused by all, the event can never be counted: every shard's total only
// grows. A seller's total nears int64 long before this costs anything.
func (c *Counter) onEveryShard(ctx context.Context, m events.SQSMessage, entry func(events.SQSMessage) (idemsqs.Entry[applied], error)) idemsqs.Result {
	var r idemsqs.Result
	first := rand.IntN(c.shards)
	one := events.SQSEvent{Records: []events.SQSMessage{m}}
	for k := range c.shards {
		shard := (first + k) % c.shards
		_, res := idemsqs.Transact(ctx, c.store, one, Operation, entry, func(executing []applied, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			return c.updates(executing, func(string) int { return shard }), nil
		})
		if r = res[0]; !overflowed(r.Err) {
			return r
		}
	}
	return r
}

// sellerSum is what a batch's events add to one seller.
type sellerSum struct {
	seller     string
	count      int64
	currencies []money.Currency // in first-seen order
	cents      map[money.Currency]int64
	over       bool // a total passes the limit by the batch's events alone
}

// updates adds the events to their sellers: per seller, one update of
// the shard shardOf gives, with the number of products and each
// currency's total, so a batch's events of one seller touch one of its
// items once. DynamoDB numbers hold 38 digits, so the condition keeps
// every total and the count of a shard within its cap, the int64 limit
// divided by the number of shards: the sum of the shards then fits in
// int64 and reads back exactly. A sum that alone passes the cap gets a
// condition that fails, and the store then tries the events in smaller
// sets.
func (c *Counter) updates(evs []applied, shardOf func(seller string) int) []types.TransactWriteItem {
	limit := c.limit / int64(c.shards)
	var order []*sellerSum
	bySeller := map[string]*sellerSum{}
	for _, ev := range evs {
		id := ev.SellerID
		s := bySeller[id]
		if s == nil {
			s = &sellerSum{seller: id, cents: map[money.Currency]int64{}}
			bySeller[id] = s
			order = append(order, s)
		}
		s.count++
		cur := money.Currency(ev.Currency) // from a validated money.Money
		if _, ok := s.cents[cur]; !ok {
			s.currencies = append(s.currencies, cur)
		}
		cents := ev.Cents
		if s.cents[cur] > limit-cents {
			s.over = true // the sum alone passes the limit
		}
		s.cents[cur] += cents
	}
	now := ddbitem.Time(c.now())
	writes := make([]types.TransactWriteItem, 0, len(order))
	for _, s := range order {
		names := map[string]string{"#count": attrProductCount, "#updated": attrUpdatedAt}
		values := map[string]types.AttributeValue{
			":n":           ddbitem.N(s.count),
			":count_limit": ddbitem.N(limit - s.count),
			":now":         now,
		}
		add := []string{"#count :n"}
		conds := []string{"(attribute_not_exists(#count) OR #count <= :count_limit)"}
		for k, cur := range s.currencies {
			n, v, lim := "#c"+strconv.Itoa(k), ":c"+strconv.Itoa(k), ":l"+strconv.Itoa(k)
			names[n] = centsAttr(cur)
			values[v] = ddbitem.N(s.cents[cur])
			values[lim] = ddbitem.N(limit - s.cents[cur])
			add = append(add, n+" "+v)
			conds = append(conds, "(attribute_not_exists("+n+") OR "+n+" <= "+lim+")")
		}
		if s.over {
			// Whatever is stored, the sum cannot fit: a condition that
			// never holds makes the store try fewer events at once.
			conds = []string{"attribute_exists(#count) AND attribute_not_exists(#count)"}
			for k := range s.currencies {
				delete(names, "#c"+strconv.Itoa(k))
			}
			names["#count"] = attrProductCount
			add = []string{"#count :n"}
			values = map[string]types.AttributeValue{":n": ddbitem.N(s.count), ":now": now}
		}
		writes = append(writes, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(c.table),
			Key:                       map[string]types.AttributeValue{AttrSellerID: ddbitem.S(s.seller), AttrShard: ddbitem.N(int64(shardOf(s.seller)))},
			UpdateExpression:          aws.String("ADD " + strings.Join(add, ", ") + " SET #updated = :now"),
			ConditionExpression:       aws.String(strings.Join(conds, " AND ")),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}})
	}
	return writes
}
