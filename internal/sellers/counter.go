package sellers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// Operation is the idempotency scope's operation of the counter: with the
// event's source as principal and its CloudEvent id as key, a delivery of
// the same event finds the same record.
const Operation = "sellerstats ProductCreated"

// ErrOverflow reports a total that would pass what int64 holds; the event
// is not counted, and no retry can change that.
var ErrOverflow = errors.New("sellers: total would overflow")

// Counter applies ProductCreated events to the sellers table, each event
// once: a batch's idempotency records and one update per seller commit in
// one TransactWriteItems (pkg/idem's Store.ExecuteBatch).
type Counter struct {
	store *idem.Store
	table string
	now   func() time.Time
	limit int64 // the largest count or total stored: math.MaxInt64
}

// NewCounter returns a Counter writing to the sellers table. Its batches
// claim their keys in their own transactions (the update is computed from
// the event alone, so a duplicate needs no IN_PROGRESS state to wait on).
func NewCounter(store *idem.Store, table string) (*Counter, error) {
	if store == nil || table == "" {
		return nil, errors.New("sellers: counter needs an idempotency store and the sellers table name")
	}
	return &Counter{store: store, table: table, now: time.Now, limit: math.MaxInt64}, nil
}

// applied is the response stored for a counted event: what it changed.
type applied struct {
	EventID   string `json:"event_id"`
	SellerID  string `json:"seller_id"`
	ProductID string `json:"product_id"`
	Currency  string `json:"currency"`
	Cents     int64  `json:"cents"`
}

// Applied is what became of one event of a batch.
type Applied struct {
	// Outcome is executed for the delivery that counted the event and
	// replayed for every other one.
	Outcome idem.Outcome
	// Err wraps ErrPoison (an event id that is no key), ErrOverflow,
	// idem.ErrKeyReuse (another event under the same id: never counted),
	// idem.ErrInFlight, or a store error (idem.IsUnavailable tells one a
	// retry can fix).
	Err error
}

// Apply counts one event once; see ApplyBatch.
func (c *Counter) Apply(ctx context.Context, ev ProductCreated) (idem.Outcome, error) {
	a := c.ApplyBatch(ctx, []ProductCreated{ev})[0]
	return a.Outcome, a.Err
}

// ApplyBatch counts each event once, a batch in one TransactWriteItems:
// each event's idempotency record, and one update per seller adding its
// events' count and per-currency totals. Events delivered before are
// acknowledged without changing anything, and the rest commit in one more
// transaction (pkg/idem's Store.ExecuteBatch). It returns one Applied per
// event, in order; an event fails only for its own sake.
func (c *Counter) ApplyBatch(ctx context.Context, evs []ProductCreated) []Applied {
	out := make([]Applied, len(evs))
	items := make([]idem.BatchItem, 0, len(evs))
	of := make([]int, 0, len(evs)) // items[k] is evs[of[k]]
	for i, ev := range evs {
		item, err := c.item(ev)
		if err != nil {
			out[i] = Applied{Outcome: idem.OutcomeRejected, Err: err}
			continue
		}
		items = append(items, item)
		of = append(of, i)
	}
	if len(items) == 0 {
		return out
	}
	res, err := c.store.ExecuteBatch(ctx, items, func(executing []int) ([]types.TransactWriteItem, error) {
		batch := make([]ProductCreated, len(executing))
		for k, j := range executing {
			batch[k] = evs[of[j]]
		}
		return c.updates(batch), nil
	})
	if err != nil { // a programming error: the shared writes are always given
		for _, i := range of {
			out[i] = Applied{Outcome: idem.OutcomeError, Err: err}
		}
		return out
	}
	for k, r := range res {
		ev := evs[of[k]]
		err := r.Err
		if errors.Is(err, idem.ErrConditionFailed) {
			err = fmt.Errorf("%w: seller %s, %s total or product count: %w", ErrOverflow, ev.Product.SellerID(), ev.Product.Price().Currency(), err)
		}
		out[of[k]] = Applied{Outcome: r.Outcome, Err: err}
	}
	return out
}

// item is the event's part of a batch: its key (the CloudEvent id, from
// its source), and what it changes as its response and fingerprint: the
// same id with another product, seller or price is key reuse, never
// counted.
func (c *Counter) item(ev ProductCreated) (idem.BatchItem, error) {
	scope, err := idem.NewScope(Operation, ev.Source, ev.EventID)
	if err != nil {
		return idem.BatchItem{}, fmt.Errorf("%w: %w", ErrPoison, err)
	}
	p := ev.Product
	body, err := json.Marshal(applied{
		EventID: ev.EventID, SellerID: p.SellerID().String(), ProductID: p.ID().String(),
		Currency: string(p.Price().Currency()), Cents: p.Price().Cents(),
	})
	if err != nil {
		return idem.BatchItem{}, fmt.Errorf("sellers: encode: %w", err)
	}
	fp, err := idem.Fingerprint(json.RawMessage(body))
	if err != nil {
		return idem.BatchItem{}, err
	}
	resp := idem.Response{Status: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: body}
	return idem.BatchItem{Scope: scope, Fingerprint: fp, Response: resp}, nil
}

// sellerSum is what a batch's events add to one seller.
type sellerSum struct {
	seller     string
	count      int64
	currencies []money.Currency // in first-seen order
	cents      map[money.Currency]int64
	over       bool // a total passes the limit by the batch's events alone
}

// updates adds the events to their sellers: per seller, one update with
// the number of products and each currency's total, so a batch's events
// of one seller touch its item once. DynamoDB numbers hold 38 digits, so
// the condition keeps every total and the count within int64, which reads
// back exactly; a sum that alone passes that limit gets a condition that
// fails, and the store then tries the events in smaller sets.
func (c *Counter) updates(evs []ProductCreated) []types.TransactWriteItem {
	var order []*sellerSum
	bySeller := map[string]*sellerSum{}
	for _, ev := range evs {
		p := ev.Product
		id := p.SellerID().String()
		s := bySeller[id]
		if s == nil {
			s = &sellerSum{seller: id, cents: map[money.Currency]int64{}}
			bySeller[id] = s
			order = append(order, s)
		}
		s.count++
		cur := p.Price().Currency()
		if _, ok := s.cents[cur]; !ok {
			s.currencies = append(s.currencies, cur)
		}
		cents := p.Price().Cents()
		if s.cents[cur] > c.limit-cents {
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
			":count_limit": ddbitem.N(c.limit - s.count),
			":now":         now,
		}
		add := []string{"#count :n"}
		conds := []string{"(attribute_not_exists(#count) OR #count <= :count_limit)"}
		for k, cur := range s.currencies {
			n, v, lim := "#c"+strconv.Itoa(k), ":c"+strconv.Itoa(k), ":l"+strconv.Itoa(k)
			names[n] = centsAttr(cur)
			values[v] = ddbitem.N(s.cents[cur])
			values[lim] = ddbitem.N(c.limit - s.cents[cur])
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
			Key:                       map[string]types.AttributeValue{AttrSellerID: ddbitem.S(s.seller)},
			UpdateExpression:          aws.String("ADD " + strings.Join(add, ", ") + " SET #updated = :now"),
			ConditionExpression:       aws.String(strings.Join(conds, " AND ")),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}})
	}
	return writes
}
