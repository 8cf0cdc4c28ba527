package sellers

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/idemlambda/idemlambda/internal/ids"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/strictjson"
)

// ErrPoison marks a message that can never be counted: it does not
// decode, or it is not a ProductCreated event this consumer accepts. No
// retry can change that; the queue's redrive policy moves it to the
// dead-letter queue.
var ErrPoison = errors.New("sellers: message cannot be processed")

// ProductCreated is the event the counter applies.
type ProductCreated struct {
	// EventID is the CloudEvent id, the key that makes a delivery count
	// once.
	EventID string
	// Source is the CloudEvent (and EventBridge) source.
	Source string
	// Product is the product the event carries, validated by product.New.
	Product product.Product
	// TraceParent and TraceState are the W3C trace context the event was
	// created under (the CloudEvents Distributed Tracing extension), ""
	// for an event that carries none. They are not checked here: a bad
	// one costs the trace, never the count.
	TraceParent, TraceState string
}

// eventBridgeEvent is the part of the EventBridge event (an SQS message's
// body) this consumer reads.
type eventBridgeEvent struct {
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Detail     json.RawMessage `json:"detail"`
}

// DecodeMessage reads an SQS message body: an EventBridge event whose
// detail is the ProductCreated CloudEvent, whose data is the product. It
// is strict where a wrong value could be counted: every field it uses
// must be present with its JSON type, the two sources must agree, ids
// must be UUIDs in their 36-character form, and the data is read by
// product.DecodeCreatedData, the contract's own reader, as on every other
// way in. Members it does not use are
// ignored, so the producer may add some. Every error wraps ErrPoison.
func DecodeMessage(body string) (ProductCreated, error) {
	poison := func(format string, args ...any) (ProductCreated, error) {
		return ProductCreated{}, fmt.Errorf("%w: "+format, append([]any{ErrPoison}, args...)...)
	}
	var env eventBridgeEvent
	if err := strictjson.Unmarshal([]byte(body), &env, "detail-type", "source", "detail"); err != nil {
		return poison("the message body is not an EventBridge event: %v", err)
	}
	if env.DetailType != product.EventCreated {
		return poison("detail-type %q, want %q", env.DetailType, product.EventCreated)
	}
	if len(env.Detail) == 0 || env.Detail[0] != '{' {
		return poison("detail is not an object")
	}
	var ce cloudEvent
	if err := strictjson.Unmarshal(env.Detail, &ce, "specversion", "id", "source", "type", "subject", "time", "datacontenttype", "data"); err != nil {
		return poison("detail is not a CloudEvent: %v", err)
	}
	if err := ce.Validate(); err != nil {
		return poison("detail: %v", err)
	}
	switch {
	case ce.Type != product.EventCreated:
		return poison("CloudEvent type %q, want %q", ce.Type, product.EventCreated)
	case ce.Source != env.Source:
		return poison("CloudEvent source %q differs from the EventBridge source %q", ce.Source, env.Source)
	}
	p, err := product.DecodeCreatedData(ce.Data)
	if err != nil {
		return poison("data is not a product: %v", err)
	}
	if ce.Subject != p.ID().String() {
		return poison("CloudEvent subject %q is not the product id %s", ce.Subject, p.ID())
	}
	// The id is the key that makes a delivery count once: one spelling.
	eventID, err := ids.Parse(ce.ID)
	if err != nil || eventID.String() != ce.ID {
		return poison("CloudEvent id %q is not a lowercase UUID, as the relay writes them", ce.ID)
	}
	return ProductCreated{EventID: ce.ID, Source: ce.Source, Product: p, TraceParent: str(ce.TraceParent), TraceState: str(ce.TraceState)}, nil
}

// cloudEvent is the CloudEvent with its Distributed Tracing attributes
// read apart (these fields, shallower, win over the Event's of the same
// names), so one of another JSON type costs the trace, not the count.
type cloudEvent struct {
	outbox.Event
	TraceParent json.RawMessage `json:"traceparent"`
	TraceState  json.RawMessage `json:"tracestate"`
}

// str is a JSON string's value, or "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
