// Package relay turns outbox INSERT records from the DynamoDB stream into
// published events: the outboxrelay Lambda's handler, also fed by the local
// runner.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// deadlineMargin is kept back from the invocation's deadline for
// publishing, so a hung call still ends in a batchItemFailures response
// rather than a timeout that would retry the whole batch.
const deadlineMargin = 500 * time.Millisecond

// Scope is the instrumentation scope of the relay's spans.
const Scope = "github.com/idemlambda/idemlambda/internal/relay"

// Handler relays outbox events from the table's stream to a Publisher.
type Handler struct {
	publisher   outbox.Publisher
	log         *slog.Logger
	metrics     *metrics.Recorder
	tracer      trace.Tracer
	destination string
	region      string
}

// NewHandler returns a Handler that publishes through p to destination
// (the bus's name, for its spans), logs to log, writes one metrics line
// per batch to rec and traces with t (nil: no spans recorded). region is
// the Region it runs in (AWS_REGION): it publishes the events of the
// outbox items written in that Region, and passes over those replicated
// from another (Handle); "" publishes every item, as on a table in one
// Region.
func NewHandler(p outbox.Publisher, log *slog.Logger, rec *metrics.Recorder, t *tracing.Tracing, destination, region string) *Handler {
	return &Handler{publisher: p, log: log, metrics: rec, tracer: t.Tracer(Scope), destination: destination, region: region}
}

// counts is the outcome of one batch, logged and measured once per
// invocation. undecodable counts the records passed over for good (they
// will not come again); one after the retry point is counted when it is
// passed over, in the retry. replicas counts the INSERT records of items
// another Region wrote, which that Region's relay publishes.
type counts struct {
	published, skipped, replicas, undecodable, failed int
}

// Handle publishes the events of the batch's INSERT records, in order,
// but those of items another Region wrote: on a global table every
// Region's stream shows every Region's writes, and each event is
// published once, by the relay of the Region that wrote it (the item's
// origin), so each reaches one Region's bus. Those are counted as
// replicas and passed over. A record that can never become an event is logged with its keys, counted
// and passed over. When publishing fails, it stops there and reports the
// sequence number of the earliest record not published, so the event
// source mapping retries from that record on and the order per shard
// holds. It returns an error only when that record has no sequence number
// to report, which makes Lambda retry the whole batch. Each published
// event gets a log line with its keys and trace id; each batch ends in
// one summary log line and one metrics line.
//
// The batch is a consumer span, a child of the trace Lambda began the
// invocation in, with its counts; each event is sent in a producer span
// ("send <bus>") of the trace it was created in, linked to the batch's,
// and its PutEvents entry carries that span's X-Ray header (TraceHeader),
// so the product's trace goes on through EventBridge and SQS. An event
// created without a trace is sent in the batch's.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	start := time.Now()
	ctx, span := h.tracer.Start(tracing.Invocation(ctx), "process "+streamTable(ev), trace.WithSpanKind(trace.SpanKindConsumer))
	defer span.End()
	resp, c, err := h.handle(ctx, ev)
	h.logOutcome(ctx, len(ev.Records), c)
	h.metrics.RelayBatch(ctx, metrics.Relay{
		Records: len(ev.Records), Published: c.published, Failed: c.failed, Dropped: c.undecodable, Replicas: c.replicas,
	}, time.Since(start))
	if span.IsRecording() {
		span.SetAttributes(semconv.FaaSTriggerDatasource, semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
			semconv.MessagingBatchMessageCount(len(ev.Records)),
			tracing.AttrPublished.Int(c.published), tracing.AttrFailed.Int(c.failed),
			tracing.AttrDropped.Int(c.undecodable), tracing.AttrSkipped.Int(c.skipped), tracing.AttrReplicas.Int(c.replicas))
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			span.SetAttributes(semconv.FaaSInvocationID(lc.AwsRequestID))
		}
		switch {
		case err != nil:
			span.RecordError(err)
			span.SetStatus(codes.Error, "the whole batch is retried")
		case c.failed > 0 || c.undecodable > 0:
			span.SetStatus(codes.Error, "records not published")
		}
	}
	return resp, err
}

// streamTable is the table whose stream the batch comes from, by its
// records' event source ARN (arn:aws:dynamodb:...:table/<name>/stream/...),
// or "outbox" when it names none.
func streamTable(ev events.DynamoDBEvent) string {
	if len(ev.Records) > 0 {
		if _, rest, ok := strings.Cut(ev.Records[0].EventSourceArn, ":table/"); ok {
			if name, _, ok := strings.Cut(rest, "/"); ok && name != "" {
				return name
			}
		}
	}
	return "outbox"
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
		sends := h.startSends(ctx, pending)
		pctx, cancel := deadline.Before(ctx, deadlineMargin)
		res, err := h.publisher.Publish(pctx, pending)
		cancel()
		endSends(sends, res, err)
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

// decodeInserts returns the events of the INSERT records of this Region's
// items, in order, and the index of the record each came from; it logs
// the records it passes over and adds the indices of the undecodable
// ones to bad.
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
		if origin := outbox.OriginOf(r.Change.NewImage); !h.publishes(origin) {
			c.replicas++
			h.log.DebugContext(ctx, "skipped replicated outbox record", recordAttrs(r, slog.String("origin", origin), slog.String("region", h.region))...)
			continue
		}
		e, err := decode(r)
		if err != nil {
			*bad = append(*bad, i)
			h.log.ErrorContext(ctx, "undecodable outbox record", recordAttrs(r, slog.Any("err", err))...)
			continue
		}
		pending = append(pending, e)
		from = append(from, i)
	}
	return pending, from
}

