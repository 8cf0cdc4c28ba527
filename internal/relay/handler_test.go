package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/streams"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
)

const (
	testBus    = "products-bus"
	testSource = "idemlambda.products"
	// testRegion is where the harness's relay runs.
	testRegion = "us-east-1"
)

// sentIDs lists the CloudEvent ids the bus received, in order.
func sentIDs(t *testing.T, b *outboxtest.Bus) []string {
	t.Helper()
	var ids []string
	for _, c := range b.Calls() {
		for _, e := range c {
			var ce outbox.Event
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(e.Detail)), &ce))
			ids = append(ids, ce.ID)
		}
	}
	return ids
}

// harness is a Handler publishing to an outboxtest.Bus through the real
// EventBridge publisher, writing its JSON log and its metrics lines into
// one buffer, as it does to stdout in Lambda.
type harness struct {
	bus *outboxtest.Bus
	log *logbuf.Buffer
	h   *Handler
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	bus := &outboxtest.Bus{}
	pub, err := bridge.New(bus, bridge.Config{Bus: testBus, Source: testSource})
	require.NoError(t, err)
	buf := &logbuf.Buffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() { buf.Metrics(t) }) // every line meets the EMF specification
	return &harness{bus: bus, log: buf, h: NewHandler(pub, log, recorder(t, buf), nil, "bus", testRegion)}
}

func recorder(t testing.TB, w io.Writer) *metrics.Recorder {
	t.Helper()
	rec, err := metrics.New(w, "idemlambda/test", "outboxrelay")
	require.NoError(t, err)
	return rec
}

// lines parses the captured log, one JSON object per line.
func (h *harness) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(h.log.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		out = append(out, m)
	}
	return out
}

func (h *harness) linesWithMsg(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range h.lines(t) {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// outcome returns the counts of the batch's outcome line, after checking
// that the batch's one metrics line says the same.
func (h *harness) outcome(t *testing.T) map[string]any {
	t.Helper()
	ls := h.linesWithMsg(t, "outbox relay batch")
	require.Len(t, ls, 1, "one outcome line per batch")
	ms := h.log.Metrics(t)
	require.Len(t, ms, 1, "one metrics line per batch")
	m, l := ms[0], ls[0]
	assert.Equal(t, "outboxrelay", m["Function"])
	assert.Equal(t, l["records"], m["Records"])
	assert.Equal(t, l["published"], m["Published"])
	assert.Equal(t, l["failed"], m["Failed"])
	assert.Equal(t, l["undecodable"], m["Dropped"], "what can never be published is dropped")
	assert.Equal(t, l["replicas"], m["Replicas"])
	return l
}

func seqOf(i int) string { return fmt.Sprintf("%021d", 4000+i) }

func newEvent(t testing.TB, i int, data string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent(testSource, "ProductCreated", fmt.Sprintf("p-%03d", i%7),
		[]byte(data), time.Date(2026, 11, 29, 12, 0, 0, i, time.UTC))
	require.NoError(t, err)
	return e
}

// insert is the stream record Lambda delivers for writing e to the outbox.
func insert(t testing.TB, e outbox.Event, seq string) events.DynamoDBEventRecord {
	t.Helper()
	item, err := outboxitem.Encode(e, outbox.DefaultRetention)
	require.NoError(t, err)
	image, err := streams.Image(item)
	require.NoError(t, err)
	return events.DynamoDBEventRecord{
		EventID: "eventid-" + seq, EventName: "INSERT", EventSource: "aws:dynamodb", AWSRegion: "us-east-1",
		Change: events.DynamoDBStreamRecord{
			Keys: map[string]events.DynamoDBAttributeValue{
				"aggregate_id": image["aggregate_id"], "event_id": image["event_id"],
			},
			NewImage: image, SequenceNumber: seq, StreamViewType: "NEW_IMAGE",
		},
	}
}

// batch returns n INSERT records and their events.
func batch(t testing.TB, n int) (events.DynamoDBEvent, []outbox.Event) {
	t.Helper()
	var ev events.DynamoDBEvent
	var es []outbox.Event
	for i := range n {
		e := newEvent(t, i, fmt.Sprintf(`{"id":"p-%03d","name":"Widget %d","price_cents":999}`, i%7, i))
		es = append(es, e)
		ev.Records = append(ev.Records, insert(t, e, seqOf(i)))
	}
	return ev, es
}

func ids(es []outbox.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestHandlePublishesInCallsOfTen(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 10, 11, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			ev, es := batch(t, n)
			resp, err := h.h.Handle(t.Context(), ev)
			require.NoError(t, err)
			assert.Empty(t, resp.BatchItemFailures)
			assert.Len(t, h.bus.Calls(), (n+9)/10, "ceil(n/10) PutEvents calls")
			assert.Equal(t, ids(es), sentIDs(t, h.bus), "published in the order given")
			out := h.outcome(t)
			assert.EqualValues(t, n, out["published"])
			assert.EqualValues(t, 0, out["failed"])
		})
	}
}

