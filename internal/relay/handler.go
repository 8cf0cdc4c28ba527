// Package relay turns outbox INSERT records from the DynamoDB stream into
// published events: the outboxrelay Lambda's handler, also fed by the local
// runner.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/streams"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// deadlineMargin is kept back from the invocation's deadline for
// publishing, so a hung call still ends in a batchItemFailures response
// rather than a timeout that would retry the whole batch.
const deadlineMargin = 500 * time.Millisecond

// Handler relays outbox events from the table's stream to a Publisher.
type Handler struct {
	publisher outbox.Publisher
	log       *slog.Logger
	metrics   *metrics.Recorder
}

// NewHandler returns a Handler that publishes through p, logs to log and
// writes one metrics line per batch to rec.
func NewHandler(p outbox.Publisher, log *slog.Logger, rec *metrics.Recorder) *Handler {
	return &Handler{publisher: p, log: log, metrics: rec}
}

// counts is the outcome of one batch, logged and measured once per
// invocation. undecodable counts the records passed over for good (they
// will not come again); one after the retry point is counted when it is
// passed over, in the retry.
type counts struct {
	published, skipped, undecodable, failed int
}

// Handle publishes the events of the batch's INSERT records, in order. A
// record that can never become an event is logged with its keys, counted
// and passed over. When publishing fails, it stops there and reports the
// sequence number of the earliest record not published, so the event
// source mapping retries from that record on and the order per shard
// holds. It returns an error only when that record has no sequence number
// to report, which makes Lambda retry the whole batch. Each published
// event gets a log line with its keys and trace id; each batch ends in
// one summary log line and one metrics line.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	start := time.Now()
	resp, c, err := h.handle(ctx, ev)
	h.logOutcome(ctx, len(ev.Records), c)
	h.metrics.RelayBatch(ctx, metrics.Relay{
		Records: len(ev.Records), Published: c.published, Failed: c.failed, Dropped: c.undecodable,
	}, time.Since(start))
	return resp, err
}

