package bridge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
)

func newEvent(t testing.TB, i int, data string) outbox.Event {
	t.Helper()
	at := time.Date(2026, 11, 29, 12, 0, i, 0, time.UTC)
	e, err := outbox.NewEvent("idemlambda.products", "ProductCreated", fmt.Sprintf("p-%03d", i), []byte(data), at)
	require.NoError(t, err)
	return e
}

func newEvents(t testing.TB, n int) []outbox.Event {
	t.Helper()
	out := make([]outbox.Event, n)
	for i := range out {
		out[i] = newEvent(t, i, fmt.Sprintf(`{"n":%d}`, i))
	}
	return out
}

func newPublisher(t testing.TB, bus *outboxtest.Bus) *bridge.Publisher {
	t.Helper()
	p, err := bridge.New(bus, bridge.Config{Bus: "products-bus", Source: "idemlambda.products"})
	require.NoError(t, err)
	return p
}

// detailIDs lists the CloudEvent id of every entry sent, in call order.
func detailIDs(t *testing.T, calls [][]ebtypes.PutEventsRequestEntry) []string {
	t.Helper()
	var ids []string
	for _, c := range calls {
		for _, e := range c {
			var ce outbox.Event
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(e.Detail)), &ce))
			ids = append(ids, ce.ID)
		}
	}
	return ids
}

func eventIDs(events []outbox.Event) []string {
	var ids []string
	for _, e := range events {
		ids = append(ids, e.ID)
	}
	return ids
}

func TestEntrySizeFollowsAWSRules(t *testing.T) {
	t.Parallel()
	at := time.Now()
	entry := ebtypes.PutEventsRequestEntry{
		Source:       aws.String("src"),           // 3
		DetailType:   aws.String("Prix€"),         // 4 + 3 (€ is 3 bytes in UTF-8)
		Detail:       aws.String(`{"a":"ü"}`),     // 10 (ü is 2 bytes)
		Resources:    []string{"arn:x", "arn:yy"}, // 5 + 6
		EventBusName: aws.String("not-counted"),   // 0
		TraceHeader:  aws.String("not-counted"),   // 0
		Time:         &at,                         // 14
	}
	assert.Equal(t, 3+7+10+11+14, bridge.EntrySize(entry))
	entry.Time, entry.Resources, entry.Detail = nil, nil, nil
	assert.Equal(t, 3+7, bridge.EntrySize(entry))
}

func TestEventBridgeEntryCarriesTheCloudEvent(t *testing.T) {
	t.Parallel()
	bus := &outboxtest.Bus{}
	e := newEvent(t, 7, `{"id":"p-007","name":"Widget"}`)
	res, err := newPublisher(t, bus).Publish(t.Context(), []outbox.Event{e})
	require.NoError(t, err)
	assert.Equal(t, outbox.Result{Published: 1}, res)
	calls := bus.Calls()
	require.Len(t, calls, 1)
	require.Len(t, calls[0], 1)
	got := calls[0][0]
	assert.Equal(t, "idemlambda.products", aws.ToString(got.Source))
	assert.Equal(t, "ProductCreated", aws.ToString(got.DetailType))
	assert.Equal(t, "products-bus", aws.ToString(got.EventBusName))
	require.NotNil(t, got.Time)
	assert.True(t, e.Time.Equal(*got.Time))
	want, err := json.Marshal(e)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), aws.ToString(got.Detail))
}

func TestEventBridgeCallsHoldAtMostTenEntries(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 9, 10, 11, 20, 100, 101} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			bus := &outboxtest.Bus{}
			events := newEvents(t, n)
			res, err := newPublisher(t, bus).Publish(t.Context(), events)
			require.NoError(t, err)
			assert.Equal(t, n, res.Published)
			assert.Empty(t, res.Rejected)
			calls := bus.Calls()
			assert.Len(t, calls, (n+9)/10)
			for _, c := range calls {
				assert.LessOrEqual(t, len(c), bridge.MaxEntriesPerCall)
			}
			assert.Equal(t, eventIDs(events), detailIDs(t, calls), "order")
		})
	}
}

