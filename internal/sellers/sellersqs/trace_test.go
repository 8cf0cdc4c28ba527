package sellersqs_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// TestEachMessageLogsItsTraceID: every message of a batch ends in one log
// line with its messageId, CloudEvent id, outcome and the id of the trace
// its event was created in: the CloudEvent's traceparent, or, for an event
// without one, the AWSTraceHeader the message arrived with. So the
// consumer's side of one product can be found by the trace id of the POST
// that created it.
func TestEachMessageLogsItsTraceID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const (
		tp    = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
		sent  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0102030405060708;Sampled=1" // the relay's send span
		other = "Root=1-5759e989-0123456789abcdef01234567;Parent=0000000000000001;Sampled=1"
	)
	seller := uuid.New()
	traced, old, plain := newProduct(t, seller, eur(t, 100)), newProduct(t, seller, eur(t, 200)), newProduct(t, seller, eur(t, 300))
	traced.event.TraceParent = tp
	first, again := traced.message(t, 1), traced.message(t, 2)
	first.Attributes[tracing.SQSAttribute] = sent
	again.Attributes[tracing.SQSAttribute] = sent
	again.MessageId = "m-again"
	oldMsg := old.message(t, 1) // an event from before the trace context: the header alone
	oldMsg.Attributes[tracing.SQSAttribute] = other
	plainMsg := plain.message(t, 1)
	poison := plain.message(t, 1)
	poison.MessageId, poison.Body = "m-poison", `{"not":"an event"}`
	poison.Attributes[tracing.SQSAttribute] = other
	resp := f.handle(t, first, again, oldMsg, plainMsg, poison)
	assert.Equal(t, []string{"m-poison"}, failedIDs(resp))

	type line struct {
		Msg, MessageID, EventID, Outcome, TraceID string
	}
	byMessage := map[string][]line{}
	for _, l := range f.logs.Logs() {
		var raw map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &raw), l)
		id, ok := raw["message_id"].(string)
		if !ok {
			continue // the batch's summary line
		}
		assert.NotContains(t, raw, "trace_header", "the header is the propagator's, not the log's")
		s := func(k string) string { v, _ := raw[k].(string); return v }
		byMessage[id] = append(byMessage[id], line{s("msg"), id, s("event_id"), s("outcome"), s("trace_id")})
	}
	assert.Equal(t, map[string][]line{
		first.MessageId:    {{"event counted", first.MessageId, traced.event.ID, "executed", "1-5759e988-bd862e3fe1be46a994272793"}},
		"m-again":          {{"duplicate event acknowledged", "m-again", traced.event.ID, "replayed", "1-5759e988-bd862e3fe1be46a994272793"}},
		oldMsg.MessageId:   {{"event counted", oldMsg.MessageId, old.event.ID, "executed", "1-5759e989-0123456789abcdef01234567"}},
		plainMsg.MessageId: {{"event counted", plainMsg.MessageId, plain.event.ID, "executed", ""}},
		"m-poison": {{"poison message: it will reach the dead-letter queue", "m-poison", "", "rejected",
			"1-5759e989-0123456789abcdef01234567"}},
	}, byMessage)
}

