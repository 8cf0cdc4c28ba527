package relay

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
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
