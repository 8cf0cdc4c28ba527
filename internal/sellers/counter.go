package sellers

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// Listing is what counting one ProductCreated event adds to its seller:
// one product, listed at a price. Its JSON is what the consumer stores
// for the event's key and fingerprints it by, so the same event id with
// another product is key reuse; the encoding is stored with every
// counted event and must not change.
type Listing struct {
	EventID   string `json:"event_id"`
	SellerID  string `json:"seller_id"`
	ProductID string `json:"product_id"`
	Currency  string `json:"currency"`
	Cents     int64  `json:"cents"`
}

// ListingOf is what counting pc adds.
func ListingOf(pc ProductCreated) Listing {
	p := pc.Product
	return Listing{
		EventID: pc.EventID, SellerID: p.SellerID().String(), ProductID: p.ID().String(),
		Currency: string(p.Price().Currency()), Cents: p.Price().Cents(),
	}
}

// MaxShardValue is the largest count or total one shard item holds: 38
// nines, the largest integer a DynamoDB number keeps (38 significant
// digits). The reader sums shards exactly (Number), so no cap needs to
// keep a seller's sum within int64, and the cap is never reached: at
// product.MaxPriceCents, a shard's total needs more than 10^26 events.
var MaxShardValue = func() *big.Int {
	n := new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)
	return n.Sub(n, big.NewInt(1))
}()

// Counter computes the writes that count listings on the sellers table:
// events in, DynamoDB updates out. It calls nothing; the consumer
// (internal/sellers/sellersqs) commits its writes with the events'
// idempotency records in one transaction.
type Counter struct {
	// Table is the sellers table's name.
	Table string
	// Shards is how many shards a seller is spread over (Shards).
	Shards int
	// Cap is the largest count or total one shard holds: MaxShardValue
	// (tests lower it).
	Cap *big.Int
	// Now stamps updated_at.
	Now func() time.Time
	// FirstShard is the number of this Region's shard 0: shardOf's shard
	// k is item FirstShard+k (RegionShards).
	FirstShard int
}

// NewCounter returns the Counter of the sellers table: Shards shards of
// up to MaxShardValue each, from shard 0 (one Region; RegionShards gives
// a Region of a global table its own), the wall clock.
func NewCounter(table string) (*Counter, error) {
	if table == "" {
		return nil, errors.New("sellers: counter needs the sellers table name")
	}
	return &Counter{Table: table, Shards: Shards, Cap: MaxShardValue, Now: time.Now}, nil
}

// RegionStride is how far apart two Regions' shard numbers are: the
// consumers of the Region at index i of a global table's Regions write
// shards i*RegionStride to i*RegionStride+Shards-1, and no other Region
// writes them. It never changes (Shards may, below it), so a Region's
// range stays its own whatever either side runs.
const RegionStride = 1000

// RegionShards is the first shard of region's consumers on a sellers
// table replicated to regions (REPLICA_REGIONS, listed in the same order
// in every Region, appended to, never reordered), or 0 with no regions
// (one Region, where every shard so far was written).
//
// Why a Region needs shards of its own: on a global table with eventual
// consistency (MREC), concurrent writes of one item in two Regions are
// resolved by last writer wins, per item: the counter's ADD in one Region
// would overwrite the other's, and counts would silently be lost. Each
// event reaches one Region's consumer (its relay publishes only the
// events its own Region wrote, to that Region's bus), so with a range per
// Region no item is ever written in two Regions, and the reader sums
// every Region's shards with its one Query. On MRSC, the same keeps two
// Regions' batches from meeting on an item
// (ReplicatedWriteConflictException).
func RegionShards(regions []string, region string) (int, error) {
	if len(regions) == 0 {
		return 0, nil
	}
	i := slices.Index(regions, region)
	if i < 0 {
		return 0, fmt.Errorf("sellers: region %q is not one of the table's regions %v", region, regions)
	}
	return i * RegionStride, nil
}

