package local_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// TestTraceIDSurvivesEveryHop follows two products through make run's
// whole pipeline by trace id: one POST sends its own X-Amzn-Trace-Id, the
// other gets one from the runner, as Lambda would give it. Each trace id
// must reach, unchanged, the POST's log line, the outbox item's
// traceparent, the relay's PutEvents entry (its TraceHeader and the
// CloudEvent's traceparent) and its log line, the SQS message's
// AWSTraceHeader and the consumer's log line for that event.
func TestTraceIDSurvivesEveryHop(t *testing.T) {
	t.Parallel()
	var out logbuf.Buffer
	bus := &outboxtest.Bus{}
	pub, err := bridge.New(bus, bridge.Config{Bus: "local", Source: "idemlambda.products"})
	require.NoError(t, err)
	r := startWithOut(t, pub, &out)

	const (
		sent   = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		sentID = "1-5759e988-bd862e3fe1be46a994272793"
	)
	products := map[string]string{} // product id -> the trace id its POST ran under
	for _, header := range []string{sent, ""} {
		req, err := http.NewRequest(http.MethodPost, r.APIURL+"/products", strings.NewReader(widget))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", `"trace-`+header+`"`)
		if header != "" {
			req.Header.Set(tracing.HTTPHeader, header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var body struct{ ID string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		products[body.ID] = header
	}
	require.Eventually(t, func() bool { return r.RelayIdle() && len(logsWith(t, &out, "event counted")) == 2 },
		time.Minute, 20*time.Millisecond)

	// Hop 1, the handler: each POST's log line has its trace id; the
	// client's is kept, the other is the runner's own.
	posts := logsWith(t, &out, "create product")
	require.Len(t, posts, 2)
	var generated string
	for _, l := range posts {
		if l["trace_id"] != sentID {
			generated, _ = l["trace_id"].(string)
		}
	}
	require.Regexp(t, `^1-[0-9a-f]{8}-[0-9a-f]{24}$`, generated, "the runner gave the other POST a trace")
	for id, h := range products {
		products[id] = sentID
		if h == "" {
			products[id] = generated
		}
	}
	xrayID := func(header string) string { return tracing.TraceID(tracing.FromXRay(context.Background(), header)) }

	// Hop 2, the outbox item.
	items, err := r.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("outbox"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Len(t, items.Items, 2)
	eventOf := map[string]string{} // event id -> product id
	for _, item := range items.Items {
		product := item[outbox.AttrAggregateID].(*types.AttributeValueMemberS).Value
		eventOf[item[outbox.AttrEventID].(*types.AttributeValueMemberS).Value] = product
		tp, ok := item[outbox.AttrTraceParent].(*types.AttributeValueMemberS)
		require.True(t, ok, "outbox item of %s has a traceparent", product)
		assert.Equal(t, products[product], tracing.XRayTraceID(tracing.SpanContext(tp.Value, "").TraceID()), "outbox item of %s", product)
	}

	// Hop 3, the relay: the PutEvents entry and the relay's line.
	entries := 0
	for _, call := range bus.Calls() {
		for _, e := range call {
			var ce outbox.Event
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(e.Detail)), &ce))
			assert.Equal(t, products[ce.Subject], xrayID(aws.ToString(e.TraceHeader)), "PutEvents entry of %s", ce.Subject)
			assert.Equal(t, products[ce.Subject], tracing.XRayTraceID(tracing.SpanContext(ce.TraceParent, ce.TraceState).TraceID()), "CloudEvent of %s", ce.Subject)
			entries++
		}
	}
	assert.Equal(t, 2, entries)
	relayed := logsWith(t, &out, "outbox event published")
	require.Len(t, relayed, 2)
	for _, l := range relayed {
		assert.Equal(t, products[l[outbox.AttrAggregateID].(string)], l["trace_id"])
	}

	// Hops 4 and 5: the consumer logs the trace id of the event it
	// counted, with the CloudEvent id.
	counted := logsWith(t, &out, "event counted")
	require.Len(t, counted, 2)
	for _, l := range counted {
		id := products[eventOf[l["event_id"].(string)]]
		require.NotEmpty(t, id, "event %v is one of the two", l["event_id"])
		assert.Equal(t, id, l["trace_id"])
		assert.Equal(t, "executed", l["outcome"])
	}
}

// logsWith returns the JSON log lines whose msg is msg.
func logsWith(t *testing.T, out *logbuf.Buffer, msg string) []map[string]any {
	t.Helper()
	var ls []map[string]any
	for _, line := range out.Logs() {
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		if l["msg"] == msg {
			ls = append(ls, l)
		}
	}
	return ls
}
