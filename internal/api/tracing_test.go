package api_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

const lambdaHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

// recording is a Tracing whose spans land in the returned recorder.
func recording(t testing.TB) (*tracing.Tracing, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tracing.New(tp, nil), rec
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// Each request is a server span named after its route, a child of the
// segment Lambda began the invocation with, carrying the method, route,
// status, Lambda's request id and the idempotency outcome; only a 5xx
// makes it an error, with the error recorded.
func TestTracedServerSpans(t *testing.T) {
	t.Parallel()
	on, rec := recording(t)
	boom := errors.New("store on fire")
	replies := map[string]api.Reply{
		"created":     {Response: events.APIGatewayV2HTTPResponse{StatusCode: 201}, Outcome: idem.OutcomeExecuted},
		"in flight":   {Response: events.APIGatewayV2HTTPResponse{StatusCode: 409}, Outcome: idem.OutcomeInFlight, Err: idem.ErrInFlight},
		"unavailable": {Response: events.APIGatewayV2HTTPResponse{StatusCode: 503}, Outcome: idem.OutcomeUnavailable, Err: boom},
		"fault":       {Response: events.APIGatewayV2HTTPResponse{StatusCode: 500}, Outcome: idem.OutcomeError, Err: boom},
	}
	for name, reply := range replies {
		h := api.Traced(on, func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) api.Reply {
			assert.True(t, trace.SpanFromContext(ctx).IsRecording(), "the handler runs in the span")
			return reply
		})
		ctx := lambdacontext.NewContext(tracing.NewContext(context.Background(), lambdaHeader), &lambdacontext.LambdaContext{AwsRequestID: "req-" + name})
		req := postReq(nil, "")
		h(ctx, req)
		spans := rec.Ended()
		s := spans[len(spans)-1]
		assert.Equal(t, "POST /products", s.Name(), name)
		assert.Equal(t, trace.SpanKindServer, s.SpanKind(), name)
		assert.Equal(t, "5759e988bd862e3fe1be46a994272793", s.SpanContext().TraceID().String(), name)
		assert.Equal(t, "53995c3f42cd8ad8", s.Parent().SpanID().String(), "%s: a child of Lambda's segment", name)
		a := attrs(s)
		assert.Equal(t, "POST", a["http.request.method"].AsString(), name)
		assert.Equal(t, "/products", a["http.route"].AsString(), name)
		assert.Equal(t, int64(reply.Response.StatusCode), a["http.response.status_code"].AsInt64(), name)
		assert.Equal(t, "req-"+name, a["faas.invocation_id"].AsString(), name)
		assert.Equal(t, string(reply.Outcome), a["idemlambda.idempotency.outcome"].AsString(), name)
		if reply.Response.StatusCode >= 500 {
			assert.Equal(t, codes.Error, s.Status().Code, name)
			require.Len(t, s.Events(), 1, name)
			assert.Equal(t, "exception", s.Events()[0].Name, name)
		} else {
			assert.Equal(t, codes.Unset, s.Status().Code, name)
			assert.Empty(t, s.Events(), name)
		}
	}
	assert.Len(t, rec.Ended(), len(replies))
}

// Off, a request records nothing, and its handler still sees Lambda's
// trace, which is what the product's event carries on.
func TestUntracedRequestsKeepLambdasTrace(t *testing.T) {
	t.Parallel()
	var seen trace.SpanContext
	h := api.Traced(nil, func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) api.Reply {
		seen = trace.SpanContextFromContext(ctx)
		return api.Reply{Response: events.APIGatewayV2HTTPResponse{StatusCode: 201}}
	})
	h(tracing.NewContext(context.Background(), lambdaHeader), postReq(nil, ""))
	assert.Equal(t, "5759e988bd862e3fe1be46a994272793", seen.TraceID().String())
	assert.Equal(t, "53995c3f42cd8ad8", seen.SpanID().String())
}

// A POST through the assembled function: the request's server span, the
// event's create span under it, and the outbox item carrying the create
// span's context, all in Lambda's trace.
func TestCreateIsTracedUnderTheRequest(t *testing.T) {
	t.Parallel()
	on, rec := recording(t)
	f := newFixtureTraced(t, on)
	resp, err := f.create(tracing.NewContext(context.Background(), lambdaHeader), postReq(jsonHeaders("traced"), widget))
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode, resp.Body)
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	server, create := byName["POST /products"], byName["create ProductCreated"]
	require.NotNil(t, server, "spans: %v", rec.Ended())
	require.NotNil(t, create, "spans: %v", rec.Ended())
	// The event is created by the idempotent effect, inside the
	// request's idem.execute (pkg/idem/idemotel).
	execute, effect := byName["idem.execute"], byName["idem.effect"]
	require.NotNil(t, execute, "spans: %v", rec.Ended())
	require.NotNil(t, effect, "spans: %v", rec.Ended())
	assert.Equal(t, server.SpanContext().SpanID(), execute.Parent().SpanID())
	assert.Equal(t, execute.SpanContext().SpanID(), effect.Parent().SpanID())
	assert.Equal(t, effect.SpanContext().SpanID(), create.Parent().SpanID())
	assert.Equal(t, trace.SpanKindProducer, create.SpanKind())
	a := attrs(create)
	assert.Equal(t, "create", a["messaging.operation.type"].AsString())
	assert.Equal(t, "ProductCreated", a["cloudevents.event_type"].AsString())
	assert.Equal(t, a["messaging.message.id"], a["cloudevents.event_id"])

	ev := f.outboxEvent(t)
	assert.Equal(t, a["cloudevents.event_id"].AsString(), ev.ID)
	sc := tracing.SpanContext(ev.TraceParent, ev.TraceState)
	assert.Equal(t, create.SpanContext().TraceID(), sc.TraceID())
	assert.Equal(t, create.SpanContext().SpanID(), sc.SpanID(), "the event carries its create span")
}