// TestHandlePublishesOnlyItsRegionsEvents: on a global table each
// Region's stream shows the items every Region writes; a relay publishes
// those its own Region wrote, and those that name no Region (written
// before items were stamped), and counts the others as replicas.
func TestHandlePublishesOnlyItsRegionsEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	origins := []string{testRegion, "eu-west-1", "", "us-west-2", testRegion, "eu-west-1", ""}
	var ev events.DynamoDBEvent
	var want []string
	for i, origin := range origins {
		e := newEvent(t, i, `{"id":"x"}`)
		e.Origin = origin
		ev.Records = append(ev.Records, insert(t, e, seqOf(i)))
		if origin == testRegion || origin == "" {
			want = append(want, e.ID)
		}
	}
	resp, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, want, sentIDs(t, h.bus), "its Region's events and the unstamped ones, in order")
	out := h.outcome(t)
	assert.EqualValues(t, 4, out["published"])
	assert.EqualValues(t, 3, out["replicas"])
	skipped := h.linesWithMsg(t, "skipped replicated outbox record")
	require.Len(t, skipped, 3, "one debug line per replica")
	assert.Equal(t, "eu-west-1", skipped[0]["origin"])
	assert.Equal(t, testRegion, skipped[0]["region"])

	// A relay that knows no Region publishes everything, as in one Region.
	all := newHarness(t)
	all.h.region = ""
	_, err = all.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Len(t, sentIDs(t, all.bus), len(origins))
	assert.EqualValues(t, 0, all.outcome(t)["replicas"])
}

func TestHandleEntryFields(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ev, es := batch(t, 1)
	_, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	entry := h.bus.Calls()[0][0]
	assert.Equal(t, testSource, aws.ToString(entry.Source))
	assert.Equal(t, "ProductCreated", aws.ToString(entry.DetailType))
	assert.Equal(t, testBus, aws.ToString(entry.EventBusName))
	require.NotNil(t, entry.Time)
	assert.True(t, es[0].Time.Equal(*entry.Time))
	var ce map[string]any
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(entry.Detail)), &ce))
	assert.Equal(t, "1.0", ce["specversion"])
	assert.Equal(t, es[0].ID, ce["id"])
	assert.Equal(t, es[0].Subject, ce["subject"])
	assert.Equal(t, "Widget 0", ce["data"].(map[string]any)["name"])
}

func TestHandleReportsTheRecordOfAFailedEntry(t *testing.T) {
	t.Parallel()
	const n = 35
	for _, k := range []int{0, 1, 9, 10, 17, 29, 34} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.bus.Respond = outboxtest.FailEntry(k/10, k%10, "ThrottlingException")
			ev, _ := batch(t, n)
			resp, err := h.h.Handle(t.Context(), ev)
			require.NoError(t, err)
			assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: seqOf(k)}}, resp.BatchItemFailures,
				"exactly the sequence number of record k")
			assert.Len(t, h.bus.Calls(), k/10+1, "nothing after the failed call is published")
			out := h.outcome(t)
			assert.EqualValues(t, k, out["published"])
			assert.EqualValues(t, n-k, out["failed"])
			assert.Equal(t, "WARN", out["level"])
		})
	}
}

