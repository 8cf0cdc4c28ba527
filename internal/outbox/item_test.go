package outbox_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/streamimage"
)

// image is the stream image of e's outbox item, as Lambda delivers it.
func image(t *testing.T, e outbox.Event) map[string]events.DynamoDBAttributeValue {
	t.Helper()
	payload, err := json.Marshal(e)
	require.NoError(t, err)
	return map[string]events.DynamoDBAttributeValue{
		outbox.AttrAggregateID: events.NewStringAttribute(e.Subject),
		outbox.AttrEventID:     events.NewStringAttribute(e.ID),
		outbox.AttrEventType:   events.NewStringAttribute(e.Type),
		outbox.AttrPayload:     events.NewStringAttribute(string(payload)),
		outbox.AttrExpiresAt:   events.NewNumberAttribute("1"),
	}
}

func TestDecodeImage(t *testing.T) {
	t.Parallel()
	e, err := outbox.NewEvent("src", "T", "agg", []byte(`{"a":1}`), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	back, err := outbox.DecodeImage(image(t, e))
	require.NoError(t, err)
	assert.Equal(t, e, back)
}

// What the relay's records carry is checked as the table's items are
// (outboxitem's tests decode every case both ways): a required attribute
// missing or of another type is named, and so is a value with no
// DynamoDB meaning, even in an attribute the decoder does not read.
func TestDecodeImageRejectsWhatCanNeverPublish(t *testing.T) {
	t.Parallel()
	e, err := outbox.NewEvent("src", "T", "agg", []byte(`{"a":1}`), time.Now())
	require.NoError(t, err)
	for name, c := range map[string]struct {
		change func(map[string]events.DynamoDBAttributeValue)
		is     error
		says   string
	}{
		"no payload": {func(m map[string]events.DynamoDBAttributeValue) { delete(m, outbox.AttrPayload) },
			streamimage.ErrInvalid, "missing payload"},
		"payload number": {func(m map[string]events.DynamoDBAttributeValue) {
			m[outbox.AttrPayload] = events.NewNumberAttribute("1")
		},
			streamimage.ErrInvalid, "payload is a number, not a string"},
		"event id null": {func(m map[string]events.DynamoDBAttributeValue) { m[outbox.AttrEventID] = events.NewNullAttribute() },
			streamimage.ErrInvalid, "event_id is null, not a string"},
		"zero value elsewhere": {func(m map[string]events.DynamoDBAttributeValue) { m["extra"] = events.DynamoDBAttributeValue{} },
			streamimage.ErrInvalidValue, "extra: "},
		"zero value nested": {func(m map[string]events.DynamoDBAttributeValue) {
			m["extra"] = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"l": events.NewListAttribute([]events.DynamoDBAttributeValue{{}})})
		}, streamimage.ErrInvalidValue, "extra: l: [0]: "},
	} {
		img := image(t, e)
		c.change(img)
		_, err := outbox.DecodeImage(img)
		require.ErrorIs(t, err, outbox.ErrUndecodable, name)
		assert.ErrorIs(t, err, c.is, name)
		assert.ErrorContains(t, err, c.says, name)
	}
}
