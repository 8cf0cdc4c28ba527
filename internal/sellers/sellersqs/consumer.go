// Package sellersqs is the seller statistics consumer's SQS side, the
// sellerstats Lambda's handler: an SQS batch of EventBridge events in,
// each message decoded (internal/sellers), the batch's new events counted
// in one transaction with their idempotency records (pkg/idem/idemsqs,
// the writes from sellers.Counter), and a partial-batch answer out, with
// one log line per message, one per batch and one metrics line.
package sellersqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// DeadlineMargin is kept back from the invocation's deadline, so a hung
// store still ends in a partial-batch answer instead of a timeout that
// would redeliver the whole batch.
const DeadlineMargin = 500 * time.Millisecond

// MaxTxAttempts bounds the transactions a batch sends while conflicts
// cancel them (each retried with full jitter, within the invocation's
// deadline): a duplicate of an event committing in another environment
// holds its record, and a seller's shard can be held by another batch.
const MaxTxAttempts = 10

// Scope is the instrumentation scope of the consumer's spans.
const Scope = "github.com/idemlambda/idemlambda/internal/sellers/sellersqs"

// Consumer is the sellerstats Lambda's handler: SQS batches of
// EventBridge events, each counted once.
type Consumer struct {
	batches *batches
	source  string
	log     *slog.Logger
	metrics *metrics.Recorder
	tracer  trace.Tracer
	traced  bool
}

// NewConsumer returns a Consumer that counts events from source only
// with counter's writes, committed through store (in transact mode: the
// writes are computed from the event alone, so a duplicate needs no
// IN_PROGRESS state to wait on), logs to log and writes one metrics line
// per batch to rec, and traces with t (nil: no spans recorded).
func NewConsumer(store *idem.Store, counter *sellers.Counter, source string, log *slog.Logger, rec *metrics.Recorder, t *tracing.Tracing) (*Consumer, error) {
	if store == nil || counter == nil || log == nil || rec == nil {
		return nil, errors.New("sellersqs: the consumer needs an idempotency store, a counter, a log and a metrics recorder")
	}
	return &Consumer{batches: newBatches(store, counter), source: source, log: log, metrics: rec, tracer: t.Tracer(Scope), traced: t.On()}, nil
}

// Counts is what one batch did, logged and measured once per invocation.
type Counts struct {
	// Applied: events counted by this delivery.
	Applied int
	// Duplicate: deliveries of events counted before; acknowledged.
	Duplicate int
	// Poison: messages that can never be counted; reported, so the queue
	// moves them to its dead-letter queue.
	Poison int
	// Failed: messages that failed for a reason that can pass (throttling,
	// conflicts, time); reported, so the queue redelivers them.
	Failed int
}

// Handle counts the batch's events. Each message it tries ends in one log
// line: its messageId, CloudEvent id, outcome and trace id. Every
// message that is not counted or acknowledged as a duplicate is in
// batchItemFailures, by messageId, with its reason in that line: nothing
// is dropped silently. It never returns
// an error, which would make Lambda redeliver the whole batch. Each batch
// ends in one summary log line and one metrics line.
//
// The batch is one consumer span ("process <queue>", the messaging
// conventions' batch process), a child of the trace Lambda began the
// invocation in, linked to each message's producer: the span its event
// was created under (the CloudEvent's traceparent), or the
// AWSTraceHeader the message arrived with. Its DynamoDB calls are its
// children; each message that fails is an event on it.
func (c *Consumer) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	start := time.Now()
	ctx, calls := ddb.CountCalls(ctx)
	decoded := c.decodeAll(ev)
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	if c.traced {
		opts = append(opts, trace.WithLinks(links(ev, decoded)...))
	}
	ctx, span := c.tracer.Start(tracing.Invocation(ctx), "process "+queueName(ev), opts...)
	defer span.End()
	resp, n := c.handle(ctx, ev, decoded)
	c.metrics.ConsumerBatch(ctx, metrics.Consumer{
		Records: len(ev.Records), Applied: n.Applied, Duplicate: n.Duplicate, Poison: n.Poison, Failed: n.Failed,
		DynamoDBCalls: calls.Load(),
	}, time.Since(start))
	if span.IsRecording() {
		span.SetAttributes(semconv.MessagingSystemAWSSQS, semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(queueName(ev)), semconv.MessagingBatchMessageCount(len(ev.Records)), semconv.FaaSTriggerPubSub,
			tracing.AttrApplied.Int(n.Applied), tracing.AttrDuplicate.Int(n.Duplicate),
			tracing.AttrPoison.Int(n.Poison), tracing.AttrRedelivered.Int(n.Failed))
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			span.SetAttributes(semconv.FaaSInvocationID(lc.AwsRequestID))
		}
		if n.Poison > 0 || n.Failed > 0 {
			span.SetStatus(codes.Error, "messages reported failed")
		}
	}
	return resp, nil
}

