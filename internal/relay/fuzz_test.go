package relay

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

// mutateImage rewrites attributes of an image as the fuzz bytes say: each
// pair picks an attribute and what to put there, from absent to the zero
// events.DynamoDBAttributeValue that the events package's own accessors
// panic on.
func mutateImage(image map[string]events.DynamoDBAttributeValue, shape []byte) {
	names := []string{"aggregate_id", "event_id", "payload", "event_type", "occurred_at", "expires_at", "extra"}
	for len(shape) >= 2 {
		name, kind := names[int(shape[0])%len(names)], shape[1]
		shape = shape[2:]
		s := string(shape[:min(len(shape), 8)])
		switch kind % 10 {
		case 0:
			delete(image, name)
		case 1:
			image[name] = events.DynamoDBAttributeValue{}
		case 2:
			image[name] = events.NewNumberAttribute(s)
		case 3:
			image[name] = events.NewBinaryAttribute([]byte(s))
		case 4:
			image[name] = events.NewNullAttribute()
		case 5:
			image[name] = events.NewBooleanAttribute(true)
		case 6:
			image[name] = events.NewListAttribute([]events.DynamoDBAttributeValue{{}, events.NewStringAttribute(s)})
		case 7:
			image[name] = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": events.NewStringSetAttribute(nil)})
		case 8:
			image[name] = events.NewStringAttribute(s)
		default:
			image[name] = events.NewNumberSetAttribute([]string{s})
		}
	}
}

// FuzzDecodeRecord feeds the handler a record with any event name, payload
// and image shape, followed by a valid record. It must never panic, never
// ask for a retry (nothing fails to publish here), and never let a bad
// record hold back the good one after it.
func FuzzDecodeRecord(f *testing.F) {
	valid := newEvent(f, 1, `{"id":"p-001","name":"Widget"}`)
	payload, err := json.Marshal(valid)
	require.NoError(f, err)
	f.Add("INSERT", string(payload), []byte{}, "1")
	f.Add("INSERT", string(payload), []byte{2, 1}, "2")
	f.Add("INSERT", `{"specversion":"1.0"}`, []byte{0, 0, 1, 6}, "3")
	f.Add("INSERT", `{`, []byte{6, 7, 1, 8, 'x'}, "")
	f.Add("REMOVE", "", []byte{2, 0}, "5")
	f.Add("MODIFY", string(payload), []byte{3, 2, '1'}, "6")
	f.Add("INSERT", `{"specversion":"1.0","id":"x","source":"s","type":"T","subject":"p-001","time":"2026-01-01T00:00:00Z","datacontenttype":"application/json","data":null}`, []byte{}, "7")

	f.Fuzz(func(t *testing.T, eventName, payload string, shape []byte, seq string) {
		h := newHarness(t)
		h.h.log = slog.New(slog.DiscardHandler)
		bad := insert(t, valid, seq)
		bad.EventName = eventName
		bad.Change.NewImage["payload"] = events.NewStringAttribute(payload)
		mutateImage(bad.Change.NewImage, shape)
		mutateImage(bad.Change.Keys, shape)
		good := newEvent(t, 2, `{"id":"p-002"}`)
		ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{bad, insert(t, good, "99")}}

		resp, err := h.h.Handle(t.Context(), ev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		sent := sentIDs(t, h.bus)
		require.NotEmpty(t, sent)
		require.Equal(t, good.ID, sent[len(sent)-1], "the valid record after it is published")
		require.LessOrEqual(t, len(sent), 2)
	})
}
