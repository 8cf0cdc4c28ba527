package relay

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// TestHandleCarriesEachEventsTrace: the trace context stored on the
// outbox item reaches the event's PutEvents entry, as its X-Ray
// TraceHeader and on the CloudEvent, and each event known to be published
// gets a log line with its trace id (here the third entry is refused, so
// only the first two are published and logged).
func TestHandleCarriesEachEventsTrace(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.bus.Respond = outboxtest.FailEntry(0, 2, "ThrottlingException")
	ev, es := batch(t, 0)
	for i := range 4 {
		e := newEvent(t, i, fmt.Sprintf(`{"n":%d}`, i))
		if i != 1 { // event 1: a request without a trace id
			e.TraceParent = fmt.Sprintf("00-5759e988%024x-53995c3f42cd8ad8-01", i)
		}
		es = append(es, e)
		ev.Records = append(ev.Records, insert(t, e, seqOf(i)))
	}
	_, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)

	entries := h.bus.Calls()[0]
	require.Len(t, entries, 4)
	for _, i := range []int{0, 2} {
		assert.Equal(t, fmt.Sprintf("Root=1-5759e988-%024x;Parent=53995c3f42cd8ad8;Sampled=1", i), aws.ToString(entries[i].TraceHeader))
		assert.Contains(t, aws.ToString(entries[i].Detail), `"traceparent":"`+es[i].TraceParent+`"`)
	}
	assert.Nil(t, entries[1].TraceHeader, "no trace context on the item: none on the entry")
	assert.NotContains(t, aws.ToString(entries[1].Detail), "traceparent")

	type published struct{ EventID, TraceID string }
	var got []published
	for _, l := range h.linesWithMsg(t, "outbox event published") {
		s := func(k string) string { v, _ := l[k].(string); return v }
		got = append(got, published{s("event_id"), s("trace_id")})
	}
	assert.Equal(t, []published{
		{es[0].ID, fmt.Sprintf("1-5759e988-%024x", 0)},
		{es[1].ID, ""},
	}, got, "one line per published event, none for the refused one or after it")
}

// TestSpans: the batch is a consumer span under Lambda's trace, with its
// counts; each event is sent in a producer span of the trace it was
// created in (the batch's when it has none), linked to the batch's, whose
// X-Ray header its PutEvents entry carries; what was not published ends
// in error.
func TestSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHarness(t)
	h.h = NewHandler(h.h.publisher, h.h.log, h.h.metrics, tracing.New(tp, nil), testBus, h.h.region)
	h.bus.Respond = outboxtest.FailEntry(0, 2, "ThrottlingException")
	ev, es := batch(t, 0)
	for i := range 4 {
		e := newEvent(t, i, fmt.Sprintf(`{"n":%d}`, i))
		if i != 1 {
			e.TraceParent = fmt.Sprintf("00-5759e988%024x-%016x-01", i, i+1)
		}
		es = append(es, e)
		ev.Records = append(ev.Records, insert(t, e, seqOf(i)))
	}
	ev.Records[0].EventSourceArn = "arn:aws:dynamodb:us-east-1:123456789012:table/stack-OutboxTable-1/stream/2026-01-01T00:00:00.000"
	const lambda = "Root=1-6759e988-0123456789abcdef01234567;Parent=0a0b0c0d0e0f0102;Sampled=1"
	_, err := h.h.Handle(tracing.NewContext(t.Context(), lambda), ev)
	require.NoError(t, err)

	var batchSpan sdktrace.ReadOnlySpan
	sends := map[string]sdktrace.ReadOnlySpan{} // by event id
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "process stack-OutboxTable-1":
			batchSpan = s
		case "send " + testBus:
			for _, kv := range s.Attributes() {
				if kv.Key == "cloudevents.event_id" {
					sends[kv.Value.AsString()] = s
				}
			}
		}
	}
	require.NotNil(t, batchSpan, "spans: %v", rec.Ended())
	assert.Equal(t, trace.SpanKindConsumer, batchSpan.SpanKind())
	assert.Equal(t, "6759e9880123456789abcdef01234567", batchSpan.SpanContext().TraceID().String(), "Lambda's trace")
	assert.Equal(t, codes.Error, batchSpan.Status().Code, "two events not published")
	counts := map[string]int64{}
	for _, kv := range batchSpan.Attributes() {
		counts[string(kv.Key)] = kv.Value.AsInt64()
	}
	assert.Equal(t, int64(4), counts["messaging.batch.message_count"])
	assert.Equal(t, int64(2), counts["idemlambda.relay.published"])
	assert.Equal(t, int64(2), counts["idemlambda.relay.failed"])

	require.Len(t, sends, 4)
	entries := h.bus.Calls()[0]
	for i, e := range es {
		s := sends[e.ID]
		assert.Equal(t, trace.SpanKindProducer, s.SpanKind(), i)
		if i == 1 {
			assert.Equal(t, batchSpan.SpanContext().SpanID(), s.Parent().SpanID(), "an untraced event is sent in the batch's trace")
		} else {
			want := tracing.SpanContext(e.TraceParent, "")
			assert.Equal(t, want.TraceID(), s.SpanContext().TraceID(), "event %d: its own trace", i)
			assert.Equal(t, want.SpanID(), s.Parent().SpanID(), "event %d: a child of its create span", i)
		}
		require.Len(t, s.Links(), 1, i)
		assert.Equal(t, batchSpan.SpanContext().SpanID(), s.Links()[0].SpanContext.SpanID(), "event %d: linked to the batch", i)
		assert.Equal(t, tracing.XRayHeader(trace.ContextWithSpanContext(t.Context(), s.SpanContext())), aws.ToString(entries[i].TraceHeader), i)
		if i < 2 {
			assert.Equal(t, codes.Unset, s.Status().Code, i)
		} else {
			assert.Equal(t, codes.Error, s.Status().Code, "event %d was not published", i)
		}
	}
}
