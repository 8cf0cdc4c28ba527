package sellersqs_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/tracing"
)

// TestEachMessageLogsItsTraceHeader: every message of a batch ends in one
// log line with its messageId, CloudEvent id, outcome and the
// AWSTraceHeader it arrived with, so the consumer's side of one product
// can be found by the trace id of the POST that created it.
func TestEachMessageLogsItsTraceHeader(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const (
		h1 = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		h2 = "Root=1-5759e989-0123456789abcdef01234567;Parent=0000000000000001;Sampled=1"
	)
	seller := uuid.New()
	traced, untraced := newProduct(t, seller, eur(t, 100)), newProduct(t, seller, eur(t, 200))
	first, again, plain := traced.message(t, 1), traced.message(t, 2), untraced.message(t, 1)
	first.Attributes[tracing.SQSAttribute] = h1
	again.Attributes[tracing.SQSAttribute] = h1
	again.MessageId = "m-again"
	poison := untraced.message(t, 1)
	poison.MessageId, poison.Body = "m-poison", `{"not":"an event"}`
	poison.Attributes[tracing.SQSAttribute] = h2
	resp := f.handle(t, first, again, plain, poison)
	assert.Equal(t, []string{"m-poison"}, failedIDs(resp))

	type line struct {
		Msg, MessageID, EventID, Outcome, TraceID, TraceHeader string
	}
	byMessage := map[string][]line{}
	for _, l := range f.logs.Logs() {
		var raw map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &raw), l)
		id, ok := raw["message_id"].(string)
		if !ok {
			continue // the batch's summary line
		}
		s := func(k string) string { v, _ := raw[k].(string); return v }
		byMessage[id] = append(byMessage[id], line{
			s("msg"), id, s("event_id"), s("outcome"), s("trace_id"), s("trace_header"),
		})
	}
	assert.Equal(t, map[string][]line{
		first.MessageId: {{"event counted", first.MessageId, traced.event.ID, "executed", "1-5759e988-bd862e3fe1be46a994272793", h1}},
		"m-again":       {{"duplicate event acknowledged", "m-again", traced.event.ID, "replayed", "1-5759e988-bd862e3fe1be46a994272793", h1}},
		plain.MessageId: {{"event counted", plain.MessageId, untraced.event.ID, "executed", "", ""}},
		"m-poison": {{"poison message: it will reach the dead-letter queue", "m-poison", "", "rejected",
			"1-5759e989-0123456789abcdef01234567", h2}},
	}, byMessage)
}
