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
// other gets one from the runner, as Lambda would give it. Each header
// must reach, unchanged, the POST's log line, the outbox item, the relay's
// PutEvents entry and its log line, the SQS message's AWSTraceHeader and
// the consumer's log line for that event.
func TestTraceIDSurvivesEveryHop(t *testing.T) {
	t.Parallel()
	var out logbuf.Buffer
	bus := &outboxtest.Bus{}
	pub, err := bridge.New(bus, bridge.Config{Bus: "local", Source: "idemlambda.products"})
	require.NoError(t, err)
	r := startWithOut(t, pub, &out)

	const sent = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	products := map[string]string{} // product id -> the trace header its POST ran under
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
		10*time.Second, 20*time.Millisecond)

	// Hop 1, the handler: each POST's log line has its trace header; the
	// client's is kept, the other is the runner's own.
	posts := logsWith(t, &out, "create product")
	require.Len(t, posts, 2)
	var generated string
	for _, l := range posts {
		if l["trace_header"] != sent {
			generated, _ = l["trace_header"].(string)
		}
		assert.Equal(t, tracing.TraceID(l["trace_header"].(string)), l["trace_id"])
	}
	require.True(t, tracing.Valid(generated), "the runner gave the other POST a trace header: %q", generated)
	for id, h := range products {
		if h == "" {
			products[id] = generated
		}
	}

	// Hop 2, the outbox item.
	items, err := r.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("outbox"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Len(t, items.Items, 2)
	eventOf := map[string]string{} // event id -> product id
	for _, item := range items.Items {
		product := item[outbox.AttrAggregateID].(*types.AttributeValueMemberS).Value
		eventOf[item[outbox.AttrEventID].(*types.AttributeValueMemberS).Value] = product
		assert.Equal(t, &types.AttributeValueMemberS{Value: products[product]}, item[outbox.AttrTraceHeader], "outbox item of %s", product)
	}

	// Hop 3, the relay: the PutEvents entry and the relay's line.
	entries := 0
	for _, call := range bus.Calls() {
		for _, e := range call {
			var ce outbox.Event
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(e.Detail)), &ce))
			assert.Equal(t, products[ce.Subject], aws.ToString(e.TraceHeader), "PutEvents entry of %s", ce.Subject)
			entries++
		}
	}
	assert.Equal(t, 2, entries)
	relayed := logsWith(t, &out, "outbox event published")
	require.Len(t, relayed, 2)
	for _, l := range relayed {
		h := products[l[outbox.AttrAggregateID].(string)]
		assert.Equal(t, h, l["trace_header"])
		assert.Equal(t, tracing.TraceID(h), l["trace_id"])
	}

	// Hops 4 and 5: the consumer logs the AWSTraceHeader the message
	// arrived with, with the CloudEvent id it counted.
	counted := logsWith(t, &out, "event counted")
	require.Len(t, counted, 2)
	for _, l := range counted {
		h := products[eventOf[l["event_id"].(string)]]
		require.NotEmpty(t, h, "event %v is one of the two", l["event_id"])
		assert.Equal(t, h, l["trace_header"])
		assert.Equal(t, tracing.TraceID(h), l["trace_id"])
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
