// Package idemglobal tells, from the streams of a DynamoDB global table
// with multi-Region eventual consistency (MREC), the keys that ran in two
// Regions: where a team claims keys in the Region each call arrives in
// (idem.WithRegion, no idem.WithHomes), or where a Region was lost with
// claims it had not yet replicated (idem.WithHomes: its failover's limit).
//
// On MREC, a Region's replica evaluates a claim's condition against its
// own items, so two Regions that claim one key within the replication lag
// both win, both run the operation, and last writer wins then keeps one
// record in every Region, silently. Every Region's stream carries the
// writes replicated into it, and there the loser's record is seen
// overwritten by the winner's: a MODIFY whose old image is a claim that
// the new image's claim would have been refused by, had it seen it (a
// completed record, or a live holder's, not expired). The records carry
// the Region whose replica took each claim and its home's epoch (idem
// stamps them), and the stream record carries both answers.
//
// Run a Detector on the idempotency table's stream in every Region (a
// Lambda function with an event source mapping filtered on
// eventName MODIFY): a double execution shows in the stream of each
// Region that saw the loser's claim before the winner's (the loser's own
// Region at least, unless it is lost for good); each report of it has the
// same ID. A Region's stream may merge several changes of an item into
// one record, as replication delivers them: the old image is then the
// replica's item before them all, and the new image after them all, which
// is what the rule reads.
package idemglobal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/scopeid"
)

// Detector reads a Region's stream of the idempotency table and reports
// each key that ran in two Regions to its trace's DoubleExecution hook.
// Its zero value reads the default layout and reports to nothing but its
// results.
type Detector struct {
	// Layout is the idempotency table's layout (idem.WithLayout's).
	Layout idemtable.Layout
	// Trace's DoubleExecution hook hears of each double execution, in the
	// records' order (idemotel, or a hook of your own: count, alarm).
	Trace *idemtrace.Trace
}

// Detect reports the double executions that records (a batch of one
// Region's stream of the idempotency table, as Lambda delivers it) show,
// to the trace's hook, and returns them. Records of other items (the
// homes' promises, a single-table design's other items) and records it
// cannot read are skipped: a detector never fails its batch.
func (d *Detector) Detect(ctx context.Context, records []events.DynamoDBEventRecord) []idemtrace.DoubleExecutionInfo {
	layout := d.Layout.WithDefaults()
	var found []idemtrace.DoubleExecutionInfo
	for _, r := range records {
		info, ok := overwrite(layout, r)
		if !ok {
			continue
		}
		found = append(found, info)
		if d.Trace != nil && d.Trace.DoubleExecution != nil {
			d.Trace.DoubleExecution(ctx, info)
		}
	}
	return found
}

// Handle is Detect as a Lambda handler of a DynamoDB Streams event: it
// never asks for a batch again.
func (d *Detector) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	d.Detect(ctx, ev.Records)
	return events.DynamoDBEventResponse{}, nil
}

// overwrite reads one stream record: a claim overwritten by a claim that
// did not see it.
func overwrite(layout idemtable.Layout, r events.DynamoDBEventRecord) (idemtrace.DoubleExecutionInfo, bool) {
	if r.EventName != "MODIFY" {
		return idemtrace.DoubleExecutionInfo{}, false
	}
	old, ok := decode(layout, r.Change.OldImage)
	if !ok {
		return idemtrace.DoubleExecutionInfo{}, false
	}
	next, ok := decode(layout, r.Change.NewImage)
	if !ok || next.LeaseToken == old.LeaseToken || !blocks(old, next) {
		return idemtrace.DoubleExecutionInfo{}, false
	}
	info := idemtrace.DoubleExecutionInfo{
		ID:          id(old, next),
		Region:      r.AWSRegion,
		ScopeID:     old.ID,
		Overwritten: execution(old),
		Overwriting: execution(next),
		At:          r.Change.ApproximateCreationDateTime.Time,
	}
	if parts, err := scopeid.Parse(old.ID); err == nil {
		info.Operation = parts.Operation
	}
	return info, true
}

// blocks reports whether old would have refused next's claim, had next's
// claim seen it when it was made, as the claim's condition says: a
// record not expired, completed, or in progress with a live lease or for
// another payload (no claim takes another payload's key over). A claim
// that took over an expired record, or a dead holder's of its own
// payload, is the protocol's, in any Region.
func blocks(old, next stored.Record) bool {
	at := next.CreatedAt
	if at.IsZero() || old.Expired(at) {
		return false
	}
	return old.Status == stored.StatusCompleted || !old.LeaseExpiresAt.Before(at) || old.Fingerprint != next.Fingerprint
}

// id is the same for every Region's report of one overwrite.
func id(old, next stored.Record) string {
	h := sha256.New()
	for _, s := range []string{old.ID, old.LeaseToken, next.LeaseToken} {
		h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// execution is what a record says of its claim.
func execution(r stored.Record) idemtrace.Execution {
	return idemtrace.Execution{
		Origin: r.Origin, Epoch: r.Epoch, Status: r.Status, Fingerprint: r.Fingerprint,
		ResponseStatus: r.Result.Status, Meta: r.Result.Meta, Body: r.Result.Body, Omitted: r.Result.Omitted,
		CreatedAt: r.CreatedAt, CompletedAt: r.CompletedAt,
	}
}

// decode reads a stream image as a record of the layout; ok is false for
// any other item.
func decode(layout idemtable.Layout, image map[string]events.DynamoDBAttributeValue) (stored.Record, bool) {
	if len(image) == 0 {
		return stored.Record{}, false
	}
	it, err := item(image)
	if err != nil {
		return stored.Record{}, false
	}
	if _, ok := it[layout.Attributes.Status]; !ok {
		return stored.Record{}, false
	}
	rec, err := stored.Decode(layout, it)
	return rec, err == nil
}

// item converts a stream image (aws-lambda-go's) to the SDK's item.
func item(image map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(image))
	for k, v := range image {
		av, err := value(v)
		if err != nil {
			return nil, fmt.Errorf("idemglobal: attribute %s: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

// value converts one attribute value.
func value(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		var l []types.AttributeValue
		for _, e := range v.List() {
			av, err := value(e)
			if err != nil {
				return nil, err
			}
			l = append(l, av)
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case events.DataTypeMap:
		m, err := item(v.Map())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unknown data type %d", v.DataType())
}