func TestEventBridgeCallsRespectTheSizeLimit(t *testing.T) {
	t.Parallel()
	bus := &outboxtest.Bus{}
	// 10 events of about 40 KiB: 400 KiB in all, too much for one call.
	big := `{"blob":"` + strings.Repeat("x", 40*1024) + `"}`
	events := make([]outbox.Event, 10)
	for i := range events {
		events[i] = newEvent(t, i, big)
	}
	res, err := newPublisher(t, bus).Publish(t.Context(), events)
	require.NoError(t, err)
	assert.Equal(t, 10, res.Published)
	calls := bus.Calls()
	assert.Len(t, calls, 2, "6 entries of ~40 KiB fit in 256 KiB, 7 do not")
	for _, c := range calls {
		total := 0
		for _, e := range c {
			total += bridge.EntrySize(e)
		}
		assert.LessOrEqual(t, total, bridge.DefaultMaxRequestBytes)
	}
	assert.Equal(t, eventIDs(events), detailIDs(t, calls), "order")
}

func TestEventBridgeRejectsAnEventTooLargeForACall(t *testing.T) {
	t.Parallel()
	bus := &outboxtest.Bus{}
	events := newEvents(t, 5)
	events[2] = newEvent(t, 2, `{"blob":"`+strings.Repeat("x", bridge.DefaultMaxRequestBytes)+`"}`)
	res, err := newPublisher(t, bus).Publish(t.Context(), events)
	require.NoError(t, err)
	assert.Equal(t, 4, res.Published)
	require.Len(t, res.Rejected, 1)
	assert.Equal(t, 2, res.Rejected[0].Index)
	assert.ErrorIs(t, res.Rejected[0].Err, outbox.ErrTooLarge)
	assert.Equal(t, eventIDs(slices.Delete(slices.Clone(events), 2, 3)), detailIDs(t, bus.Calls()))
}

func TestEventBridgeMaxRequestBytesIsConfigurable(t *testing.T) {
	t.Parallel()
	bus := &outboxtest.Bus{}
	p, err := bridge.New(bus, bridge.Config{Bus: "b", Source: "s", MaxRequestBytes: 1 << 20})
	require.NoError(t, err)
	e := newEvent(t, 0, `{"blob":"`+strings.Repeat("x", 300*1024)+`"}`) // over 256 KiB, under 1 MiB
	res, err := p.Publish(t.Context(), []outbox.Event{e})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Published)
	assert.Empty(t, res.Rejected)
}

func TestEventBridgeStopsAtAFailedEntry(t *testing.T) {
	t.Parallel()
	for _, k := range []int{0, 3, 9, 10, 15, 24} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			t.Parallel()
			bus := &outboxtest.Bus{Respond: outboxtest.FailEntry(k/10, k%10, "InternalFailure")}
			events := newEvents(t, 25)
			res, err := newPublisher(t, bus).Publish(t.Context(), events)
			pe, ok := errors.AsType[*outbox.PublishError](err)
			require.True(t, ok, "error %v is a *PublishError", err)
			assert.Equal(t, k, pe.Index)
			assert.ErrorIs(t, err, outbox.ErrEntryFailed)
			assert.NotErrorIs(t, err, outbox.ErrCallFailed)
			assert.Equal(t, k, res.Published)
			assert.Len(t, bus.Calls(), k/10+1, "no call after the failed one")
		})
	}
}

func TestEventBridgeStopsAtAFailedCall(t *testing.T) {
	t.Parallel()
	cause := errors.New("throttled")
	bus := &outboxtest.Bus{Respond: func(call int, entries []ebtypes.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error) {
		if call == 1 {
			return nil, cause
		}
		return outboxtest.Accepted(len(entries)), nil
	}}
	res, err := newPublisher(t, bus).Publish(t.Context(), newEvents(t, 25))
	pe, ok := errors.AsType[*outbox.PublishError](err)
	require.True(t, ok)
	assert.Equal(t, 10, pe.Index, "the first event of the failed call")
	assert.ErrorIs(t, err, outbox.ErrCallFailed)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, 10, res.Published)
	assert.Len(t, bus.Calls(), 2)
}

