// Package outbox defines the domain event envelope (CloudEvents 1.0 JSON),
// the outbox table item that carries it, and the publishers the relay uses.
package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// SpecVersion is the CloudEvents version of every envelope.
const SpecVersion = "1.0"

// ContentTypeJSON is the datacontenttype of every envelope.
const ContentTypeJSON = "application/json"

// DefaultRetention is how long an outbox item stays in the table (its TTL)
// after the event: long enough for the relay's retries and a replay from
// the stream, which keeps records for 24 hours.
const DefaultRetention = 7 * 24 * time.Hour

// ErrInvalidEvent reports an envelope that breaks the contract.
var ErrInvalidEvent = errors.New("outbox: invalid event")

// Event is a CloudEvents 1.0 envelope in JSON form, as docs/architecture.md
// describes it: id is the outbox event_id, subject the product id, data the
// product body.
// Consumers deduplicate on ID: delivery is at least once.
type Event struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`

	// TraceParent and TraceState are the W3C trace context the event was
	// created under (the POST's), both "" when there was none: the
	// CloudEvents Distributed Tracing extension's attributes, so a
	// consumer can link its work to the producer's span. The outbox item
	// stores them beside the payload (traceparent, tracestate), and the
	// relay puts them back on the CloudEvent it publishes.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`

	// TraceHeader is the X-Ray trace header the event is sent with, not
	// part of the CloudEvent and not stored: the relay sets it from the
	// span that sends the event, as the PutEvents entry's TraceHeader,
	// which EventBridge passes to the SQS message as AWSTraceHeader.
	TraceHeader string `json:"-"`

	// Origin is the Region whose replica of the outbox table takes the
	// item's write, stored beside the envelope (origin), not part of the
	// CloudEvent: on a global table each Region's relay publishes only
	// its own Region's events. "" when the writer knows no Region.
	Origin string `json:"-"`
}

// NewEvent builds an envelope with a fresh UUIDv7 id, so ids sort by time
// within an aggregate's partition of the outbox table. data must be a JSON
// document; it is carried byte for byte.
func NewEvent(source, typ, subject string, data []byte, at time.Time) (Event, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Event{}, fmt.Errorf("outbox: event id: %w", err)
	}
	e := Event{
		SpecVersion: SpecVersion, ID: id.String(), Source: source, Type: typ, Subject: subject,
		Time: at.UTC(), DataContentType: ContentTypeJSON, Data: json.RawMessage(bytes.Clone(data)),
	}
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// Validate checks the attributes this project requires of an envelope.
func (e Event) Validate() error {
	switch {
	case e.SpecVersion != SpecVersion:
		return fmt.Errorf("%w: specversion %q", ErrInvalidEvent, e.SpecVersion)
	case e.ID == "":
		return fmt.Errorf("%w: empty id", ErrInvalidEvent)
	case e.Source == "":
		return fmt.Errorf("%w: empty source", ErrInvalidEvent)
	case e.Type == "":
		return fmt.Errorf("%w: empty type", ErrInvalidEvent)
	case e.Subject == "":
		return fmt.Errorf("%w: empty subject", ErrInvalidEvent)
	case e.Time.IsZero():
		return fmt.Errorf("%w: no time", ErrInvalidEvent)
	case e.DataContentType != ContentTypeJSON:
		return fmt.Errorf("%w: datacontenttype %q", ErrInvalidEvent, e.DataContentType)
	case !json.Valid(e.Data):
		return fmt.Errorf("%w: data is not JSON", ErrInvalidEvent)
	}
	return nil
}