// publishes reports whether this relay publishes the event of an item
// written in Region origin: one of its own Region's, or any when it knows
// no Region. An item with no origin is published too: createproduct
// stamps every item since the stack could run in several Regions, so one
// without was written while it ran in one, where this relay is the only
// one, as before; a replica Region added later may show such items
// again in its stream (the table's backfill), and the consumer's
// idempotency records, replicated with them, count each once
// (docs/operations.md, Global tables).
func (h *Handler) publishes(origin string) bool {
	return origin == "" || h.region == "" || origin == h.region
}

// startSends starts each event's send span, in the trace the event was
// created in (the batch's when it has none), linked to the batch's span,
// and sets the event's TraceHeader to the span's X-Ray header. Off, the
// no-op spans carry the event's own context, which the header then
// names.
func (h *Handler) startSends(ctx context.Context, pending []outbox.Event) []trace.Span {
	batch := trace.LinkFromContext(ctx)
	spans := make([]trace.Span, len(pending))
	for i := range pending {
		e := &pending[i]
		parent := ctx
		if sc := tracing.SpanContext(e.TraceParent, e.TraceState); sc.IsValid() {
			parent = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
		sctx, span := h.tracer.Start(parent, strings.TrimSpace("send "+h.destination), trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(batch))
		if span.IsRecording() {
			span.SetAttributes(
				semconv.MessagingSystemKey.String(tracing.EventBridge), semconv.MessagingOperationTypeSend,
				semconv.MessagingOperationName("send"), semconv.MessagingDestinationName(h.destination),
				semconv.MessagingMessageID(e.ID), semconv.CloudEventsEventID(e.ID), semconv.CloudEventsEventType(e.Type),
				semconv.CloudEventsEventSource(e.Source), semconv.CloudEventsEventSubject(e.Subject),
			)
		}
		e.TraceHeader = tracing.XRayHeader(sctx)
		spans[i] = span
	}
	return spans
}

// endSends ends each send span with what became of its event: published,
// refused for good, or not published (retried from the stream).
func endSends(spans []trace.Span, res outbox.Result, err error) {
	stop, rejected := outcome(len(spans), res, err)
	for i, span := range spans {
		why, refused := rejected[i]
		switch {
		case refused:
			if why != nil {
				span.RecordError(why)
			}
			span.SetStatus(codes.Error, "refused for good; passed over")
		case i >= stop:
			if err != nil {
				span.RecordError(err)
			}
			span.SetStatus(codes.Error, "not published; retried from the stream")
		}
		span.End()
	}
}

// outcome says which of n events Publish published: those before stop
// that it did not reject (rejected holds each rejection's reason).
func outcome(n int, res outbox.Result, err error) (stop int, rejected map[int]error) {
	stop = n
	if err != nil {
		stop = 0
		if pe, ok := errors.AsType[*outbox.PublishError](err); ok {
			stop = min(max(pe.Index, 0), n)
		}
	}
	rejected = make(map[int]error, len(res.Rejected))
	for _, r := range res.Rejected {
		rejected[r.Index] = r.Err
	}
	return stop, rejected
}

// logPublished writes one line per event known to be published: those
// before the point Publish stopped at that it did not reject. The line
// carries the id of the trace the event was created in, so a product can
// be followed from its POST, by trace id, through the relay.
func (h *Handler) logPublished(ctx context.Context, pending []outbox.Event, res outbox.Result, err error) {
	stop, rejected := outcome(len(pending), res, err)
	for i, e := range pending[:stop] {
		if _, refused := rejected[i]; refused {
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
// something was not published, with the batch's trace id.
func (h *Handler) logOutcome(ctx context.Context, records int, c counts) {
	level := slog.LevelInfo
	if c.failed > 0 || c.undecodable > 0 {
		level = slog.LevelWarn
	}
	attrs := []any{slog.Int("records", records), slog.Int("published", c.published),
		slog.Int("skipped", c.skipped), slog.Int("replicas", c.replicas), slog.Int("undecodable", c.undecodable), slog.Int("failed", c.failed)}
	if id := tracing.TraceID(ctx); id != "" {
		// The batch's own trace, which each event's send span links.
		attrs = append(attrs, slog.String("trace_id", id))
	}
	h.log.Log(ctx, level, "outbox relay batch", attrs...)
}

// decode turns an INSERT record's new image into the event it carries,
// read in the Lambda event's types (outbox.DecodeImage), so the relay
// links none of the SDK's DynamoDB packages. Every error wraps
// outbox.ErrUndecodable.
func decode(r events.DynamoDBEventRecord) (outbox.Event, error) {
	e, err := outbox.DecodeImage(r.Change.NewImage)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("new image: %w", err)
	}
	return e, nil
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
