// Package sellers keeps seller statistics, the consumer side of the
// ProductCreated events, as a pure domain: it decodes an event
// (DecodeMessage), computes the writes that count a batch of events on
// the sellers table (Counter.Writes: each event adds its product to the
// seller's count and its price to the seller's total in that currency),
// and reads the statistics back (Reader, FromItems) for GET
// /sellers/{id}. It knows no transport and no idempotency: the SQS
// consumer beside it (internal/sellers/sellersqs) commits a batch's
// writes with its events' idempotency records in one transaction, so
// each event counts once however often it is delivered.
package sellers

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/ids"
	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// Sellers table attributes (docs/operations.md, Tables): the key (the
// seller and one of its shards), the count, one total per currency
// (cents_EUR, cents_USD, ...; flat attributes, because DynamoDB's ADD
// creates a missing top-level number but not a missing nested one), and
// the time of the last change. A seller's statistics are the sum of its
// shards (see Shards).
const (
	AttrSellerID     = "seller_id"
	AttrShard        = "shard" // the range key, a number in [0, Shards)
	attrProductCount = "product_count"
	attrCentsPrefix  = "cents_"
	attrUpdatedAt    = "updated_at"
)

// Shards is how many items of the sellers table (shard 0 to Shards-1
// under the seller's id) a seller's statistics are spread over:
// DynamoDB's write sharding for a hot key. A transaction holds every item
// it writes, and DynamoDB cancels another one that touches them meanwhile
// (TransactionConflict), so the batches of a seller with many products,
// each updating its one item, would mostly wait for each other. Each
// batch updates one shard instead (the consumer keeps one per execution
// environment, internal/sellers/sellersqs), and the reader sums the
// shards with one Query.
//
// Ten, measured with make sweep-sellers (docs/architecture.md, Hot
// sellers): at 6 environments on one seller, transactions meeting a
// shard held fall from 0.17-0.19 per event on one item to 0.04-0.05
// with 4 shards and 0 to 0.01 from 8 on, calls per event from 0.46-0.47
// to 0.33-0.34, and more shards change nothing measurable (the rest is
// the events' duplicates, on their idempotency records); ten leave room
// for up to 10 environments (0.02-0.03 there), and a read stays one
// Query of at most ten small items. Changing it needs no migration: the reader sums whatever
// shards exist. Each shard holds at most the int64 limit divided by
// Shards, so that their sum fits in an int64; after a change of Shards
// the old shards may hold more, and a sum past int64 is then the
// reader's error (ErrOverflow), never a wrong number.
const Shards = 10

// ErrOverflow reports a total that would pass what int64 holds. From the
// counter, the event is not counted (no shard of its seller can take it),
// and no retry can change that; from the reader, a seller's shards hold
// more than int64 in all (which the counter never writes: see Shards).
var ErrOverflow = errors.New("sellers: total would overflow")

// ErrCorrupt reports a stored seller shard that does not decode, or
// shards of another seller among a seller's.
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

// FromItems sums one seller's shard items, as a Query on its id returns
// them, into its statistics: the counts and each currency's totals added
// (an int64 overflow is an error wrapping ErrOverflow, never a wrapped
// number), and the latest shard's updated_at. No item is ErrNotFound.
// Every item goes through money.New, so a hand-edited one is checked like
// any other input, and all must be the same seller's.
func FromItems(items []map[string]types.AttributeValue) (Stats, error) {
	if len(items) == 0 {
		return Stats{}, ErrNotFound
	}
	var sum Stats
	totals := map[money.Currency]int64{}
	for i, item := range items {
		sh, err := shardFromItem(item)
		if err != nil {
			return Stats{}, err
		}
		switch {
		case i == 0:
			sum.SellerID = sh.SellerID
		case sh.SellerID != sum.SellerID:
			return Stats{}, fmt.Errorf("%w: shards of sellers %s and %s in one seller's statistics", ErrCorrupt, sum.SellerID, sh.SellerID)
		}
		var ok bool
		if sum.ProductCount, ok = addInt64(sum.ProductCount, sh.ProductCount); !ok {
			return Stats{}, fmt.Errorf("%w: seller %s: its shards' product count passes int64", ErrOverflow, sum.SellerID)
		}
		for _, m := range sh.Listed {
			if totals[m.Currency()], ok = addInt64(totals[m.Currency()], m.Cents()); !ok {
				return Stats{}, fmt.Errorf("%w: seller %s: its shards' %s total passes int64", ErrOverflow, sum.SellerID, m.Currency())
			}
		}
		if sh.UpdatedAt.After(sum.UpdatedAt) {
			sum.UpdatedAt = sh.UpdatedAt
		}
	}
	for cur, cents := range totals {
		m, err := money.New(cents, cur)
		if err != nil {
			return Stats{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, centsAttr(cur), err)
		}
		sum.Listed = append(sum.Listed, m)
	}
	slices.SortFunc(sum.Listed, func(a, b money.Money) int { return strings.Compare(string(a.Currency()), string(b.Currency())) })
	return sum, nil
}

// addInt64 adds two non-negative int64s; ok is false when the sum would
// pass math.MaxInt64.
func addInt64(a, b int64) (sum int64, ok bool) {
	if b > math.MaxInt64-a {
		return 0, false
	}
	return a + b, true
}

// shardFromItem decodes one shard item of the sellers table: its part of
// the seller's statistics.
func shardFromItem(item map[string]types.AttributeValue) (Stats, error) {
	r := ddbitem.Read(item)
	idStr, shard, count, updated := r.S(AttrSellerID), r.Int(AttrShard), r.Int(attrProductCount), r.Time(attrUpdatedAt)
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
	if err != nil || count < 0 || shard < 0 {
		return Stats{}, fmt.Errorf("%w: seller %q shard %d, %d products", ErrCorrupt, idStr, shard, count)
	}
	return Stats{SellerID: id, ProductCount: count, Listed: listed, UpdatedAt: updated}, nil
}
