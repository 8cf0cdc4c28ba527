package sellers

import (
	"errors"
	"math"
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

// Counter computes the writes that count listings on the sellers table:
// events in, DynamoDB updates out. It calls nothing; the consumer
// (internal/sellers/sellersqs) commits its writes with the events'
// idempotency records in one transaction.
type Counter struct {
	// Table is the sellers table's name.
	Table string
	// Shards is how many shards a seller is spread over (Shards).
	Shards int
	// Limit is the largest count or total a seller has in all
	// (math.MaxInt64); each shard holds at most Limit/Shards.
	Limit int64
	// Now stamps updated_at.
	Now func() time.Time
}

// NewCounter returns the Counter of the sellers table: Shards shards, the
// int64 limit, the wall clock.
func NewCounter(table string) (*Counter, error) {
	if table == "" {
		return nil, errors.New("sellers: counter needs the sellers table name")
	}
	return &Counter{Table: table, Shards: Shards, Limit: math.MaxInt64, Now: time.Now}, nil
}

// sellerSum is what a batch's events add to one seller.
type sellerSum struct {
	seller     string
	count      int64
	currencies []money.Currency // in first-seen order
	cents      map[money.Currency]int64
	over       bool // a total passes the limit by the batch's events alone
}

// Writes adds the listings to their sellers: per seller, one update of
// the shard shardOf gives, with the number of products and each
// currency's total, so a batch's listings of one seller touch one of its
// items once. DynamoDB numbers hold 38 digits, so the condition keeps
// every total and the count of a shard within its cap, Limit divided by
// Shards: the sum of the shards then fits in int64 and reads back
// exactly. A sum that alone passes the cap gets a condition that fails,
// so the caller tries the listings in smaller sets. The updates' only
// condition is that cap: a failed one means the shard is full.
func (c *Counter) Writes(listings []Listing, shardOf func(seller string) int) []types.TransactWriteItem {
	limit := c.Limit / int64(c.Shards)
	var order []*sellerSum
	bySeller := map[string]*sellerSum{}
	for _, l := range listings {
		id := l.SellerID
		s := bySeller[id]
		if s == nil {
			s = &sellerSum{seller: id, cents: map[money.Currency]int64{}}
			bySeller[id] = s
			order = append(order, s)
		}
		s.count++
		cur := money.Currency(l.Currency) // from a validated money.Money
		if _, ok := s.cents[cur]; !ok {
			s.currencies = append(s.currencies, cur)
		}
		cents := l.Cents
		if s.cents[cur] > limit-cents {
			s.over = true // the sum alone passes the limit
		}
		s.cents[cur] += cents
	}
	now := ddbitem.Time(c.Now())
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
			// never holds makes the caller try fewer listings at once.
			conds = []string{"attribute_exists(#count) AND attribute_not_exists(#count)"}
			for k := range s.currencies {
				delete(names, "#c"+strconv.Itoa(k))
			}
			names["#count"] = attrProductCount
			add = []string{"#count :n"}
			values = map[string]types.AttributeValue{":n": ddbitem.N(s.count), ":now": now}
		}
		writes = append(writes, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(c.Table),
			Key:                       map[string]types.AttributeValue{AttrSellerID: ddbitem.S(s.seller), AttrShard: ddbitem.N(int64(shardOf(s.seller)))},
			UpdateExpression:          aws.String("ADD " + strings.Join(add, ", ") + " SET #updated = :now"),
			ConditionExpression:       aws.String(strings.Join(conds, " AND ")),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}})
	}
	return writes
}
