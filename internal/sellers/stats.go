// Package sellers keeps seller statistics, the consumer side of the
// ProductCreated events: each event adds its product to the seller's
// count and its price to the seller's total in that currency, exactly
// once per event however often it is delivered (the counter's writes and
// the event's idempotency record commit in one transaction, pkg/idem's
// transact mode), and the statistics are read back for GET /sellers/{id}.
package sellers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/ids"
	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// Sellers table attributes (docs/operations.md, Tables): the key, the count, one
// total per currency (cents_EUR, cents_USD, ...; flat attributes, because
// DynamoDB's ADD creates a missing top-level number but not a missing
// nested one), and the time of the last change.
const (
	AttrSellerID     = "seller_id"
	attrProductCount = "product_count"
	attrCentsPrefix  = "cents_"
	attrUpdatedAt    = "updated_at"
)

// ErrCorrupt reports a stored seller item that does not decode.
var ErrCorrupt = errors.New("sellers: corrupt item")

// ErrNotFound reports a seller with no statistics yet.
var ErrNotFound = errors.New("sellers: not found")

// Stats is one seller's statistics.
type Stats struct {
	SellerID     uuid.UUID
	ProductCount int64
	// Listed holds one total per currency, sorted by currency.
	Listed    []money.Money
	UpdatedAt time.Time
}

// Body is the JSON form of Stats in GET /sellers/{id}. Each listed total
// is pkg/money's JSON: {"cents":1998,"currency":"EUR"}.
type Body struct {
	SellerID     string        `json:"seller_id"`
	ProductCount int64         `json:"product_count"`
	Listed       []money.Money `json:"listed"`
	UpdatedAt    string        `json:"updated_at"`
}

// Body returns the statistics' JSON form.
func (s Stats) Body() Body {
	listed := s.Listed
	if listed == nil {
		listed = []money.Money{}
	}
	return Body{
		SellerID: s.SellerID.String(), ProductCount: s.ProductCount, Listed: listed,
		UpdatedAt: s.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
}

// centsAttr is the attribute that holds a currency's total.
func centsAttr(c money.Currency) string { return attrCentsPrefix + string(c) }

// FromItem decodes a sellers table item; every total goes through
// money.New, so a hand-edited item is checked like any other input.
func FromItem(item map[string]types.AttributeValue) (Stats, error) {
	r := ddbitem.Read(item)
	idStr, count, updated := r.S(AttrSellerID), r.Int(attrProductCount), r.Time(attrUpdatedAt)
	var listed []money.Money
	for name := range item {
		code, ok := strings.CutPrefix(name, attrCentsPrefix)
		if !ok {
			continue
		}
		cents := r.Int(name)
		if r.Err() != nil {
			break
		}
		cur, err := money.ParseCurrency(code)
		if err != nil {
			return Stats{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
		}
		m, err := money.New(cents, cur)
		if err != nil {
			return Stats{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
		}
		listed = append(listed, m)
	}
	if err := r.Err(); err != nil {
		return Stats{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	id, err := ids.Parse(idStr)
	if err != nil || count < 0 {
		return Stats{}, fmt.Errorf("%w: seller %q, %d products", ErrCorrupt, idStr, count)
	}
	slices.SortFunc(listed, func(a, b money.Money) int { return strings.Compare(string(a.Currency()), string(b.Currency())) })
	return Stats{SellerID: id, ProductCount: count, Listed: listed, UpdatedAt: updated}, nil
}
