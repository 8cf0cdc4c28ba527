package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/ddbitem"
)

// Outbox item attributes (docs/operations.md, Tables).
const (
	// AttrAggregateID is the partition key: the product id.
	AttrAggregateID = "aggregate_id"
	// AttrEventID is the sort key: the event id, a UUIDv7, so events sort
	// by time within their aggregate.
	AttrEventID    = "event_id"
	AttrEventType  = "event_type"
	AttrOccurredAt = "occurred_at"
	// AttrPayload holds the CloudEvent JSON.
	AttrPayload = "payload"
	// AttrExpiresAt is the item's TTL, epoch seconds.
	AttrExpiresAt = "expires_at"
	// AttrTraceParent and AttrTraceState are the W3C trace context the
	// event was created under; absent when there was none.
	AttrTraceParent = tracing.TraceParent
	AttrTraceState  = tracing.TraceState
	// AttrTraceHeader is what items written before the W3C attributes
	// carried: the X-Ray trace header of the request that created the
	// event. Such items are read (their trace continues) until their TTL
	// has removed them, 7 days after the change; none is written.
	AttrTraceHeader = "trace_header"
)

// ErrUndecodable marks an outbox item that can never become an event; the
// relay logs and counts it instead of retrying it forever.
var ErrUndecodable = errors.New("outbox: undecodable item")

// Item encodes the event as an outbox item: the envelope JSON in payload,
// plus the keys and fields a reader can query without parsing it.
func (e Event) Item(retention time.Duration) (map[string]types.AttributeValue, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	// The trace context travels beside the CloudEvent in the table, so
	// the stored envelope is the same whether the request was traced or
	// not; the relay puts it back on the CloudEvent.
	envelope := e
	envelope.TraceParent, envelope.TraceState = "", ""
	payload, err := json.Marshal(envelope)
	if err != nil {
		return nil, fmt.Errorf("outbox: encode envelope: %w", err)
	}
	item := map[string]types.AttributeValue{
		AttrAggregateID: ddbitem.S(e.Subject),
		AttrEventID:     ddbitem.S(e.ID),
		AttrEventType:   ddbitem.S(e.Type),
		AttrOccurredAt:  ddbitem.Time(e.Time),
		AttrPayload:     ddbitem.S(string(payload)),
		AttrExpiresAt:   ddbitem.N(e.Time.Add(retention).Unix()),
	}
	if e.TraceParent != "" {
		item[AttrTraceParent] = ddbitem.S(e.TraceParent)
		if e.TraceState != "" {
			item[AttrTraceState] = ddbitem.S(e.TraceState)
		}
	}
	return item, nil
}

// Put returns the transaction item that writes the event to the outbox
// table. The condition makes a reused event id fail loudly instead of
// overwriting an event the relay may not have published yet.
func (e Event) Put(table string, retention time.Duration) (types.TransactWriteItem, error) {
	item, err := e.Item(retention)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#eid)"),
		ExpressionAttributeNames: map[string]string{"#eid": AttrEventID},
	}}, nil
}

// DecodeItem reads an outbox item back into its envelope and the trace
// context it was created under. Every failure wraps ErrUndecodable: the
// item is malformed and retrying cannot help. A trace context that is not
// a string, or not a well-formed one, is left out, never a failure:
// tracing must not cost an event. An item written before the W3C
// attributes, with the request's X-Ray header in trace_header, gets that
// trace as its W3C context; one with neither has none, and still relays.
func DecodeItem(item map[string]types.AttributeValue) (Event, error) {
	r := ddbitem.Read(item)
	payload, aggregate, eventID := r.S(AttrPayload), r.S(AttrAggregateID), r.S(AttrEventID)
	if err := r.Err(); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	var e Event
	if err := json.Unmarshal([]byte(payload), &e); err != nil {
		return Event{}, fmt.Errorf("%w: payload: %w", ErrUndecodable, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	// The keys must agree with the envelope, or consumers would dedupe on
	// an id the table does not know.
	if aggregate != e.Subject || eventID != e.ID {
		return Event{}, fmt.Errorf("%w: keys (%s, %s) disagree with envelope (%s, %s)",
			ErrUndecodable, aggregate, eventID, e.Subject, e.ID)
	}
	e.TraceParent, e.TraceState = traceContext(item)
	return e, nil
}

// traceContext is the item's W3C trace context, checked and written again
// by the propagator, or none.
func traceContext(item map[string]types.AttributeValue) (traceparent, tracestate string) {
	str := func(name string) string {
		v, _ := item[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	ctx := context.Background()
	if tp := str(AttrTraceParent); tp != "" {
		return tracing.Inject(tracing.Extract(ctx, tp, str(AttrTraceState)))
	}
	if h := str(AttrTraceHeader); h != "" {
		return tracing.Inject(tracing.FromXRay(ctx, h))
	}
	return "", ""
}
