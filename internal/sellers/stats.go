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
	AttrShard        = "shard" // the range key: a number in [0, Shards), in each Region's range (RegionShards)
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
// Query of at most ten small items. Changing it needs no migration: the
// reader sums whatever shards exist, exactly (Number), however much they
// hold.
const Shards = 10

// ErrOverflow reports an event no shard of its seller can take without
// passing MaxShardValue: it is not counted, and no retry can change that.
// It takes more than 10^26 events at the largest price on every one of a
// seller's shards (docs/architecture.md, Hot sellers).
var ErrOverflow = errors.New("sellers: total would overflow")

// ErrCorrupt reports a stored seller shard that does not decode, or
// shards of another seller among a seller's.
var ErrCorrupt = errors.New("sellers: corrupt item")

// ErrNotFound reports a seller with no statistics yet.
var ErrNotFound = errors.New("sellers: not found")

// Stats is one seller's statistics.
type Stats struct {
	SellerID     uuid.UUID
	ProductCount Number
	// Listed holds one total per currency, sorted by currency.
	Listed    []Total
	UpdatedAt time.Time
}

// Total is what a seller's products listed in one currency add up to, in
// its minor unit, exactly: a sum of prices may pass int64 (9.3 million
// products at product.MaxPriceCents do), and money.Money holds no more
// than an int64. Its JSON has pkg/money's shape,
// {"cents":1998,"currency":"EUR"}, with cents of any size.
type Total struct {
	Cents    Number         `json:"cents"`
	Currency money.Currency `json:"currency"`
}

// Body is the JSON form of Stats in GET /sellers/{id}.
type Body struct {
	SellerID     string  `json:"seller_id"`
	ProductCount Number  `json:"product_count"`
	Listed       []Total `json:"listed"`
	UpdatedAt    string  `json:"updated_at"`
}

// Body returns the statistics' JSON form.
func (s Stats) Body() Body {
	listed := s.Listed
	if listed == nil {
		listed = []Total{}
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
// exactly, whatever their size, and the latest shard's updated_at. No
// item is ErrNotFound. Every item is checked like any other input (its
// currencies through money.ParseCurrency, its numbers as non-negative
// integers), so a hand-edited one is refused (ErrCorrupt), and all must
// be the same seller's. Every item the counter writes reads back.
func FromItems(items []map[string]types.AttributeValue) (Stats, error) {
	if len(items) == 0 {
		return Stats{}, ErrNotFound
	}
	var sum Stats
	totals := map[money.Currency]Number{}
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
		sum.ProductCount = sum.ProductCount.Add(sh.ProductCount)
		for _, t := range sh.Listed {
			totals[t.Currency] = totals[t.Currency].Add(t.Cents)
		}
		if sh.UpdatedAt.After(sum.UpdatedAt) {
			sum.UpdatedAt = sh.UpdatedAt
		}
	}
	for cur, cents := range totals {
		sum.Listed = append(sum.Listed, Total{Cents: cents, Currency: cur})
	}
	slices.SortFunc(sum.Listed, func(a, b Total) int { return strings.Compare(string(a.Currency), string(b.Currency)) })
	return sum, nil
}

// shardFromItem decodes one shard item of the sellers table: its part of
// the seller's statistics.
func shardFromItem(item map[string]types.AttributeValue) (Stats, error) {
	r := ddbitem.Read(item)
	idStr, shard, updated := r.S(AttrSellerID), r.Int(AttrShard), r.Time(attrUpdatedAt)
	if err := r.Err(); err != nil {
		return Stats{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	id, err := ids.Parse(idStr)
	if err != nil || shard < 0 {
		return Stats{}, fmt.Errorf("%w: seller %q shard %d", ErrCorrupt, idStr, shard)
	}
	count, err := numberAttr(item, attrProductCount)
	if err != nil {
		return Stats{}, err
	}
	var listed []Total
	for name := range item {
		code, ok := strings.CutPrefix(name, attrCentsPrefix)
		if !ok {
			continue
		}
		cur, err := money.ParseCurrency(code)
		if err != nil {
			return Stats{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
		}
		cents, err := numberAttr(item, name)
		if err != nil {
			return Stats{}, err
		}
		listed = append(listed, Total{Cents: cents, Currency: cur})
	}
	return Stats{SellerID: id, ProductCount: count, Listed: listed, UpdatedAt: updated}, nil
}

// numberAttr reads a number the counter writes: a non-negative integer of
// up to DynamoDB's 38 digits, exactly.
func numberAttr(item map[string]types.AttributeValue, name string) (Number, error) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return Number{}, fmt.Errorf("%w: %s is missing or not a number", ErrCorrupt, name)
	}
	v, err := ParseNumber(n.Value)
	if err != nil {
		return Number{}, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}