func (h *Handler) handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, counts, error) {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	var c counts
	var passedOver []int // record indices never to be published
	pending, from := h.decodeInserts(ctx, ev.Records, &c, &passedOver)
	retryFrom := len(ev.Records) // records from here on come again
	final := func() counts {
		for _, i := range passedOver {
			if i < retryFrom {
				c.undecodable++
			}
		}
		return c
	}
	if len(pending) > 0 {
		pctx, cancel := deadline.Before(ctx, deadlineMargin)
		res, err := h.publisher.Publish(pctx, pending)
		cancel()
		c.published = res.Published
		h.logPublished(ctx, pending, res, err)
		for _, rej := range res.Rejected {
			var r events.DynamoDBEventRecord
			if rej.Index >= 0 && rej.Index < len(from) {
				r = ev.Records[from[rej.Index]]
				passedOver = append(passedOver, from[rej.Index])
			}
			h.log.ErrorContext(ctx, "unpublishable outbox event", recordAttrs(r, slog.Any("err", rej.Err))...)
		}
		if err != nil {
			stop := 0
			if pe, ok := errors.AsType[*outbox.PublishError](err); ok && pe.Index >= 0 && pe.Index < len(pending) {
				stop = pe.Index
			}
			c.failed = len(pending) - stop
			r := ev.Records[from[stop]]
			h.log.ErrorContext(ctx, "publish failed; retrying from this record", recordAttrs(r, slog.Any("err", err))...)
			if r.Change.SequenceNumber == "" {
				retryFrom = 0 // the whole batch comes again
				return events.DynamoDBEventResponse{}, final(), fmt.Errorf("relay: record %d has no sequence number to retry from: %w", from[stop], err)
			}
			retryFrom = from[stop]
			resp.BatchItemFailures = append(resp.BatchItemFailures,
				events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
		}
	}
	return resp, final(), nil
}

// decodeInserts returns the events of the INSERT records, in order, and
// the index of the record each came from; it logs the records it passes
// over and adds their indices to bad.
func (h *Handler) decodeInserts(ctx context.Context, records []events.DynamoDBEventRecord, c *counts, bad *[]int) ([]outbox.Event, []int) {
	pending := make([]outbox.Event, 0, len(records))
	from := make([]int, 0, len(records))
	for i, r := range records {
		if r.EventName != string(events.DynamoDBOperationTypeInsert) {
			// MODIFY never happens to an outbox item; REMOVE is its TTL.
			c.skipped++
			h.log.DebugContext(ctx, "skipped stream record", recordAttrs(r, slog.String("event_name", r.EventName))...)
			continue
		}
		e, err := decode(r)
		if err != nil {
			*bad = append(*bad, i)
			h.log.ErrorContext(ctx, "undecodable outbox record", recordAttrs(r, slog.Any("err", err))...)
			continue
		}
		// Sent under the trace it was created in: PutEvents' TraceHeader.
		e.TraceHeader = tracing.XRayHeader(tracing.Extract(ctx, e.TraceParent, e.TraceState))
		pending = append(pending, e)
		from = append(from, i)
	}
	return pending, from
}

// logPublished writes one line per event known to be published: those
// before the point Publish stopped at that it did not reject. The line
// carries the id of the trace the event was created in, so a product can
// be followed from its POST, by trace id, through the relay.
func (h *Handler) logPublished(ctx context.Context, pending []outbox.Event, res outbox.Result, err error) {
	stop := len(pending)
	if err != nil {
		stop = 0
		if pe, ok := errors.AsType[*outbox.PublishError](err); ok {
			stop = min(max(pe.Index, 0), len(pending))
		}
	}
	rejected := make(map[int]bool, len(res.Rejected))
	for _, r := range res.Rejected {
		rejected[r.Index] = true
	}
	for i, e := range pending[:stop] {
		if rejected[i] {
			continue
		}
		attrs := []slog.Attr{slog.String(outbox.AttrAggregateID, e.Subject), slog.String(outbox.AttrEventID, e.ID)}
		if id := tracing.XRayTraceID(tracing.SpanContext(e.TraceParent, e.TraceState).TraceID()); id != "" {
			attrs = append(attrs, slog.String("trace_id", id))
		}
		h.log.LogAttrs(ctx, slog.LevelInfo, "outbox event published", attrs...)
	}
}

// logOutcome writes the batch's one summary line, at warn level when
// something was not published.
func (h *Handler) logOutcome(ctx context.Context, records int, c counts) {
	level := slog.LevelInfo
	if c.failed > 0 || c.undecodable > 0 {
		level = slog.LevelWarn
	}
	h.log.Log(ctx, level, "outbox relay batch", slog.Int("records", records), slog.Int("published", c.published),
		slog.Int("skipped", c.skipped), slog.Int("undecodable", c.undecodable), slog.Int("failed", c.failed))
}

// decode turns an INSERT record's new image into the event it carries.
// Every error wraps outbox.ErrUndecodable.
func decode(r events.DynamoDBEventRecord) (outbox.Event, error) {
	item, err := streams.Item(r.Change.NewImage)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("%w: new image: %w", outbox.ErrUndecodable, err)
	}
	return outbox.DecodeItem(item)
}

// recordAttrs identifies a record in a log line by its sequence number and
// outbox keys, never its data.
func recordAttrs(r events.DynamoDBEventRecord, extra ...any) []any {
	return append([]any{
		slog.String("sequence_number", r.Change.SequenceNumber),
		slog.String(outbox.AttrAggregateID, keyString(r.Change.Keys, outbox.AttrAggregateID)),
		slog.String(outbox.AttrEventID, keyString(r.Change.Keys, outbox.AttrEventID)),
	}, extra...)
}

// keyString returns a string key attribute, or "" when it is absent or of
// another type (a zero value's accessors would panic).
func keyString(keys map[string]events.DynamoDBAttributeValue, name string) string {
	av, ok := keys[name]
	if !ok || av.DataType() != events.DataTypeString || av.IsNull() {
		return ""
	}
	return av.String()
}
