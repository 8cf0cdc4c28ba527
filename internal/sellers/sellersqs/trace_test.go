package sellersqs_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
