// Package eventbus stands in for the EventBridge rule and the SQS queue
// between the outbox relay and the sellerstats consumer, for make run and
// the tests: it wraps each event as EventBridge delivers it to a queue
// target, delivers batches of SQS messages to a Lambda-style handler, and
// redelivers what the handler reports failed, as an event source mapping
// with ReportBatchItemFailures does, until a receive limit moves a message
// to its dead-letter list.
package eventbus

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// Account and Region are what the envelopes carry: nothing here is AWS.
const (
	Account = "000000000000"
	Region  = "local"
)

// Envelope is the EventBridge event a rule with an SQS target delivers
// for one PutEvents entry: its body is the message's.
func Envelope(source, detailType string, detail []byte, at time.Time) ([]byte, error) {
	if !json.Valid(detail) {
		return nil, fmt.Errorf("eventbus: detail is not JSON")
	}
	return json.Marshal(struct {
		Version    string          `json:"version"`
		ID         string          `json:"id"`
		DetailType string          `json:"detail-type"`
		Source     string          `json:"source"`
		Account    string          `json:"account"`
		Time       string          `json:"time"`
		Region     string          `json:"region"`
		Resources  []string        `json:"resources"`
		Detail     json.RawMessage `json:"detail"`
	}{"0", uuid.NewString(), detailType, source, Account, at.UTC().Format(time.RFC3339), Region, []string{}, detail})
}

// EventEnvelope is Envelope for an outbox event, as the relay publishes it
// (Source = the event's source, DetailType = its type, Detail = the
// CloudEvent).
func EventEnvelope(e outbox.Event) ([]byte, error) {
	detail, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return Envelope(e.Source, e.Type, detail, e.Time)
}

// Message is an SQS message with body, as a Lambda event source mapping
// hands it over, on its receive-th receive.
func Message(id, body string, receive int) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, ReceiptHandle: "rh-" + id + "-" + strconv.Itoa(receive), Body: body,
		Attributes: map[string]string{
			"ApproximateReceiveCount":          strconv.Itoa(receive),
			"SentTimestamp":                    strconv.FormatInt(time.Now().UnixMilli(), 10),
			"ApproximateFirstReceiveTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		},
		EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:" + Region + ":" + Account + ":sellerstats", AWSRegion: Region,
	}
}

// Handler is a Lambda handler of SQS batches with ReportBatchItemFailures.
type Handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Queue is an outbox.Publisher that delivers every event to a Handler as
// an SQS message, in batches, redelivering failures after Visibility, up
// to MaxReceives receives. Start runs the delivery.
type Queue struct {
	handler     Handler
	log         *slog.Logger
	batch       int
	visibility  time.Duration
	maxReceives int

	mu      sync.Mutex
	pending []*queued
	dead    []events.SQSMessage
	wake    chan struct{}
}

type queued struct {
	msg     events.SQSMessage
	trace   string // the AWSTraceHeader it was sent with, or ""
	receive int
	due     time.Time
}

// NewQueue returns a Queue for h: batches of 10, 1 s visibility, a
// dead-letter list after 5 receives (the template's settings, with a
// shorter visibility for a laptop).
func NewQueue(h Handler, log *slog.Logger) *Queue {
	return &Queue{handler: h, log: log, batch: 10, visibility: time.Second, maxReceives: 5, wake: make(chan struct{}, 1)}
}

// Publish enqueues the events; it never fails. An event's trace header
// becomes its message's AWSTraceHeader, as PutEvents' TraceHeader does on
// the way through a rule to SQS.
func (q *Queue) Publish(_ context.Context, evs []outbox.Event) (outbox.Result, error) {
	var res outbox.Result
	q.mu.Lock()
	for i, e := range evs {
		body, err := EventEnvelope(e)
		if err != nil {
			res.Rejected = append(res.Rejected, outbox.Rejection{Index: i, Err: err})
			continue
		}
		q.pending = append(q.pending, &queued{msg: Message(uuid.NewString(), string(body), 0), trace: e.TraceHeader})
		res.Published++
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return res, nil
}

// Run delivers until ctx ends; once it has, no batch is handed over (a
// delivery with a cancelled context would only cost a receive).
func (q *Queue) Run(ctx context.Context) {
	for ctx.Err() == nil {
		batch := q.take(time.Now())
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		ev := events.SQSEvent{Records: make([]events.SQSMessage, len(batch))}
		for i, m := range batch {
			ev.Records[i] = m.msg
		}
		resp, err := q.handler(ctx, ev)
		q.settle(batch, resp, err)
	}
}

// Idle reports whether no message waits for delivery.
func (q *Queue) Idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending) == 0
}

// Dead returns the messages moved to the dead-letter list.
func (q *Queue) Dead() []events.SQSMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.dead)
}

// take receives up to a batch of due messages.
func (q *Queue) take(now time.Time) []*queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*queued
	for _, m := range q.pending {
		if len(out) == q.batch {
			break
		}
		if !m.due.After(now) {
			m.receive++
			m.msg = Message(m.msg.MessageId, m.msg.Body, m.receive)
			if m.trace != "" {
				m.msg.Attributes[tracing.SQSAttribute] = m.trace
			}
			m.due = now.Add(q.visibility)
			out = append(out, m)
		}
	}
	return out
}

// settle deletes what the handler processed and leaves the failures for
// redelivery, or for the dead-letter list at the receive limit.
func (q *Queue) settle(batch []*queued, resp events.SQSEventResponse, err error) {
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range batch {
		if err == nil && !failed[m.msg.MessageId] {
			q.remove(m)
			continue
		}
		if m.receive >= q.maxReceives {
			q.remove(m)
			q.dead = append(q.dead, m.msg)
			q.log.Error("message moved to the dead-letter queue", "message_id", m.msg.MessageId, "receives", m.receive)
		}
	}
}

func (q *Queue) remove(m *queued) {
	q.pending = slices.DeleteFunc(q.pending, func(p *queued) bool { return p == m })
}
