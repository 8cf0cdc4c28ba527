package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
)

// Defaults of a sweep.
const (
	defaultSweepPage = 100
	// defaultStranded is how long a completion's writes may stay not all
	// applied before a sweep applies them: its holder applies them at
	// once, and a sweep that meets it doing so only spends units.
	defaultStranded = time.Minute
)

// SweepOptions bound one Sweep.
type SweepOptions struct {
	// PageSize is each Scan's (or, with a layout whose records share one
	// partition, each Query's) Limit: 100 when 0.
	PageSize int32
	// Segment and Segments split the table for parallel sweeps, as
	// Scan's Segment and TotalSegments do: run Segments sweeps, one per
	// Segment from 0. Segments 0 sweeps the whole table in one.
	Segment, Segments int32
	// Stranded is how long after its completion a record whose writes
	// are not all applied (a holder that died between its completion and
	// its writes, on a table with multi-Region strong consistency) has
	// them applied by the sweep: 1 minute when 0.
	Stranded time.Duration
	// MaxPages stops the sweep after that many pages (0: none); the
	// stats' Next resumes it.
	MaxPages int
	// Start resumes a sweep where an earlier one's SweepStats.Next left
	// off.
	Start map[string]types.AttributeValue
}

// SweepStats is what a Sweep did, and what it cost as DynamoDB reported
// it (ReturnConsumedCapacity).
type SweepStats struct {
	// Pages and Scanned count the pages read and the records in them.
	Pages, Scanned int
	// Deleted counts the expired records deleted; Applied the records
	// whose stranded writes the sweep applied; Markers the apply-once
	// markers it cleared from the items that held them.
	Deleted, Applied, Markers int
	// ReadUnits and WriteUnits are the capacity units consumed.
	ReadUnits, WriteUnits float64
	// Next is where a sweep stopped by MaxPages resumes (Start); nil
	// when the table was swept to its end.
	Next map[string]types.AttributeValue
}

// sweepAPI is the part of a client Sweep needs besides API;
// *dynamodb.Client has it.
type sweepAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Sweep deletes the table's expired records, where DynamoDB's TTL does
// not (a table with multi-Region strong consistency supports no TTL):
// schedule it (an EventBridge Scheduler rule invoking a function that
// calls it, hourly or daily). It reads the records page by page (a Scan,
// eventually consistent, or a Query where the layout puts every record
// in one partition), and deletes each expired one with a conditional
// DeleteItem that holds only if it is still expired and has no writes
// waiting, so a record claimed or completed since is never deleted. A
// record whose writes were recorded with its completion and not all
// applied (its holder died in between) has them applied first, and the
// apply-once markers its updates left on their items are cleared before
// it goes. It needs a client with Scan and Query (*dynamodb.Client), and
// refuses a store with homes (WithHomes: an MREC table, which has TTL).
//
// What it costs: the pages read (half a read unit per 4 KB of records,
// every record of the table, expired or not: a Scan reads before it
// filters), a write unit per KB of each record deleted, and of each item
// whose marker it clears; docs/library.md has the figures. Errors stop
// the sweep at the page they met, with the stats of what was done.
func (s *Store) Sweep(ctx context.Context, opts SweepOptions) (SweepStats, error) {
	if s.homes != nil {
		return SweepStats{}, fmt.Errorf("idem: Sweep is for a table without TTL (MRSC); a store with homes is on an MREC table, whose TTL deletes expired records: %w", errors.ErrUnsupported)
	}
	db, ok := s.db.(sweepAPI)
	if !ok {
		return SweepStats{}, errors.New("idem: Sweep needs a client with Scan and Query (*dynamodb.Client)")
	}
	if opts.PageSize <= 0 {
		opts.PageSize = defaultSweepPage
	}
	if opts.Stranded <= 0 {
		opts.Stranded = defaultStranded
	}
	ctx = withCall(ctx, Scope{}, false, s.traceFor(ctx), s.defaults())
	sw := &sweep{s: s, db: db, opts: opts}
	start := opts.Start
	for {
		items, next, err := sw.page(ctx, start)
		if err != nil {
			return sw.stats, err
		}
		sw.stats.Pages++
		for _, item := range items {
			if err := sw.item(ctx, item); err != nil {
				sw.stats.Next = start
				return sw.stats, err
			}
		}
		start = next
		if len(start) == 0 {
			return sw.stats, nil
		}
		if opts.MaxPages > 0 && sw.stats.Pages >= opts.MaxPages {
			sw.stats.Next = start
			return sw.stats, nil
		}
	}
}

// sweep is one Sweep's state.
type sweep struct {
	s     *Store
	db    sweepAPI
	opts  SweepOptions
	stats SweepStats
}