func TestHandleReportsTheFirstRecordOfAFailedCall(t *testing.T) {
	t.Parallel()
	for _, call := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(call), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.bus.Respond = func(c int, entries []ebtypes.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error) {
				if c == call {
					return nil, errors.New("AccessDenied")
				}
				return &eventbridge.PutEventsOutput{Entries: make([]ebtypes.PutEventsResultEntry, len(entries))}, nil
			}
			ev, _ := batch(t, 25)
			resp, err := h.h.Handle(t.Context(), ev)
			require.NoError(t, err)
			assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: seqOf(call * 10)}}, resp.BatchItemFailures)
			assert.Len(t, h.bus.Calls(), call+1)
			failed := h.linesWithMsg(t, "publish failed; retrying from this record")
			require.Len(t, failed, 1)
			assert.Equal(t, seqOf(call*10), failed[0]["sequence_number"])
			assert.Contains(t, failed[0]["err"], "AccessDenied")
		})
	}
}

func TestHandleSkipsModifyAndRemove(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ev, es := batch(t, 4)
	ev.Records[1].EventName = "REMOVE" // TTL expiry
	ev.Records[1].Change.NewImage = nil
	ev.Records[1].UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	ev.Records[2].EventName = "MODIFY"
	resp, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, []string{es[0].ID, es[3].ID}, sentIDs(t, h.bus))

	skipped := h.linesWithMsg(t, "skipped stream record")
	require.Len(t, skipped, 2)
	assert.Equal(t, "REMOVE", skipped[0]["event_name"])
	assert.Equal(t, seqOf(1), skipped[0]["sequence_number"])
	assert.Equal(t, es[1].ID, skipped[0]["event_id"])
	assert.Equal(t, "MODIFY", skipped[1]["event_name"])
	out := h.outcome(t)
	assert.EqualValues(t, 2, out["published"])
	assert.EqualValues(t, 2, out["skipped"])
}

func TestHandleLogsAndPassesOverUndecodableRecords(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ev, es := batch(t, 5)
	const secret = "Widget 2"
	ev.Records[1].Change.NewImage["payload"] = events.NewStringAttribute(`{"specversion":"0.3"}`)
	ev.Records[2].Change.NewImage["payload"] = events.NewStringAttribute(`{"data":{"name":"` + secret + `"},`)
	ev.Records[3].Change.NewImage["payload"] = events.DynamoDBAttributeValue{} // zero value: would panic if read naively
	resp, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "never retried")
	assert.Equal(t, []string{es[0].ID, es[4].ID}, sentIDs(t, h.bus))

	bad := h.linesWithMsg(t, "undecodable outbox record")
	require.Len(t, bad, 3)
	for i, l := range bad {
		assert.Equal(t, "ERROR", l["level"])
		assert.Equal(t, es[i+1].Subject, l["aggregate_id"])
		assert.Equal(t, es[i+1].ID, l["event_id"])
		assert.Equal(t, seqOf(i+1), l["sequence_number"])
		assert.Contains(t, l["err"], "undecodable")
	}
	assert.NotContains(t, h.log.String(), secret, "event data never reaches the log")
	out := h.outcome(t)
	assert.EqualValues(t, 2, out["published"])
	assert.EqualValues(t, 3, out["undecodable"])
}

func TestHandleMapsFailuresPastSkippedRecords(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ev, _ := batch(t, 6)
	ev.Records[0].EventName = "REMOVE"
	ev.Records[2].Change.NewImage = nil // undecodable
	// Entries sent: records 1, 3, 4, 5; refuse the third, which is record 4.
	h.bus.Respond = outboxtest.FailEntry(0, 2, "ThrottlingException")
	resp, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: seqOf(4)}}, resp.BatchItemFailures)
	out := h.outcome(t)
	assert.EqualValues(t, 2, out["published"])
	assert.EqualValues(t, 2, out["failed"])
	assert.EqualValues(t, 1, out["skipped"])
	assert.EqualValues(t, 1, out["undecodable"])
}

func TestHandleEmptyBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	resp, err := h.h.Handle(t.Context(), events.DynamoDBEvent{})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Empty(t, h.bus.Calls())
	raw, err := json.Marshal(resp)
	require.NoError(t, err)
	assert.JSONEq(t, `{"batchItemFailures":[]}`, string(raw))
}

func TestHandleSplitsCallsAtTheSizeLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var ev events.DynamoDBEvent
	var es []outbox.Event
	for i := range 10 { // 10 x ~50 KiB: fits the count limit, not the size limit
		e := newEvent(t, i, `{"blob":"`+strings.Repeat("y", 50*1024)+`"}`)
		es = append(es, e)
		ev.Records = append(ev.Records, insert(t, e, seqOf(i)))
	}
	resp, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	calls := h.bus.Calls()
	assert.Greater(t, len(calls), 1)
	for _, c := range calls {
		size := 0
		for _, e := range c {
			size += bridge.EntrySize(e)
		}
		assert.LessOrEqual(t, size, bridge.DefaultMaxRequestBytes)
	}
	assert.Equal(t, ids(es), sentIDs(t, h.bus))
}

