package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/streamimage"
	"github.com/idemlambda/idemlambda/internal/tracing"
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
	// AttrOrigin is the Region whose replica of the table took the item's
	// write: on a global table every Region's stream shows every Region's
	// items, and only the origin's relay publishes an item's event
	// (OriginOf). Absent on items written before it was stamped, and on
	// items written by a caller that knows no Region.
	AttrOrigin = "origin"
)

// ErrUndecodable marks an outbox item that can never become an event; the
// relay logs and counts it instead of retrying it forever.
var ErrUndecodable = errors.New("outbox: undecodable item")

// Fields are what an outbox item holds, as a decoder reads them from the
// item in whichever types carry it: its three required string attributes,
// read strictly, and its trace context, each "" when absent or not a
// string. DecodeImage reads them from a stream image, outboxitem.Decode
// from an item in the DynamoDB SDK's types.
type Fields struct {
	Payload, AggregateID, EventID        string
	TraceParent, TraceState, TraceHeader string
	// Origin is the Region that took the item's write, "" when absent.
	Origin string
}

// Event decodes the envelope the fields hold, with the trace context it
// was created under. Every failure wraps ErrUndecodable: the item is
// malformed and retrying cannot help. A trace context that is not a
// well-formed one is left out, never a failure: tracing must not cost an
// event. An item written before the W3C attributes, with the request's
// X-Ray header in trace_header, gets that trace as its W3C context; one
// with neither has none, and still relays.
func (f Fields) Event() (Event, error) {
	var e Event
	if err := json.Unmarshal([]byte(f.Payload), &e); err != nil {
		return Event{}, fmt.Errorf("%w: payload: %w", ErrUndecodable, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	// The keys must agree with the envelope, or consumers would dedupe on
	// an id the table does not know.
	if f.AggregateID != e.Subject || f.EventID != e.ID {
		return Event{}, fmt.Errorf("%w: keys (%s, %s) disagree with envelope (%s, %s)",
			ErrUndecodable, f.AggregateID, f.EventID, e.Subject, e.ID)
	}
	e.TraceParent, e.TraceState = f.traceContext()
	e.Origin = f.Origin
	return e, nil
}

// traceContext is the item's W3C trace context, checked and written again
// by the propagator, or none.
func (f Fields) traceContext() (traceparent, tracestate string) {
	ctx := context.Background()
	if f.TraceParent != "" {
		return tracing.Inject(tracing.Extract(ctx, f.TraceParent, f.TraceState))
	}
	if f.TraceHeader != "" {
		return tracing.Inject(tracing.FromXRay(ctx, f.TraceHeader))
	}
	return "", ""
}

// OriginOf is the Region an outbox item's stream image says took its
// write (AttrOrigin), or "" when the image carries none or not a string.
func OriginOf(image map[string]events.DynamoDBAttributeValue) string {
	return streamimage.String(image, AttrOrigin)
}

// DecodeImage reads an outbox item as the table's stream delivers it to
// Lambda (an INSERT record's new image), in the Lambda event's types, as
// outboxitem.Decode reads it from the table: the relay decodes with it
// and links none of the SDK's DynamoDB packages. An image holding a value
// with no DynamoDB meaning (streamimage.Check), anywhere, is undecodable
// too. Every failure wraps ErrUndecodable.
func DecodeImage(image map[string]events.DynamoDBAttributeValue) (Event, error) {
	if err := streamimage.Check(image); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	r := streamimage.Read(image)
	f := Fields{Payload: r.S(AttrPayload), AggregateID: r.S(AttrAggregateID), EventID: r.S(AttrEventID)}
	if err := r.Err(); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	f.TraceParent = streamimage.String(image, AttrTraceParent)
	f.TraceState = streamimage.String(image, AttrTraceState)
	f.TraceHeader = streamimage.String(image, AttrTraceHeader)
	f.Origin = OriginOf(image)
	return f.Event()
}
