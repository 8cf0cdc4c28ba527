// Package bridge publishes outbox events to Amazon EventBridge. It is
// apart from package outbox so that only the binaries that publish (the
// relay, make run) link the EventBridge client.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/idemlambda/idemlambda/internal/outbox"
)

// PutEvents limits.
const (
	// MaxEntriesPerCall is the most entries one PutEvents call takes.
	MaxEntriesPerCall = 10
	// DefaultMaxRequestBytes is the PutEvents size limit this project
	// publishes under: 256 KiB for the sum of the entries' sizes as
	// EntrySize computes them. AWS raised the bus limit to 1 MB in January
	// 2026; 256 KiB still holds on every bus and emulator, and a product
	// event is a few hundred bytes.
	DefaultMaxRequestBytes = 256 * 1024
	// timeEntryBytes is what a set Time counts towards an entry's size.
	timeEntryBytes = 14
)

// PutEventsAPI is the EventBridge call the publisher makes;
// *eventbridge.Client implements it.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Config configures a Publisher.
type Config struct {
	// Bus is the event bus name or ARN (EVENT_BUS_NAME).
	Bus string
	// Source is every entry's Source (EVENT_SOURCE).
	Source string
	// MaxRequestBytes bounds the summed entry sizes of one call
	// (default DefaultMaxRequestBytes).
	MaxRequestBytes int
}

// Publisher publishes events with EventBridge PutEvents: one
// entry per event (Source, DetailType = the event type, Detail = the
// CloudEvent JSON with its traceparent and tracestate, Time = the event
// time, TraceHeader = the event's X-Ray header), in calls of at most
// MaxEntriesPerCall entries and MaxRequestBytes bytes. It is safe for
// concurrent use.
type Publisher struct {
	client PutEventsAPI
	cfg    Config
}

// New returns a publisher sending through client.
func New(client PutEventsAPI, cfg Config) (*Publisher, error) {
	switch {
	case client == nil:
		return nil, errors.New("bridge: nil EventBridge client")
	case cfg.Bus == "":
		return nil, errors.New("bridge: empty event bus name")
	case cfg.Source == "":
		return nil, errors.New("bridge: empty event source")
	case cfg.MaxRequestBytes < 0:
		return nil, fmt.Errorf("bridge: negative MaxRequestBytes %d", cfg.MaxRequestBytes)
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	return &Publisher{client: client, cfg: cfg}, nil
}

// EntrySize is an entry's size as EventBridge counts it against the
// PutEvents limit ("Calculating PutEvents event entry size"): 14 bytes for
// a Time, plus the UTF-8 bytes of Source, DetailType, Detail and each of
// Resources. EventBusName and TraceHeader do not count.
func EntrySize(e ebtypes.PutEventsRequestEntry) int {
	n := len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	if e.Time != nil {
		n += timeEntryBytes
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// Entry returns the PutEvents entry for the event and its size.
func (p *Publisher) Entry(e outbox.Event) (ebtypes.PutEventsRequestEntry, int, error) {
	if err := e.Validate(); err != nil {
		return ebtypes.PutEventsRequestEntry{}, 0, err
	}
	detail, err := json.Marshal(e)
	if err != nil {
		return ebtypes.PutEventsRequestEntry{}, 0, fmt.Errorf("%w: %w", outbox.ErrInvalidEvent, err)
	}
	entry := ebtypes.PutEventsRequestEntry{
		Source:       aws.String(p.cfg.Source),
		DetailType:   aws.String(e.Type),
		Detail:       aws.String(string(detail)),
		EventBusName: aws.String(p.cfg.Bus),
		Time:         aws.Time(e.Time),
	}
	// The trace follows the event to the rule's targets (SQS: the
	// message's AWSTraceHeader); the Detail carries the trace context the
	// event was created under (traceparent, tracestate).
	if e.TraceHeader != "" {
		entry.TraceHeader = aws.String(e.TraceHeader)
	}
	return entry, EntrySize(entry), nil
}

// Publish implements outbox.Publisher. Entries are packed in order, as many per
// call as both limits allow; an event too large for a call of its own is
// rejected with outbox.ErrTooLarge and the rest go on. It stops at the first
// failed call or entry.
func (p *Publisher) Publish(ctx context.Context, events []outbox.Event) (outbox.Result, error) {
	var (
		res     outbox.Result
		entries = make([]ebtypes.PutEventsRequestEntry, 0, min(len(events), MaxEntriesPerCall))
		indexes = make([]int, 0, cap(entries)) // event index of each entry
		size    int
	)
	flush := func() error {
		if len(entries) == 0 {
			return nil
		}
		sent, err := p.call(ctx, entries, indexes)
		res.Published += sent
		if err != nil {
			return err
		}
		// Fresh slices: the request is never reused after its call.
		entries = make([]ebtypes.PutEventsRequestEntry, 0, cap(entries))
		indexes, size = indexes[:0], 0
		return nil
	}
	stop := func(err error) (outbox.Result, error) {
		// A rejection past the stopping point is decided again on retry.
		if pe, ok := errors.AsType[*outbox.PublishError](err); ok {
			res.Rejected = slices.DeleteFunc(res.Rejected, func(r outbox.Rejection) bool { return r.Index > pe.Index })
		}
		return res, err
	}
	for i, e := range events {
		entry, n, err := p.Entry(e)
		switch {
		case err != nil:
			res.Rejected = append(res.Rejected, outbox.Rejection{Index: i, Err: err})
			continue
		case n > p.cfg.MaxRequestBytes:
			res.Rejected = append(res.Rejected, outbox.Rejection{Index: i,
				Err: fmt.Errorf("%w: entry of %d bytes, limit %d", outbox.ErrTooLarge, n, p.cfg.MaxRequestBytes)})
			continue
		}
		if len(entries) == MaxEntriesPerCall || size+n > p.cfg.MaxRequestBytes {
			if err := flush(); err != nil {
				return stop(err)
			}
		}
		entries = append(entries, entry)
		indexes = append(indexes, i)
		size += n
	}
	if err := flush(); err != nil {
		return stop(err)
	}
	return res, nil
}

// call sends one PutEvents request. It returns how many entries, from the
// first, are known to be published, and on failure the event it stops at:
// the first entry of a failed call, the first failed entry of a partly
// failed one.
func (p *Publisher) call(ctx context.Context, entries []ebtypes.PutEventsRequestEntry, indexes []int) (int, error) {
	out, err := p.client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
	if err != nil {
		return 0, &outbox.PublishError{Index: indexes[0], Err: fmt.Errorf("%w: %w", outbox.ErrCallFailed, err)}
	}
	for k, r := range out.Entries {
		if code := aws.ToString(r.ErrorCode); code != "" && k < len(indexes) {
			return k, &outbox.PublishError{Index: indexes[k],
				Err: fmt.Errorf("%w: %s: %s", outbox.ErrEntryFailed, code, aws.ToString(r.ErrorMessage))}
		}
	}
	// Results line up with entries by position; a response that does not
	// account for each entry cannot say which were published.
	if out.FailedEntryCount > 0 || len(out.Entries) != len(entries) {
		return 0, &outbox.PublishError{Index: indexes[0], Err: fmt.Errorf("%w: %d of %d entries failed, %d results",
			outbox.ErrEntryFailed, out.FailedEntryCount, len(entries), len(out.Entries))}
	}
	return len(entries), nil
}