// sellerSum is what a batch's events add to one seller.
type sellerSum struct {
	seller     string
	count      *big.Int
	currencies []money.Currency // in first-seen order
	cents      map[money.Currency]*big.Int
}

// Writes adds the listings to their sellers: per seller, one update of
// the shard shardOf gives (from 0 to Shards-1, in this Region's range:
// FirstShard), with the number of products and each
// currency's total, so a batch's listings of one seller touch one of its
// items once. Sums are exact (math/big), and the condition keeps the
// shard's count and every total within Cap, so DynamoDB never refuses the
// update for its digits: a shard that cannot take the batch's sum fails
// the condition, and the caller tries the listings on another shard or in
// smaller sets. The updates' only condition is that cap: a failed one
// means the shard is full. A sum that alone passes the cap gets a
// condition that never holds.
func (c *Counter) Writes(listings []Listing, shardOf func(seller string) int) []types.TransactWriteItem {
	var order []*sellerSum
	bySeller := map[string]*sellerSum{}
	for _, l := range listings {
		id := l.SellerID
		s := bySeller[id]
		if s == nil {
			s = &sellerSum{seller: id, count: new(big.Int), cents: map[money.Currency]*big.Int{}}
			bySeller[id] = s
			order = append(order, s)
		}
		s.count.Add(s.count, big.NewInt(1))
		cur := money.Currency(l.Currency) // from a validated money.Money
		if _, ok := s.cents[cur]; !ok {
			s.currencies = append(s.currencies, cur)
			s.cents[cur] = new(big.Int)
		}
		s.cents[cur].Add(s.cents[cur], big.NewInt(l.Cents))
	}
	now := ddbitem.Time(c.Now())
	writes := make([]types.TransactWriteItem, 0, len(order))
	for _, s := range order {
		names := map[string]string{"#count": attrProductCount, "#updated": attrUpdatedAt}
		values := map[string]types.AttributeValue{":n": numberOf(s.count).attributeValue(), ":now": now}
		add := []string{"#count :n"}
		conds := []string{c.within("#count", ":count_limit", s.count, values)}
		for k, cur := range s.currencies {
			n, v, lim := "#c"+strconv.Itoa(k), ":c"+strconv.Itoa(k), ":l"+strconv.Itoa(k)
			names[n] = centsAttr(cur)
			values[v] = numberOf(s.cents[cur]).attributeValue()
			add = append(add, n+" "+v)
			conds = append(conds, c.within(n, lim, s.cents[cur], values))
		}
		if slices.Contains(conds, "") {
			// Whatever is stored, the sum cannot fit: a condition that
			// never holds makes the caller try fewer listings at once.
			names = map[string]string{"#count": attrProductCount, "#updated": attrUpdatedAt}
			values = map[string]types.AttributeValue{":n": values[":n"], ":now": now}
			add = []string{"#count :n"}
			conds = []string{"attribute_exists(#count) AND attribute_not_exists(#count)"}
		}
		writes = append(writes, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(c.Table),
			Key:                       map[string]types.AttributeValue{AttrSellerID: ddbitem.S(s.seller), AttrShard: ddbitem.N(int64(c.FirstShard + shardOf(s.seller)))},
			UpdateExpression:          aws.String("ADD " + strings.Join(add, ", ") + " SET #updated = :now"),
			ConditionExpression:       aws.String(strings.Join(conds, " AND ")),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}})
	}
	return writes
}

// within is the condition that attribute name, plus sum, stays within
// the cap, its limit put in values under placeholder; "" when sum alone
// passes the cap.
func (c *Counter) within(name, placeholder string, sum *big.Int, values map[string]types.AttributeValue) string {
	limit := new(big.Int).Sub(c.Cap, sum)
	if limit.Sign() < 0 {
		return ""
	}
	values[placeholder] = numberOf(limit).attributeValue()
	return "(attribute_not_exists(" + name + ") OR " + name + " <= " + placeholder + ")"
}
