package outboxitem_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/streams"
)

// decodeBoth decodes item as the table gives it (Decode) and as its stream
// delivers it to the relay (outbox.DecodeImage of the same item as a
// Lambda stream image), and fails the test unless the two agree: the same
// event, or both undecodable.
func decodeBoth(t *testing.T, item map[string]types.AttributeValue) (outbox.Event, error) {
	t.Helper()
	e, err := outboxitem.Decode(item)
	image, ierr := streams.Image(item)
	require.NoError(t, ierr)
	fromImage, ierr := outbox.DecodeImage(image)
	if err != nil {
		require.ErrorIs(t, err, outbox.ErrUndecodable)
		require.ErrorIs(t, ierr, outbox.ErrUndecodable, "the image of an item Decode refuses (%v)", err)
		return e, err
	}
	require.NoError(t, ierr, "the image of an item Decode reads")
	require.Equal(t, e, fromImage, "the same event from the item and from its image")
	return e, err
}

func TestEventItemRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))
	data := []byte(`{"id":"p1","name":"Widget","price_cents":999}`)
	e, err := outbox.NewEvent("idemlambda.products", "ProductCreated", "p1", data, at)
	require.NoError(t, err)
	id, err := uuid.Parse(e.ID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(7), id.Version())
	assert.Equal(t, time.UTC, e.Time.Location())
	assert.JSONEq(t, string(data), string(e.Data))

	item, err := outboxitem.Encode(e, outbox.DefaultRetention)
	require.NoError(t, err)
	assert.Equal(t, &types.AttributeValueMemberS{Value: "p1"}, item["aggregate_id"])
	assert.Equal(t, &types.AttributeValueMemberS{Value: e.ID}, item["event_id"])
	assert.Equal(t, &types.AttributeValueMemberS{Value: "ProductCreated"}, item["event_type"])
	wantExp := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC).Unix() // 7 days on, in UTC
	assert.Equal(t, &types.AttributeValueMemberN{Value: strconv.FormatInt(wantExp, 10)}, item["expires_at"])

	var envelope map[string]any
	require.NoError(t, json.Unmarshal([]byte(item["payload"].(*types.AttributeValueMemberS).Value), &envelope))
	for _, k := range []string{"specversion", "id", "source", "type", "subject", "time", "datacontenttype", "data"} {
		assert.Contains(t, envelope, k)
	}
	assert.Equal(t, "1.0", envelope["specversion"])

	back, err := decodeBoth(t, item)
	require.NoError(t, err)
	assert.True(t, e.Time.Equal(back.Time))
	back.Time = e.Time
	assert.Equal(t, e, back)

	put, err := outboxitem.Put(e, "outbox-t", outbox.DefaultRetention)
	require.NoError(t, err)
	require.NotNil(t, put.Put)
	assert.Equal(t, "outbox-t", *put.Put.TableName)
}

func TestDecodeRejectsWhatCanNeverPublish(t *testing.T) {
	t.Parallel()
	e, err := outbox.NewEvent("src", "T", "agg", []byte(`{"a":1}`), time.Now())
	require.NoError(t, err)
	good, err := outboxitem.Encode(e, time.Hour)
	require.NoError(t, err)
	mutate := func(f func(map[string]types.AttributeValue)) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{}
		for k, v := range good {
			m[k] = v
		}
		f(m)
		return m
	}
	for name, item := range map[string]map[string]types.AttributeValue{
		"nil":             nil,
		"no payload":      mutate(func(m map[string]types.AttributeValue) { delete(m, "payload") }),
		"payload number":  mutate(func(m map[string]types.AttributeValue) { m["payload"] = &types.AttributeValueMemberN{Value: "1"} }),
		"payload garbage": mutate(func(m map[string]types.AttributeValue) { m["payload"] = &types.AttributeValueMemberS{Value: "{"} }),
		"payload invalid": mutate(func(m map[string]types.AttributeValue) {
			m["payload"] = &types.AttributeValueMemberS{Value: `{"specversion":"0.3"}`}
		}),
		"other aggregate": mutate(func(m map[string]types.AttributeValue) { m["aggregate_id"] = &types.AttributeValueMemberS{Value: "x"} }),
		"other event id":  mutate(func(m map[string]types.AttributeValue) { m["event_id"] = &types.AttributeValueMemberS{Value: "x"} }),
		"no event id":     mutate(func(m map[string]types.AttributeValue) { delete(m, "event_id") }),
	} {
		_, err := decodeBoth(t, item)
		assert.ErrorIs(t, err, outbox.ErrUndecodable, name)
	}
}