func TestEventBridgeDistrustsAnUnaccountedResponse(t *testing.T) {
	t.Parallel()
	for name, out := range map[string]*eventbridge.PutEventsOutput{
		"count without codes": {FailedEntryCount: 1, Entries: make([]ebtypes.PutEventsResultEntry, 10)},
		"too few results":     {Entries: make([]ebtypes.PutEventsResultEntry, 3)},
	} {
		bus := &outboxtest.Bus{Respond: func(call int, entries []ebtypes.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error) {
			if call == 1 {
				return out, nil
			}
			return outboxtest.Accepted(len(entries)), nil
		}}
		_, err := newPublisher(t, bus).Publish(t.Context(), newEvents(t, 20))
		pe, ok := errors.AsType[*outbox.PublishError](err)
		require.True(t, ok, name)
		assert.Equal(t, 10, pe.Index, name)
		assert.ErrorIs(t, err, outbox.ErrEntryFailed, name)
	}
}

func TestEventBridgeKeepsOnlyRejectionsBeforeTheStop(t *testing.T) {
	t.Parallel()
	bus := &outboxtest.Bus{Respond: outboxtest.FailEntry(0, 1, "InternalFailure")}
	events := newEvents(t, 6)
	tooBig := `{"blob":"` + strings.Repeat("x", bridge.DefaultMaxRequestBytes) + `"}`
	events[0] = newEvent(t, 0, tooBig) // rejected before the stop: kept
	events[4] = newEvent(t, 4, tooBig) // rejected after it: decided again on retry
	res, err := newPublisher(t, bus).Publish(t.Context(), events)
	pe, ok := errors.AsType[*outbox.PublishError](err)
	require.True(t, ok)
	assert.Equal(t, 2, pe.Index, "entry 1 of the call is event 2")
	require.Len(t, res.Rejected, 1)
	assert.Equal(t, 0, res.Rejected[0].Index)
	assert.Equal(t, 1, res.Published)
}

func TestNewEventBridgePublisherValidates(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]bridge.Config{
		"no bus":         {Source: "s"},
		"no source":      {Bus: "b"},
		"negative limit": {Bus: "b", Source: "s", MaxRequestBytes: -1},
	} {
		_, err := bridge.New(&outboxtest.Bus{}, cfg)
		assert.Error(t, err, name)
	}
	_, err := bridge.New(nil, bridge.Config{Bus: "b", Source: "s"})
	assert.Error(t, err)
}

// An entry carries the event's X-Ray header as its TraceHeader, and its
// Detail the CloudEvent with the trace context it was created under, as
// the Distributed Tracing extension's attributes; an untraced event has
// neither.
func TestEventBridgeEntryCarriesTheTrace(t *testing.T) {
	t.Parallel()
	const (
		h  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0102030405060708;Sampled=1"
		tp = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
	)
	bus := &outboxtest.Bus{}
	traced, untraced := newEvent(t, 1, `{}`), newEvent(t, 2, `{}`)
	traced.TraceHeader, traced.TraceParent, traced.TraceState = h, tp, "k=v"
	res, err := newPublisher(t, bus).Publish(t.Context(), []outbox.Event{traced, untraced})
	require.NoError(t, err)
	assert.Equal(t, outbox.Result{Published: 2}, res)
	calls := bus.Calls()
	require.Len(t, calls, 1)
	require.Len(t, calls[0], 2)
	assert.Equal(t, h, aws.ToString(calls[0][0].TraceHeader))
	assert.Nil(t, calls[0][1].TraceHeader)
	var detail map[string]any
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(calls[0][0].Detail)), &detail))
	assert.Equal(t, tp, detail["traceparent"])
	assert.Equal(t, "k=v", detail["tracestate"])
	assert.NotContains(t, aws.ToString(calls[0][0].Detail), "Root=", "the X-Ray header is not part of the CloudEvent")
	assert.NotContains(t, aws.ToString(calls[0][1].Detail), "trace")
}
