package relay

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/streams"
)

// TestSampleStreamEvent keeps events/stream-insert.json (the relay's event
// for `make sam-invoke FN=outboxrelay`) an outbox INSERT the relay publishes.
func TestSampleStreamEvent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../events/stream-insert.json")
	require.NoError(t, err)
	var ev events.DynamoDBEvent
	require.NoError(t, json.Unmarshal(b, &ev))
	require.Len(t, ev.Records, 1)
	r := ev.Records[0]
	assert.Equal(t, "INSERT", r.EventName)
	assert.Equal(t, "NEW_IMAGE", r.Change.StreamViewType)
	item, err := streams.Item(r.Change.NewImage)
	require.NoError(t, err)
	want, err := outboxitem.Decode(item)
	require.NoError(t, err)

	h := newHarness(t)
	resp, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	calls := h.bus.Calls()
	require.Len(t, calls, 1)
	require.Len(t, calls[0], 1)
	var got outbox.Event
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(calls[0][0].Detail)), &got))
	assert.Equal(t, want.ID, got.ID)
	assert.Equal(t, "ProductCreated", aws.ToString(calls[0][0].DetailType))
}
