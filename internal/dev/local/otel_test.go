package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// pipeline is make run's whole event path, every function's spans
// recorded in memory, its PutEvents calls kept by an in-process bus.
type pipeline struct {
	r     *local.Runner
	rec   *tracetest.SpanRecorder
	bus   *outboxtest.Bus
	out   *logbuf.Buffer
	spans func() []sdktrace.ReadOnlySpan
}

func newPipeline(t *testing.T) *pipeline {
	t.Helper()
	p := &pipeline{rec: tracetest.NewSpanRecorder(), bus: &outboxtest.Bus{}, out: &logbuf.Buffer{}}
	pub, err := bridge.New(p.bus, bridge.Config{Bus: "local", Source: "idemlambda.products"})
	require.NoError(t, err)
	p.r = startConfigured(t, pub, p.out, func(c *local.Config) {
		c.SpanProcessors = []sdktrace.SpanProcessor{p.rec}
		c.OutboxRelay.EventBusName = "local"
	})
	p.spans = p.rec.Ended
	return p
}

// postTraced creates a product under the X-Ray header Lambda would give
// the invocation and returns its id.
func (p *pipeline) postTraced(t *testing.T, key, header, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.r.APIURL+"/products", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	req.Header.Set(tracing.HTTPHeader, header)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var created struct{ ID string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	return created.ID
}

func (p *pipeline) waitCounted(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return p.r.RelayIdle() && len(logsWith(t, p.out, "event counted")) == n },
		time.Minute, 10*time.Millisecond)
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestOneProductIsOneTrace follows one product through POST, the relay
// and the consumer: the request's server span continues the trace Lambda
// began, the event is created under it, the relay sends it in the same
// trace (its PutEvents TraceHeader naming the send span), and the
// consumer's batch span, in a trace of its own, links the event's create
// span; every log line on the way names the trace.
func TestOneProductIsOneTrace(t *testing.T) {
	t.Parallel()
	p := newPipeline(t)
	const (
		header  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		traceID = "5759e988bd862e3fe1be46a994272793"
	)
	id := p.postTraced(t, "one-trace", header, widget)
	p.waitCounted(t, 1)

	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range p.spans() {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	one := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		require.Len(t, byName[name], 1, "%s in %v", name, byName)
		return byName[name][0]
	}
	server, create, send, batch := one("POST /products"), one("create ProductCreated"), one("send local"), one("process sellerstats")
	for _, s := range []sdktrace.ReadOnlySpan{server, create, send} {
		assert.Equal(t, traceID, s.SpanContext().TraceID().String(), "%s is in the POST's trace", s.Name())
	}
	assert.Equal(t, "53995c3f42cd8ad8", server.Parent().SpanID().String(), "the request continues Lambda's segment")
	assert.Equal(t, create.SpanContext().SpanID(), send.Parent().SpanID(), "sent in the trace it was created in")
	assert.Equal(t, id, attr(create, "cloudevents.event_subject"))
	assert.Equal(t, attr(create, "messaging.message.id"), attr(send, "messaging.message.id"))
	// The idempotency phases (pkg/idem/idemotel) are the request's
	// children, and the createproduct function's DynamoDB calls run in
	// them: the claim's PutItem and the commit's transaction.
	execute := one("idem.execute")
	assert.Equal(t, server.SpanContext().SpanID(), execute.Parent().SpanID())
	assert.Equal(t, "executed", attr(execute, "idem.outcome"))
	claim, effect, commit := one("idem.claim"), one("idem.effect"), one("idem.commit")
	assert.Equal(t, effect.SpanContext().SpanID(), create.Parent().SpanID(), "the event is created by the effect")
	for _, phase := range []sdktrace.ReadOnlySpan{claim, effect, commit} {
		assert.Equal(t, execute.SpanContext().SpanID(), phase.Parent().SpanID(), phase.Name())
	}
	calls := map[string]string{}
	for _, s := range p.spans() {
		if strings.HasPrefix(s.Name(), "DynamoDB.") && s.SpanContext().TraceID().String() == traceID {
			calls[s.Name()] = s.Parent().SpanID().String()
		}
	}
	assert.Equal(t, map[string]string{
		"DynamoDB.PutItem":            claim.SpanContext().SpanID().String(),
		"DynamoDB.TransactWriteItems": commit.SpanContext().SpanID().String(),
	}, calls, "reserve mode: the claim and the commit, each in its phase's span")

	// The relay's PutEvents entry: the send span's X-Ray header, and the
	// CloudEvent with the create span's context.
	entries := p.bus.Calls()
	require.Len(t, entries, 1)
	entry := entries[0][0]
	assert.Equal(t, tracing.XRayHeader(trace.ContextWithSpanContext(context.Background(), send.SpanContext())), aws.ToString(entry.TraceHeader))
	var ce outbox.Event
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(entry.Detail)), &ce))
	assert.Equal(t, create.SpanContext().SpanID(), tracing.SpanContext(ce.TraceParent, ce.TraceState).SpanID())

	// The consumer: its batch links the create span, naming the message.
	assert.NotEqual(t, traceID, batch.SpanContext().TraceID().String(), "a batch is a trace of its own")
	require.Len(t, batch.Links(), 1)
	assert.Equal(t, create.SpanContext().TraceID(), batch.Links()[0].SpanContext.TraceID())
	assert.Equal(t, create.SpanContext().SpanID(), batch.Links()[0].SpanContext.SpanID())
	assert.Equal(t, "1", attr(batch, "messaging.batch.message_count"))
	assert.Equal(t, "1", attr(batch, "idemlambda.consumer.applied"))

	for _, msg := range []string{"create product", "outbox event published", "event counted"} {
		ls := logsWith(t, p.out, msg)
		require.Len(t, ls, 1, msg)
		assert.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", ls[0]["trace_id"], msg)
	}
	// The batches' summary lines name their own traces, which link it.
	for msg, span := range map[string]sdktrace.ReadOnlySpan{"outbox relay batch": one("process outbox"), "seller stats batch": batch} {
		ls := logsWith(t, p.out, msg)
		require.Len(t, ls, 1, msg)
		assert.Equal(t, tracing.XRayTraceID(span.SpanContext().TraceID()), ls[0]["trace_id"], msg)
	}
}