// TestBatchSpanLinksEachProducer: a batch is one consumer span under the
// trace Lambda began the invocation in, linked to each message's
// producer (the CloudEvent's traceparent, else the AWSTraceHeader; a
// message with neither has no link), with the messaging conventions'
// attributes and the batch's counts; its DynamoDB work and each failed
// message are under it.
func TestBatchSpanLinksEachProducer(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFixture(t)
	f.tracing = tracing.New(tp, nil)
	f.consumer = f.newConsumer(t, 0)
	const (
		tp1    = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
		header = "Root=1-5759e989-0123456789abcdef01234567;Parent=0000000000000001;Sampled=1"
		lambda = "Root=1-6759e988-0123456789abcdef01234567;Parent=0a0b0c0d0e0f0102;Sampled=1"
	)
	seller := uuid.New()
	traced, old, plain := newProduct(t, seller, eur(t, 100)), newProduct(t, seller, eur(t, 200)), newProduct(t, seller, eur(t, 300))
	traced.event.TraceParent = tp1
	m1, m2, m3 := traced.message(t, 1), old.message(t, 1), plain.message(t, 1)
	m1.Attributes[tracing.SQSAttribute] = header // the CloudEvent's context wins
	m2.Attributes[tracing.SQSAttribute] = header
	poison := plain.message(t, 1)
	poison.MessageId, poison.Body = "m-poison", `{"not":"an event"}`
	for _, m := range []*events.SQSMessage{&m1, &m2, &m3, &poison} {
		m.EventSourceARN = "arn:aws:sqs:us-east-1:123456789012:stack-SellerStatsQueue-1"
	}
	_, err := f.consumer.Handle(tracing.NewContext(context.Background(), lambda), events.SQSEvent{Records: []events.SQSMessage{m1, m2, m3, poison}})
	require.NoError(t, err)

	var batch sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "process stack-SellerStatsQueue-1" {
			batch = s
		}
	}
	require.NotNil(t, batch, "spans: %v", rec.Ended())
	assert.Equal(t, trace.SpanKindConsumer, batch.SpanKind())
	assert.Equal(t, "6759e9880123456789abcdef01234567", batch.SpanContext().TraceID().String(), "Lambda's trace")
	assert.Equal(t, "0a0b0c0d0e0f0102", batch.Parent().SpanID().String())
	links := map[string]string{} // message id -> linked trace id/span id
	for _, l := range batch.Links() {
		require.Len(t, l.Attributes, 1)
		assert.Equal(t, "messaging.message.id", string(l.Attributes[0].Key))
		links[l.Attributes[0].Value.AsString()] = l.SpanContext.TraceID().String() + "/" + l.SpanContext.SpanID().String()
	}
	assert.Equal(t, map[string]string{
		m1.MessageId: "5759e988bd862e3fe1be46a994272793/53995c3f42cd8ad8",
		m2.MessageId: "5759e9890123456789abcdef01234567/0000000000000001",
	}, links, "one link per message with a producer; the plain one and the poison have none")
	a := map[string]attribute.Value{}
	for _, kv := range batch.Attributes() {
		a[string(kv.Key)] = kv.Value
	}
	assert.Equal(t, "aws_sqs", a["messaging.system"].AsString())
	assert.Equal(t, "process", a["messaging.operation.type"].AsString())
	assert.Equal(t, "stack-SellerStatsQueue-1", a["messaging.destination.name"].AsString())
	assert.Equal(t, int64(4), a["messaging.batch.message_count"].AsInt64())
	assert.Equal(t, int64(3), a["idemlambda.consumer.applied"].AsInt64())
	assert.Equal(t, int64(1), a["idemlambda.consumer.poison"].AsInt64())
	assert.Equal(t, codes.Error, batch.Status().Code)
	require.Len(t, batch.Events(), 1)
	assert.Equal(t, "poison message", batch.Events()[0].Name)
}

// TestTheTraceIsNotPartOfTheEvent: an event counted as it was relayed
// before the trace context (none on the CloudEvent), then redelivered
// with one, with another, with a malformed one and another
// AWSTraceHeader, is the same event each time: a duplicate acknowledged,
// never key reuse or poison, and counted once.
func TestTheTraceIsNotPartOfTheEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seller := uuid.New()
	p := newProduct(t, seller, eur(t, 100))
	first := p.delivery(t, 1)
	require.Empty(t, failedIDs(f.handle(t, first)))

	for n, tc := range []struct{ traceparent, tracestate, header string }{
		{"00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", "k=v", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0102030405060708;Sampled=1"},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", "", ""},
		{"00-xyz-53995c3f42cd8ad8-01", "not a tracestate", "Root=garbage"},
	} {
		again := p
		again.event.TraceParent, again.event.TraceState = tc.traceparent, tc.tracestate
		m := again.delivery(t, n+2)
		if tc.header != "" {
			m.Attributes[tracing.SQSAttribute] = tc.header
		}
		assert.Empty(t, failedIDs(f.handle(t, m)), "delivery %d", n+2)
	}
	got, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(1), got.ProductCount)
	_, sum := f.batchTotals(t)
	assert.Equal(t, map[string]float64{"Records": 4, "Applied": 1, "Duplicate": 3, "Poison": 0, "Failed": 0}, map[string]float64{
		"Records": sum["Records"], "Applied": sum["Applied"], "Duplicate": sum["Duplicate"], "Poison": sum["Poison"], "Failed": sum["Failed"]})
}