// decoded is a message's event, or why it has none.
type decoded struct {
	event sellers.ProductCreated
	err   error
}

// decodedBy holds each message's decoding by its messageId and body: a
// batch never holds one messageId twice, but if it did, each body would
// still be read as what it is.
type decodedBy map[messageKey]decoded

type messageKey struct{ id, body string }

func (d decodedBy) of(m events.SQSMessage) decoded { return d[messageKey{m.MessageId, m.Body}] }

// decodeAll decodes each message once.
func (c *Consumer) decodeAll(ev events.SQSEvent) decodedBy {
	out := make(decodedBy, len(ev.Records))
	for _, m := range ev.Records {
		pc, err := c.decode(m)
		out[messageKey{m.MessageId, m.Body}] = decoded{pc, err}
	}
	return out
}

// links are the batch span's links: one per message with a producer, to
// it, naming the message.
func links(ev events.SQSEvent, d decodedBy) []trace.Link {
	ls := make([]trace.Link, 0, len(ev.Records))
	for _, m := range ev.Records {
		if sc := producer(m, d.of(m).event); sc.IsValid() {
			ls = append(ls, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{semconv.MessagingMessageID(m.MessageId)}})
		}
	}
	return ls
}

// queueName is the queue the batch comes from, by its records' event
// source ARN (arn:aws:sqs:<region>:<account>:<name>), or "queue".
func queueName(ev events.SQSEvent) string {
	if len(ev.Records) > 0 {
		if i := strings.LastIndexByte(ev.Records[0].EventSourceARN, ':'); i >= 0 && i < len(ev.Records[0].EventSourceARN)-1 {
			return ev.Records[0].EventSourceARN[i+1:]
		}
	}
	return "queue"
}