// TestConcurrentRequestsKeepTheirTraces: products created at once, each
// under its own trace, are each followed in their own trace through the
// relay and the consumer, whatever the batches that mixed them: a trace
// context is per invocation (its context), never the process's.
func TestConcurrentRequestsKeepTheirTraces(t *testing.T) {
	t.Parallel()
	p := newPipeline(t)
	const n = 32
	traces := make(map[string]string, n) // product id -> trace id
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			traceID := fmt.Sprintf("5759e988%024x", i+1)
			header := fmt.Sprintf("Root=1-5759e988-%024x;Parent=%016x;Sampled=1", i+1, i+1)
			body := strings.Replace(widget, "Widget", fmt.Sprintf("W%d", i), 1)
			id := p.postTraced(t, fmt.Sprintf("concurrent-%d", i), header, body)
			mu.Lock()
			traces[id] = traceID
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Len(t, traces, n)
	p.waitCounted(t, n)

	creates := map[string]sdktrace.ReadOnlySpan{} // by span id
	linked := 0
	for _, s := range p.spans() {
		switch s.Name() {
		case "create ProductCreated":
			assert.Equal(t, traces[attr(s, "cloudevents.event_subject")], s.SpanContext().TraceID().String(), "product %s", attr(s, "cloudevents.event_subject"))
			creates[s.SpanContext().SpanID().String()] = s
		case "send local":
			assert.Equal(t, traces[attr(s, "cloudevents.event_subject")], s.SpanContext().TraceID().String(), "product %s", attr(s, "cloudevents.event_subject"))
		}
	}
	require.Len(t, creates, n)
	for _, s := range p.spans() {
		if s.Name() != "process sellerstats" {
			continue
		}
		for _, l := range s.Links() {
			c, ok := creates[l.SpanContext.SpanID().String()]
			require.True(t, ok, "a link to a create span")
			assert.Equal(t, c.SpanContext().TraceID(), l.SpanContext.TraceID())
			linked++
		}
	}
	assert.Equal(t, n, linked, "one link per message")
	for _, l := range logsWith(t, p.out, "event counted") {
		assert.Contains(t, traceIDs(traces), l["trace_id"])
	}
}

