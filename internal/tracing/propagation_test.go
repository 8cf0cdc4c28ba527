package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/tracing"
)

const lambdaHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

// A Lambda invocation's trace header, where aws-lambda-go puts it, is the
// parent of what the function does; without one, or with one the X-Ray
// propagator cannot read, the context is left as it is.
func TestInvocationContinuesLambdasTrace(t *testing.T) {
	t.Parallel()
	sc := trace.SpanContextFromContext(tracing.Invocation(tracing.NewContext(context.Background(), lambdaHeader)))
	require.True(t, sc.IsValid())
	assert.True(t, sc.IsRemote())
	assert.Equal(t, "5759e988bd862e3fe1be46a994272793", sc.TraceID().String())
	assert.Equal(t, "53995c3f42cd8ad8", sc.SpanID().String())
	assert.True(t, sc.IsSampled())

	unsampled := trace.SpanContextFromContext(tracing.Invocation(tracing.NewContext(context.Background(),
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0")))
	assert.True(t, unsampled.IsValid())
	assert.False(t, unsampled.IsSampled(), "X-Ray's sampling decision is kept")

	for _, h := range []string{"", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1", "Root=nonsense;Parent=53995c3f42cd8ad8"} {
		ctx := tracing.NewContext(context.Background(), h)
		assert.False(t, trace.SpanContextFromContext(tracing.Invocation(ctx)).IsValid(), "%q", h)
	}
}

// An X-Ray header read and written again is the same trace and parent,
// in X-Ray's own format.
func TestXRayHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := tracing.FromXRay(context.Background(), lambdaHeader)
	assert.Equal(t, lambdaHeader, tracing.XRayHeader(ctx))
	assert.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", tracing.TraceID(ctx))
	assert.Empty(t, tracing.XRayHeader(context.Background()))
	assert.Empty(t, tracing.TraceID(context.Background()))
}

// The W3C trace context an event carries names the span it was created
// under, with its tracestate; a malformed traceparent carries nothing.
func TestW3CRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := tracing.Extract(context.Background(), "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", "xray=abc,other=1")
	tp, ts := tracing.Inject(ctx)
	assert.Equal(t, "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", tp)
	assert.Equal(t, "xray=abc,other=1", ts)
	sc := tracing.SpanContext(tp, ts)
	assert.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", tracing.XRayTraceID(sc.TraceID()))

	// X-Ray in, W3C out: Lambda's trace, carried by an event.
	tp, ts = tracing.Inject(tracing.FromXRay(context.Background(), lambdaHeader))
	assert.Equal(t, "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", tp)
	assert.Empty(t, ts)

	for _, bad := range []string{"", "00-nothex-53995c3f42cd8ad8-01", "00-00000000000000000000000000000000-53995c3f42cd8ad8-01"} {
		assert.False(t, tracing.SpanContext(bad, "").IsValid(), "%q", bad)
		tp, _ := tracing.Inject(tracing.Extract(context.Background(), bad, ""))
		assert.Empty(t, tp, "%q", bad)
	}
}

// Off (a nil *Tracing), a function records nothing, yet a span started
// under Lambda's trace still has Lambda's context, so what the function
// passes on (the outbox item's traceparent, PutEvents' TraceHeader)
// continues the trace Lambda began.
func TestOffStillPassesTheParentOn(t *testing.T) {
	t.Parallel()
	var off *tracing.Tracing
	assert.False(t, off.On())
	ctx, span := off.Tracer("t").Start(tracing.Invocation(tracing.NewContext(context.Background(), lambdaHeader)), "POST /products")
	defer span.End()
	assert.False(t, span.IsRecording())
	assert.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", tracing.TraceID(ctx))
	assert.Equal(t, lambdaHeader, tracing.XRayHeader(ctx))
	assert.NoError(t, off.Flush(context.Background()))
	assert.NoError(t, off.Shutdown(context.Background()))
	assert.NotNil(t, off.Provider())
	assert.Empty(t, off.Propagator().Fields(), "off, AWS calls carry no trace header")
}

// On, spans reach the provider's processors, children of Lambda's
// segment, and Flush exports what has ended.
func TestOnRecordsUnderLambdasTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithBatcher(exp))
	on := tracing.New(tp, nil)
	require.True(t, on.On())
	_, span := on.Tracer("t").Start(tracing.Invocation(tracing.NewContext(context.Background(), lambdaHeader)), "POST /products")
	span.End()
	require.Len(t, rec.Ended(), 1)
	got := rec.Ended()[0]
	assert.Equal(t, "5759e988bd862e3fe1be46a994272793", got.SpanContext().TraceID().String())
	assert.Equal(t, "53995c3f42cd8ad8", got.Parent().SpanID().String())
	assert.Empty(t, exp.GetSpans(), "batched until flushed")
	require.NoError(t, on.Flush(context.Background()))
	assert.Len(t, exp.GetSpans(), 1)
	require.NoError(t, on.Shutdown(context.Background()))
}
