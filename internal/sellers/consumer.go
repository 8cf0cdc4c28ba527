package sellers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/deadline"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// DeadlineMargin is kept back from the invocation's deadline, so a hung
// store still ends in a partial-batch answer instead of a timeout that
// would redeliver the whole batch.
const DeadlineMargin = 500 * time.Millisecond

// Applier counts one event; *Counter is the one in use.
type Applier interface {
	Apply(ctx context.Context, ev ProductCreated) (idem.Outcome, error)
}

var _ Applier = (*Counter)(nil)

// Consumer is the sellerstats Lambda's handler: SQS batches of
// EventBridge events, each counted once.
type Consumer struct {
	apply   Applier
	source  string
	log     *slog.Logger
	metrics *metrics.Recorder
}

// NewConsumer returns a Consumer that counts events from source only,
// logs to log and writes one metrics line per batch to rec.
func NewConsumer(apply Applier, source string, log *slog.Logger, rec *metrics.Recorder) *Consumer {
	return &Consumer{apply: apply, source: source, log: log, metrics: rec}
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
// line: its messageId, CloudEvent id, outcome and trace header. Every
// message that is not counted or acknowledged as a duplicate is in
// batchItemFailures, by messageId, with its reason in that line: nothing
// is dropped silently. It never returns
// an error, which would make Lambda redeliver the whole batch. Each batch
// ends in one summary log line and one metrics line.
func (c *Consumer) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	start := time.Now()
	ctx, calls := ddb.CountCalls(ctx)
	resp, n := c.handle(ctx, ev)
	c.metrics.ConsumerBatch(ctx, metrics.Consumer{
		Records: len(ev.Records), Applied: n.Applied, Duplicate: n.Duplicate, Poison: n.Poison, Failed: n.Failed,
		DynamoDBCalls: calls.Load(),
	}, time.Since(start))
	return resp, nil
}

// handle is Handle, also returning the batch's counts (for the metrics).
func (c *Consumer) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, Counts) {
	work, cancel := deadline.Before(ctx, DeadlineMargin)
	defer cancel()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	var n Counts
	for i, m := range ev.Records {
		if err := work.Err(); err != nil {
			// Out of time: the rest goes back to the queue untried, rather
			// than each spending a store timeout past the deadline, which
			// would fail the invocation and redeliver the whole batch.
			for _, rest := range ev.Records[i:] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rest.MessageId})
			}
			n.Failed += len(ev.Records) - i
			c.log.WarnContext(ctx, "out of time; the queue redelivers the rest of the batch",
				slog.Int("untried", len(ev.Records)-i), slog.Any("err", err))
			break
		}
		eventID, outcome, err := c.one(work, m)
		attrs := messageAttrs(m, eventID, outcome)
		switch {
		case err == nil && outcome == idem.OutcomeReplayed:
			n.Duplicate++
			c.log.InfoContext(ctx, "duplicate event acknowledged", attrs...)
			continue
		case err == nil:
			n.Applied++
			c.log.InfoContext(ctx, "event counted", attrs...)
			continue
		case permanent(err):
			n.Poison++
			c.log.ErrorContext(ctx, "poison message: it will reach the dead-letter queue", append(attrs, slog.Any("err", err))...)
		default:
			n.Failed++
			c.log.WarnContext(ctx, "message failed; the queue redelivers it", append(attrs, slog.Any("err", err))...)
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
	}
	level := slog.LevelInfo
	if n.Poison > 0 || n.Failed > 0 {
		level = slog.LevelWarn
	}
	c.log.Log(ctx, level, "seller stats batch", slog.Int("records", len(ev.Records)),
		slog.Int("applied", n.Applied), slog.Int("duplicate", n.Duplicate), slog.Int("poison", n.Poison), slog.Int("failed", n.Failed))
	return resp, n
}

// one decodes and counts one message; it returns the CloudEvent id once
// the message has decoded.
func (c *Consumer) one(ctx context.Context, m events.SQSMessage) (string, idem.Outcome, error) {
	if m.MessageId == "" {
		return "", idem.OutcomeRejected, fmt.Errorf("%w: a message without a messageId", ErrPoison)
	}
	pc, err := DecodeMessage(m.Body)
	if err != nil {
		return "", idem.OutcomeRejected, err
	}
	if pc.Source != c.source {
		return pc.EventID, idem.OutcomeRejected, fmt.Errorf("%w: source %q, this consumer counts %q", ErrPoison, pc.Source, c.source)
	}
	outcome, err := c.apply.Apply(ctx, pc)
	return pc.EventID, outcome, err
}

// messageAttrs are the attributes of a message's one log line: which
// message and event, and what became of it. The trace header is the one
// X-Ray passed along from the POST that created the product (via the
// outbox, PutEvents and the rule), so the line can be found by the
// request's trace id; a message without one simply has none.
func messageAttrs(m events.SQSMessage, eventID string, outcome idem.Outcome) []any {
	attrs := []any{slog.String("message_id", m.MessageId), slog.String("receive_count", m.Attributes["ApproximateReceiveCount"])}
	if eventID != "" {
		attrs = append(attrs, slog.String("event_id", eventID))
	}
	attrs = append(attrs, slog.String("outcome", string(outcome)))
	if h := m.Attributes[tracing.SQSAttribute]; h != "" {
		attrs = append(attrs, slog.String("trace_id", tracing.TraceID(h)), slog.String("trace_header", h))
	}
	return attrs
}

// permanent reports whether no redelivery can change err: a message that
// does not decode, an event id reused for another product, a total that
// would overflow, a corrupt record.
func permanent(err error) bool {
	return errors.Is(err, ErrPoison) || errors.Is(err, idem.ErrKeyReuse) ||
		errors.Is(err, ErrOverflow) || errors.Is(err, idem.ErrCorruptRecord) || errors.Is(err, idem.ErrInvalidEffect)
}
