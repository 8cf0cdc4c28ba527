// Package expiry deletes expired items where DynamoDB's TTL does not: a
// global table with multi-Region strong consistency (MRSC) supports no
// TTL, so its idempotency records, outbox items and callers' window
// counters stay until something deletes them. Sweep deletes one table's
// items whose expiry attribute has passed, each with a conditional
// DeleteItem that re-checks, at the write, that the item still carries
// the expiry it was read with and that it has passed: an item renewed,
// or written again, since the Scan read it is never deleted. Handler is
// the sweeper function's work: the idempotency records by pkg/idem's
// Store.Sweep and the outbox and window counters by Sweep, a few pages
// of each in turn, within the invocation's deadline, resumed by the next
// invocation from a checkpoint.
package expiry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of a DynamoDB client Sweep calls; *dynamodb.Client has
// it.
type API interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Table is a table whose items expire: those with Expires (a number,
// epoch seconds, DynamoDB's TTL format) in the past, and, when Prefix is
// set, whose PrefixAttribute begins with it (the callers table's window
// counters, not its grants, which never expire).
type Table struct {
	// Name is the table's name.
	Name string
	// Key lists the key's attribute names (partition, then sort key).
	Key []string
	// Expires is the expiry attribute.
	Expires string
	// PrefixAttribute and Prefix restrict the sweep to the items whose
	// PrefixAttribute (a string) begins with Prefix; none when empty.
	PrefixAttribute, Prefix string
}

// Options bound one Sweep.
type Options struct {
	// PageSize is each Scan's Limit: 100 when 0.
	PageSize int32
	// MaxPages stops the sweep after that many pages (0: none); Stats'
	// Next resumes it.
	MaxPages int
	// Start resumes a sweep where an earlier one's Stats.Next left off.
	Start map[string]types.AttributeValue
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Stats is what a Sweep did.
type Stats struct {
	// Pages is the Scan pages read; Expired the items in them found
	// expired.
	Pages, Expired int
	// Deleted counts the expired items deleted; Kept those whose delete's
	// condition no longer held (renewed since the Scan read them, or
	// deleted by another sweeper): left as they are.
	Deleted, Kept int
	// ReadUnits and WriteUnits are the capacity units consumed, as
	// DynamoDB reported them.
	ReadUnits, WriteUnits float64
	// Next is where a sweep stopped by MaxPages, or by an error, resumes
	// (Start); nil when the table was swept to its end.
	Next map[string]types.AttributeValue
}

// Add adds o's counts to s; Next is left as it is.
func (s *Stats) Add(o Stats) {
	s.Pages += o.Pages
	s.Expired += o.Expired
	s.Deleted += o.Deleted
	s.Kept += o.Kept
	s.ReadUnits += o.ReadUnits
	s.WriteUnits += o.WriteUnits
}

const defaultPageSize = 100

// Sweep deletes t's expired items, page by page: a Scan (eventually
// consistent, filtered on the expiry) reads the expired ones' keys and
// expiry, and each is deleted by a DeleteItem conditional on that
// expiry, unchanged, being still in the past. Sweeps of one table may run
// at once: each item is deleted once, by one of them, and counted Kept by
// the others. An error stops the sweep with the stats of what was done,
// Next at the page it met it on.
//
// What it costs: the Scan reads every item of the table, expired or not
// (half a read unit per 4 KB: a filter applies after the read), and each
// delete a write unit per KB of the item deleted.
func Sweep(ctx context.Context, db API, t Table, opts Options) (Stats, error) {
	if t.Name == "" || len(t.Key) == 0 || t.Expires == "" {
		return Stats{}, errors.New("expiry: a table needs its name, its key attributes and its expiry attribute")
	}
	if opts.PageSize <= 0 {
		opts.PageSize = defaultPageSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	var st Stats
	start := opts.Start
	for {
		out, err := db.Scan(ctx, scanInput(t, opts, start))
		if err != nil {
			st.Next = start
			return st, fmt.Errorf("expiry: scan %s: %w", t.Name, err)
		}
		st.Pages++
		st.ReadUnits += units(out.ConsumedCapacity)
		for _, item := range out.Items {
			st.Expired++
			deleted, wu, err := deleteExpired(ctx, db, t, item, opts.Now())
			st.WriteUnits += wu
			switch {
			case err != nil:
				st.Next = start
				return st, err
			case deleted:
				st.Deleted++
			default:
				st.Kept++
			}
		}
		start = out.LastEvaluatedKey
		if len(start) == 0 {
			return st, nil
		}
		if opts.MaxPages > 0 && st.Pages >= opts.MaxPages {
			st.Next = start
			return st, nil
		}
	}
}

// scanInput reads one page of t's expired items: their keys and expiry.
func scanInput(t Table, opts Options, start map[string]types.AttributeValue) *dynamodb.ScanInput {
	names := map[string]string{"#exp": t.Expires}
	projection := "#exp"
	for i, k := range t.Key {
		n := "#k" + strconv.Itoa(i)
		names[n] = k
		projection += ", " + n
	}
	values := map[string]types.AttributeValue{":now": epoch(opts.Now())}
	filter := "#exp < :now"
	if t.Prefix != "" {
		names["#pre"], values[":pre"] = t.PrefixAttribute, &types.AttributeValueMemberS{Value: t.Prefix}
		filter += " AND begins_with(#pre, :pre)"
	}
	return &dynamodb.ScanInput{
		TableName: aws.String(t.Name), FilterExpression: aws.String(filter), ProjectionExpression: aws.String(projection),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		Limit: aws.Int32(opts.PageSize), ExclusiveStartKey: start, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
}

// deleteExpired deletes item if it still has the expiry the Scan read and
// that expiry is before now: deleted is false when it was renewed or is
// gone.
func deleteExpired(ctx context.Context, db API, t Table, item map[string]types.AttributeValue, now time.Time) (deleted bool, writeUnits float64, err error) {
	seen, ok := item[t.Expires].(*types.AttributeValueMemberN)
	if !ok {
		return false, 0, nil // the filter read a number; nothing else is expired
	}
	key := make(map[string]types.AttributeValue, len(t.Key))
	for _, k := range t.Key {
		key[k] = item[k]
	}
	out, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(t.Name), Key: key,
		ConditionExpression:      aws.String("#exp = :seen AND #exp < :now"),
		ExpressionAttributeNames: map[string]string{"#exp": t.Expires},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":seen": seen, ":now": epoch(now),
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, 0, nil
	case err != nil:
		return false, 0, fmt.Errorf("expiry: delete from %s: %w", t.Name, err)
	}
	return true, units(out.ConsumedCapacity), nil
}

func epoch(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}

func units(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return 0
	}
	return aws.ToFloat64(c.CapacityUnits)
}
