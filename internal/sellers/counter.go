package sellers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// Operation is the idempotency scope's operation of the counter: with the
// event's source as principal and its CloudEvent id as key, a delivery of
// the same event finds the same record.
const Operation = "sellerstats ProductCreated"

// ErrOverflow reports a total that would pass what int64 holds; the event
// is not counted, and no retry can change that.
var ErrOverflow = errors.New("sellers: total would overflow")

// Counter applies ProductCreated events to the sellers table, each event
// once: the seller's update and the event's idempotency record commit in
// one TransactWriteItems, in pkg/idem's transact mode.
type Counter struct {
	store *idem.Store
	table string
	now   func() time.Time
	limit int64 // the largest count or total stored: math.MaxInt64
}

// NewCounter returns a Counter writing to the sellers table; store must
// be in transact mode (the update is computed from the event alone, so a
// duplicate needs no IN_PROGRESS state to wait on).
func NewCounter(store *idem.Store, table string) (*Counter, error) {
	switch {
	case store == nil || table == "":
		return nil, errors.New("sellers: counter needs an idempotency store and the sellers table name")
	case store.Mode() != idem.ModeTransact:
		return nil, fmt.Errorf("sellers: counter needs a store in transact mode, not %q", store.Mode())
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

// Apply counts the event once. The outcome is executed for the delivery
// that counted it and replayed for every other one. Errors wrap
// ErrOverflow, idem.ErrKeyReuse (another event under the same id: never
// counted), or a store error (idem.IsUnavailable tells one a retry can
// fix).
func (c *Counter) Apply(ctx context.Context, ev ProductCreated) (idem.Outcome, error) {
	scope, err := idem.NewScope(Operation, ev.Source, ev.EventID)
	if err != nil {
		return idem.OutcomeRejected, fmt.Errorf("%w: %w", ErrPoison, err)
	}
	p := ev.Product
	rec := applied{
		EventID: ev.EventID, SellerID: p.SellerID().String(), ProductID: p.ID().String(),
		Currency: string(p.Price().Currency()), Cents: p.Price().Cents(),
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return idem.OutcomeError, fmt.Errorf("sellers: encode: %w", err)
	}
	// What the event changes is its fingerprint: the same id with another
	// product, seller or price is key reuse, never counted.
	fp, err := idem.FingerprintJSON(body)
	if err != nil {
		return idem.OutcomeError, err
	}
	res, err := c.store.Execute(ctx, scope, fp, func(context.Context) (idem.Effect, error) {
		return idem.Effect{
			Response: idem.Response{Status: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: body},
			Writes:   []types.TransactWriteItem{c.update(ev)},
		}, nil
	})
	var txErr *idem.TxError
	if errors.Is(err, idem.ErrConditionFailed) && errors.As(err, &txErr) {
		return res.Outcome, fmt.Errorf("%w: seller %s, %s total or product count: %w", ErrOverflow, rec.SellerID, rec.Currency, err)
	}
	return res.Outcome, err
}

// update adds the product to its seller: one more product, its price to
// the currency's total. DynamoDB numbers hold 38 digits, so the condition
// keeps every total and the count within int64, which reads back exactly.
func (c *Counter) update(ev ProductCreated) types.TransactWriteItem {
	p := ev.Product
	cents := p.Price().Cents()
	return types.TransactWriteItem{Update: &types.Update{
		TableName:        aws.String(c.table),
		Key:              map[string]types.AttributeValue{AttrSellerID: ddbitem.S(p.SellerID().String())},
		UpdateExpression: aws.String("ADD #count :one, #cents :cents SET #updated = :now"),
		ConditionExpression: aws.String("(attribute_not_exists(#cents) OR #cents <= :cents_limit) AND " +
			"(attribute_not_exists(#count) OR #count < :count_limit)"),
		ExpressionAttributeNames: map[string]string{
			"#count": attrProductCount, "#cents": centsAttr(p.Price().Currency()), "#updated": attrUpdatedAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one":         ddbitem.N(1),
			":cents":       ddbitem.N(cents),
			":cents_limit": ddbitem.N(c.limit - cents),
			":count_limit": ddbitem.N(c.limit),
			":now":         ddbitem.Time(c.now()),
		},
	}}
}