func traceIDs(byProduct map[string]string) []string {
	var out []string
	for _, id := range byProduct {
		out = append(out, "1-"+id[:8]+"-"+id[8:])
	}
	return out
}

// TestOldEventsStillRelayAndCount: outbox items written before the trace
// context (none at all, or the X-Ray header of the first version) are
// relayed and counted like any other. One with an X-Ray header continues
// that trace; one with nothing is sent in the relay batch's trace, which
// the consumer then links.
func TestOldEventsStillRelayAndCount(t *testing.T) {
	t.Parallel()
	p := newPipeline(t)
	seller := uuid.New()
	eur, err := money.New(250, "EUR")
	require.NoError(t, err)
	_, untraced := outboxtest.ProductCreated(t, "idemlambda.products", seller, eur)
	_, legacy := outboxtest.ProductCreated(t, "idemlambda.products", seller, eur)
	const legacyHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	for _, e := range []outbox.Event{untraced, legacy} {
		item, err := outboxitem.Encode(e, outbox.DefaultRetention)
		require.NoError(t, err)
		require.NotContains(t, item, outbox.AttrTraceParent)
		if e.ID == legacy.ID {
			item[outbox.AttrTraceHeader] = &types.AttributeValueMemberS{Value: legacyHeader}
		}
		_, err = p.r.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("outbox"), Item: item})
		require.NoError(t, err)
	}
	p.waitCounted(t, 2)

	resp, err := http.Get(p.r.APIURL + "/sellers/" + seller.String())
	require.NoError(t, err)
	defer resp.Body.Close()
	var stats struct {
		ProductCount int `json:"product_count"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&stats))
	assert.Equal(t, 2, stats.ProductCount, "both counted")

	sends := map[string]sdktrace.ReadOnlySpan{}
	var relayBatches []sdktrace.ReadOnlySpan
	for _, s := range p.spans() {
		switch s.Name() {
		case "send local":
			sends[attr(s, "cloudevents.event_id")] = s
		case "process outbox":
			relayBatches = append(relayBatches, s)
		}
	}
	require.Len(t, sends, 2)
	assert.Equal(t, "5759e988bd862e3fe1be46a994272793", sends[legacy.ID].SpanContext().TraceID().String(), "the X-Ray header's trace goes on")
	assert.Equal(t, "53995c3f42cd8ad8", sends[legacy.ID].Parent().SpanID().String())
	var parentIsABatch bool
	for _, b := range relayBatches {
		parentIsABatch = parentIsABatch || b.SpanContext().SpanID() == sends[untraced.ID].Parent().SpanID()
	}
	assert.True(t, parentIsABatch, "an event without a trace is sent in the relay batch's")

	published := map[string]outbox.Event{}
	for _, call := range p.bus.Calls() {
		for _, e := range call {
			var ce outbox.Event
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(e.Detail)), &ce))
			published[ce.ID] = ce
		}
	}
	assert.Empty(t, published[untraced.ID].TraceParent, "nothing to carry")
	assert.Equal(t, "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", published[legacy.ID].TraceParent)

	lines := map[string]map[string]any{}
	for _, l := range logsWith(t, p.out, "event counted") {
		lines[l["event_id"].(string)] = l
	}
	assert.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", lines[legacy.ID]["trace_id"])
	assert.Equal(t, tracing.XRayTraceID(sends[untraced.ID].SpanContext().TraceID()), lines[untraced.ID]["trace_id"],
		"without a traceparent, the consumer reads the AWSTraceHeader: the relay's trace")
}