// page reads one page of candidate records: expired, or with writes
// waiting, in the store's layout.
func (sw *sweep) page(ctx context.Context, start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
	s, l := sw.s, sw.s.layout
	names := map[string]string{"#exp": s.attr.ExpiresAt, "#in": s.attr.Intents, "#st": s.attr.Status}
	values := map[string]types.AttributeValue{":now": num(s.now().Unix())}
	filter := "attribute_exists(#st) AND (#exp < :now OR attribute_exists(#in))"
	if l.SortKey != "" && l.PartitionValue != "" {
		names["#pk"], values[":pv"] = l.PartitionKey, str(l.PartitionValue)
		keyCond := "#pk = :pv"
		if l.KeyPrefix != "" {
			names["#sk"], values[":prefix"] = l.SortKey, str(l.KeyPrefix)
			keyCond += " AND begins_with(#sk, :prefix)"
		}
		out, err := sw.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.table), KeyConditionExpression: aws.String(keyCond),
			FilterExpression: aws.String(filter), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			Limit: aws.Int32(sw.opts.PageSize), ExclusiveStartKey: start, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("idem: sweep: %w", err)
		}
		sw.read(out.ConsumedCapacity)
		return out.Items, out.LastEvaluatedKey, nil
	}
	switch {
	case l.SortKey != "":
		names["#sk"], values[":sv"] = l.SortKey, str(l.SortValue)
		filter += " AND #sk = :sv"
	}
	if l.KeyPrefix != "" {
		names["#pk"], values[":prefix"] = l.PartitionKey, str(l.KeyPrefix)
		filter += " AND begins_with(#pk, :prefix)"
	}
	in := &dynamodb.ScanInput{
		TableName: aws.String(s.table), FilterExpression: aws.String(filter),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		Limit: aws.Int32(sw.opts.PageSize), ExclusiveStartKey: start, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	if sw.opts.Segments > 0 {
		in.Segment, in.TotalSegments = aws.Int32(sw.opts.Segment), aws.Int32(sw.opts.Segments)
	}
	out, err := sw.db.Scan(ctx, in)
	if err != nil {
		return nil, nil, fmt.Errorf("idem: sweep: %w", err)
	}
	sw.read(out.ConsumedCapacity)
	return out.Items, out.LastEvaluatedKey, nil
}

// item sweeps one candidate record: its stranded writes applied, then,
// expired, its markers cleared and itself deleted.
func (sw *sweep) item(ctx context.Context, item map[string]types.AttributeValue) error {
	s := sw.s
	rec, err := s.decodeRecord(item)
	if err != nil {
		return nil // not a record of this layout, or one this library cannot read: left alone
	}
	sw.stats.Scanned++
	now := s.now()
	if len(rec.Intents) > 0 {
		if now.Sub(rec.CompletedAt) < sw.opts.Stranded {
			return nil // its holder is applying them
		}
		if rec, err = s.applyPending(ctx, rec); err != nil {
			return fmt.Errorf("idem: sweep: apply the writes of a stranded completion: %w", err)
		}
		sw.stats.Applied++
		if err := s.reread(ctx, &rec); err != nil {
			return err
		}
	}
	if !rec.Expired(now) {
		return nil
	}
	for _, mk := range rec.Marked {
		if err := sw.unmark(ctx, mk); err != nil {
			return err
		}
	}
	return sw.delete(ctx, rec, now)
}

// reread reads rec again, consistently: applying its writes listed the
// items they marked.
func (s *Store) reread(ctx context.Context, rec *record) error {
	got, found, err := s.current(ctx, rec.ID, nil)
	if err != nil {
		return fmt.Errorf("idem: sweep: %w", err)
	}
	if found {
		*rec = got
	}
	return nil
}

// unmark clears a completion's marker from an item, if it is still
// there (the item may be gone); an UpdateItem conditional on the marker,
// so it never creates an item.
func (sw *sweep) unmark(ctx context.Context, mk stored.Marked) error {
	done, err := sw.write(ctx, func() (*types.ConsumedCapacity, error) {
		out, err := sw.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(mk.Table), Key: mk.Key,
			UpdateExpression:          aws.String("DELETE #idem_m :idem_ms"),
			ConditionExpression:       aws.String("contains(#idem_m, :idem_m)"),
			ExpressionAttributeNames:  map[string]string{"#idem_m": markerAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{":idem_m": str(mk.Marker), ":idem_ms": &types.AttributeValueMemberSS{Value: []string{mk.Marker}}},
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			return nil, err
		}
		return out.ConsumedCapacity, nil
	})
	if err != nil {
		return fmt.Errorf("idem: sweep: clear a marker from an item of %s: %w", mk.Table, err)
	}
	if done {
		sw.stats.Markers++
	}
	return nil
}

// delete deletes an expired record, if it is still expired at now and
// has no writes waiting.
func (sw *sweep) delete(ctx context.Context, rec record, now time.Time) error {
	s := sw.s
	done, err := sw.write(ctx, func() (*types.ConsumedCapacity, error) {
		out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table), Key: s.key(rec.ID),
			ConditionExpression:       aws.String("#exp < :now AND attribute_not_exists(#in)"),
			ExpressionAttributeNames:  map[string]string{"#exp": s.attr.ExpiresAt, "#in": s.attr.Intents},
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(now.Unix())},
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			return nil, err
		}
		return out.ConsumedCapacity, nil
	})
	if err != nil {
		return fmt.Errorf("idem: sweep: delete an expired record: %w", err)
	}
	if done {
		sw.stats.Deleted++
	}
	return nil
}

// write sends one of the sweep's conditional writes, and counts its
// units: done is false when its condition no longer held (nothing to
// do).
func (sw *sweep) write(ctx context.Context, send func() (*types.ConsumedCapacity, error)) (done bool, err error) {
	var ccf *types.ConditionalCheckFailedException
	err = sw.s.retryConflicts(ctx, func() error {
		c, err := send()
		if err == nil && c != nil {
			sw.stats.WriteUnits += aws.ToFloat64(c.CapacityUnits)
		}
		return err
	})
	if errors.As(err, &ccf) {
		return false, nil
	}
	return err == nil, err
}

// read counts a page's read units.
func (sw *sweep) read(c *types.ConsumedCapacity) {
	if c != nil {
		sw.stats.ReadUnits += aws.ToFloat64(c.CapacityUnits)
	}
}