func TestHandleSkipsAndCountsAnEventTooLargeToPublish(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ev, es := batch(t, 3)
	huge := newEvent(t, 1, `{"blob":"`+strings.Repeat("z", bridge.DefaultMaxRequestBytes)+`"}`)
	ev.Records[1] = insert(t, huge, seqOf(1))
	resp, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "retrying cannot make it fit")
	assert.Equal(t, []string{es[0].ID, es[2].ID}, sentIDs(t, h.bus))
	bad := h.linesWithMsg(t, "unpublishable outbox event")
	require.Len(t, bad, 1)
	assert.Equal(t, huge.ID, bad[0]["event_id"])
	assert.Contains(t, bad[0]["err"], "too large")
	assert.NotContains(t, h.log.String(), "zzzz")
	out := h.outcome(t)
	assert.EqualValues(t, 2, out["published"])
	assert.EqualValues(t, 1, out["undecodable"])
}

func TestHandleWithoutSequenceNumberFailsTheInvocation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.bus.Respond = outboxtest.FailEntry(0, 1, "ThrottlingException")
	ev, _ := batch(t, 3)
	ev.Records[1].Change.SequenceNumber = ""
	resp, err := h.h.Handle(t.Context(), ev)
	require.Error(t, err, "an empty identifier is never reported; the whole batch is retried")
	assert.Empty(t, resp.BatchItemFailures)
	out := h.outcome(t)
	assert.EqualValues(t, 1, out["published"])
	assert.EqualValues(t, 2, out["failed"])
}

// blockingPublisher publishes nothing until ctx ends.
type blockingPublisher struct{}

func (blockingPublisher) Publish(ctx context.Context, _ []outbox.Event) (outbox.Result, error) {
	<-ctx.Done()
	return outbox.Result{}, &outbox.PublishError{Index: 0, Err: fmt.Errorf("%w: %w", outbox.ErrCallFailed, ctx.Err())}
}

func TestHandleAnswersBeforeTheInvocationDeadline(t *testing.T) {
	t.Parallel()
	h := NewHandler(blockingPublisher{}, slog.New(slog.DiscardHandler), recorder(t, io.Discard), nil, "bus", testRegion)
	ev, _ := batch(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.NoError(t, ctx.Err(), "answered with time to spare")
	assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: seqOf(0)}}, resp.BatchItemFailures)
}

func TestHandleRelaysThroughJSONLines(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := NewHandler(outbox.NewJSONLinesPublisher(&out), slog.New(slog.DiscardHandler), recorder(t, io.Discard), nil, "bus", testRegion)
	ev, es := batch(t, 3)
	resp, err := h.Handle(t.Context(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	for i, l := range lines {
		var ce outbox.Event
		require.NoError(t, json.Unmarshal([]byte(l), &ce))
		assert.Equal(t, es[i].ID, ce.ID)
	}
}

// A record passed over after the retry point comes again with the retry:
// it is counted dropped once, when it is passed over for good, not in
// each invocation that saw it.
func TestDroppedCountsEachRecordOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ev, _ := batch(t, 3)
	ev.Records[2].Change.NewImage = nil // undecodable
	h.bus.Respond = outboxtest.FailEntry(0, 1, "ThrottlingException")
	resp, err := h.h.Handle(t.Context(), ev)
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: seqOf(1)}}, resp.BatchItemFailures)

	h.bus.Respond = nil // the mapping retries from record 1
	resp, err = h.h.Handle(t.Context(), events.DynamoDBEvent{Records: ev.Records[1:]})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)

	ms := h.log.Metrics(t)
	require.Len(t, ms, 2)
	assert.EqualValues(t, 0, ms[0]["Dropped"], "record 2 comes again with the retry")
	assert.EqualValues(t, 1, ms[0]["Failed"], "the one event that failed to publish")
	assert.EqualValues(t, 1, ms[1]["Dropped"], "passed over for good in the retry")
	assert.EqualValues(t, 1, ms[1]["Published"])
}