// handle is Handle, also returning the batch's counts (for the metrics).
// It counts the batch's valid events with one apply (one
// transaction, or two when some were delivered before), then logs each
// message in the batch's order.
func (c *Consumer) handle(ctx context.Context, ev events.SQSEvent, byMessage decodedBy) (events.SQSEventResponse, Counts) {
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	type message struct {
		eventID string
		outcome idem.Outcome
		err     error
	}
	msgs := make([]message, len(ev.Records))
	decode := func(m events.SQSMessage) (sellers.ProductCreated, error) {
		d := byMessage.of(m)
		return d.event, d.err
	}
	if err := work.Err(); err != nil {
		// Out of time already: the events go back to the queue untried.
		for i := range ev.Records {
			msgs[i] = message{outcome: idem.OutcomeUnavailable, err: fmt.Errorf("sellers: untried: %w", err)}
		}
	} else {
		for i, r := range c.batches.apply(work, ev, decode) {
			msgs[i] = message{eventID: byMessage.of(ev.Records[i]).event.EventID, outcome: r.Outcome, err: r.Err}
		}
	}
	if err := work.Err(); err != nil {
		// A hung store is answered a margin before the deadline, so the
		// events come back rather than the invocation failing and the
		// whole batch (counted ones included) being redelivered.
		c.log.WarnContext(ctx, "out of time; the queue redelivers the rest of the batch",
			slog.Int("records", len(ev.Records)), slog.Any("err", err))
	}
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	var n Counts
	for i, m := range ev.Records {
		r := msgs[i]
		attrs := messageAttrs(m, r.eventID, r.outcome, byMessage.of(m).event)
		switch {
		case r.err == nil && r.outcome == idem.OutcomeReplayed:
			n.Duplicate++
			c.log.InfoContext(ctx, "duplicate event acknowledged", attrs...)
			continue
		case r.err == nil:
			n.Applied++
			c.log.InfoContext(ctx, "event counted", attrs...)
			continue
		case permanent(r.err):
			n.Poison++
			c.log.ErrorContext(ctx, "poison message: it will reach the dead-letter queue", append(attrs, slog.Any("err", r.err))...)
			failedEvent(ctx, "poison message", m, r.eventID, r.outcome, r.err)
		default:
			n.Failed++
			c.log.WarnContext(ctx, "message failed; the queue redelivers it", append(attrs, slog.Any("err", r.err))...)
			failedEvent(ctx, "message failed", m, r.eventID, r.outcome, r.err)
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
	}
	level := slog.LevelInfo
	if n.Poison > 0 || n.Failed > 0 {
		level = slog.LevelWarn
	}
	attrs := []any{slog.Int("records", len(ev.Records)),
		slog.Int("applied", n.Applied), slog.Int("duplicate", n.Duplicate), slog.Int("poison", n.Poison), slog.Int("failed", n.Failed)}
	if id := tracing.TraceID(ctx); id != "" {
		// The batch's own trace, which links each message's producer.
		attrs = append(attrs, slog.String("trace_id", id))
	}
	c.log.Log(ctx, level, "seller stats batch", attrs...)
	return resp, n
}

// failedEvent adds an event for a message reported failed to ctx's span,
// when it records.
func failedEvent(ctx context.Context, name string, m events.SQSMessage, eventID string, outcome idem.Outcome, err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(name, trace.WithAttributes(semconv.MessagingMessageID(m.MessageId), semconv.CloudEventsEventID(eventID),
		tracing.AttrOutcome.String(string(outcome)), semconv.ExceptionMessage(err.Error())))
}

// decode reads one message into the event it carries, from this
// consumer's source; the event's id is set once the message has decoded.
func (c *Consumer) decode(m events.SQSMessage) (sellers.ProductCreated, error) {
	if m.MessageId == "" {
		return sellers.ProductCreated{}, fmt.Errorf("%w: a message without a messageId", sellers.ErrPoison)
	}
	pc, err := sellers.DecodeMessage(m.Body)
	if err != nil {
		return sellers.ProductCreated{}, err
	}
	if pc.Source != c.source {
		return sellers.ProductCreated{EventID: pc.EventID}, fmt.Errorf("%w: source %q, this consumer counts %q", sellers.ErrPoison, pc.Source, c.source)
	}
	return pc, nil
}

// messageAttrs are the attributes of a message's one log line: which
// message and event, and what became of it, with the id of the trace the
// event was created in (producer), so the line can be found from the POST
// that created the product; a message without one simply has none.
func messageAttrs(m events.SQSMessage, eventID string, outcome idem.Outcome, pc sellers.ProductCreated) []any {
	attrs := []any{slog.String("message_id", m.MessageId), slog.String("receive_count", m.Attributes["ApproximateReceiveCount"])}
	if eventID != "" {
		attrs = append(attrs, slog.String("event_id", eventID))
	}
	attrs = append(attrs, slog.String("outcome", string(outcome)))
	if id := tracing.XRayTraceID(producer(m, pc).TraceID()); id != "" {
		attrs = append(attrs, slog.String("trace_id", id))
	}
	return attrs
}

// producer is the span context a message's event was created under: the
// CloudEvent's traceparent, or, for an event that carries none (a
// producer without the Distributed Tracing extension), the AWSTraceHeader
// the message arrived with; invalid when it has neither.
func producer(m events.SQSMessage, pc sellers.ProductCreated) trace.SpanContext {
	if sc := tracing.SpanContext(pc.TraceParent, pc.TraceState); sc.IsValid() {
		return sc
	}
	if h := m.Attributes[tracing.SQSAttribute]; h != "" {
		return trace.SpanContextFromContext(tracing.FromXRay(context.Background(), h))
	}
	return trace.SpanContext{}
}

// permanent reports whether no redelivery can change err: a message that
// does not decode, an event id reused for another product, a total that
// would overflow, an effect no transaction can carry.
func permanent(err error) bool {
	return errors.Is(err, sellers.ErrPoison) || errors.Is(err, idem.ErrKeyReuse) || errors.Is(err, idem.ErrInvalidKey) ||
		errors.Is(err, sellers.ErrOverflow) || errors.Is(err, idem.ErrInvalidEffect)
}