// The W3C trace context the event was created under is stored beside the
// CloudEvent, not in the stored envelope, and read back as it was.
func TestItemCarriesTheTraceContextBesideTheCloudEvent(t *testing.T) {
	t.Parallel()
	const (
		tp = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
		ts = "xray=1,vendor=x"
	)
	e, err := outbox.NewEvent("idemlambda.products", "ProductCreated", "p1", []byte(`{}`), time.Now())
	require.NoError(t, err)

	untraced, err := outboxitem.Encode(e, outbox.DefaultRetention)
	require.NoError(t, err)
	assert.NotContains(t, untraced, outbox.AttrTraceParent, "no trace context: no attribute")
	assert.NotContains(t, untraced, outbox.AttrTraceState)

	e.TraceParent, e.TraceState = tp, ts
	item, err := outboxitem.Encode(e, outbox.DefaultRetention)
	require.NoError(t, err)
	assert.Equal(t, &types.AttributeValueMemberS{Value: tp}, item[outbox.AttrTraceParent])
	assert.Equal(t, &types.AttributeValueMemberS{Value: ts}, item[outbox.AttrTraceState])
	assert.NotContains(t, item[outbox.AttrPayload].(*types.AttributeValueMemberS).Value, "trace", "not in the stored envelope")
	assert.Equal(t, untraced[outbox.AttrPayload], item[outbox.AttrPayload], "the stored envelope is the same traced or not")
	back, err := decodeBoth(t, item)
	require.NoError(t, err)
	assert.Equal(t, tp, back.TraceParent)
	assert.Equal(t, ts, back.TraceState)
	assert.Empty(t, back.TraceHeader, "the send header is the relay's, never stored")

	// A trace context of another type, or malformed, costs the trace,
	// never the event.
	for name, bad := range map[string]types.AttributeValue{
		"number":    &types.AttributeValueMemberN{Value: "1"},
		"malformed": &types.AttributeValueMemberS{Value: "00-xyz-53995c3f42cd8ad8-01"},
	} {
		item[outbox.AttrTraceParent] = bad
		back, err = decodeBoth(t, item)
		require.NoError(t, err, name)
		assert.Empty(t, back.TraceParent, name)
		assert.Empty(t, back.TraceState, name)
	}
}

// Items written before the W3C attributes still decode: one with the
// request's X-Ray header (trace_header) continues that trace; one with no
// trace field at all has none.
func TestOldItemsStillDecode(t *testing.T) {
	t.Parallel()
	e, err := outbox.NewEvent("idemlambda.products", "ProductCreated", "p1", []byte(`{"a":1}`), time.Now())
	require.NoError(t, err)
	item, err := outboxitem.Encode(e, outbox.DefaultRetention)
	require.NoError(t, err)
	back, err := decodeBoth(t, item)
	require.NoError(t, err)
	assert.Empty(t, back.TraceParent)

	item[outbox.AttrTraceHeader] = &types.AttributeValueMemberS{Value: "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"}
	back, err = decodeBoth(t, item)
	require.NoError(t, err)
	assert.Equal(t, "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", back.TraceParent)
	assert.Empty(t, back.TraceState)
	assert.Equal(t, e.ID, back.ID)

	item[outbox.AttrTraceHeader] = &types.AttributeValueMemberS{Value: "Root=garbage"}
	back, err = decodeBoth(t, item)
	require.NoError(t, err)
	assert.Empty(t, back.TraceParent)
}

func TestOriginRoundTrips(t *testing.T) {
	t.Parallel()
	e, err := outbox.NewEvent("src", "T", "agg", []byte(`{"a":1}`), time.Now())
	require.NoError(t, err)
	e.Origin = "eu-west-1"
	item, err := outboxitem.Encode(e, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, &types.AttributeValueMemberS{Value: "eu-west-1"}, item[outbox.AttrOrigin])
	back, err := decodeBoth(t, item)
	require.NoError(t, err)
	assert.Equal(t, "eu-west-1", back.Origin)

	e.Origin = "" // a writer that knows no Region stamps none
	item, err = outboxitem.Encode(e, time.Hour)
	require.NoError(t, err)
	assert.NotContains(t, item, outbox.AttrOrigin)
	back, err = decodeBoth(t, item)
	require.NoError(t, err)
	assert.Empty(t, back.Origin)
}
