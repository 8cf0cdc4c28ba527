package tracing

import (
	"context"

	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Invocation returns ctx with the trace of the Lambda invocation it
// belongs to as its remote parent: the X-Ray trace header aws-lambda-go
// put in ctx (with active tracing, its Parent is the function's segment,
// so the function's spans hang under it in X-Ray). With no header, or one
// the X-Ray propagator cannot read (no Parent, say), ctx is returned as it
// is, and a span started from it begins a trace of its own, or continues
// one ctx already carries.
func Invocation(ctx context.Context) context.Context {
	h := FromContext(ctx)
	if h == "" {
		return ctx
	}
	return FromXRay(ctx, h)
}

// FromXRay returns ctx with the trace of an X-Ray trace header (an SQS
// message's AWSTraceHeader, Lambda's _X_AMZN_TRACE_ID) as its remote
// parent, or ctx itself when the header cannot be read.
func FromXRay(ctx context.Context, header string) context.Context {
	return xray.Propagator{}.Extract(ctx, propagation.MapCarrier{HTTPHeader: header})
}

// XRayHeader returns the X-Ray trace header of ctx's span
// ("Root=1-...;Parent=...;Sampled=..."), what a PutEvents entry's
// TraceHeader carries, or "" when ctx has no valid span context.
func XRayHeader(ctx context.Context) string {
	c := propagation.MapCarrier{}
	xray.Propagator{}.Inject(ctx, c)
	return c[HTTPHeader]
}

// The W3C Trace Context fields an event carries (the CloudEvents
// Distributed Tracing extension's attribute names, and the outbox item's).
const (
	TraceParent = "traceparent"
	TraceState  = "tracestate"
)

// Inject returns the W3C trace context of ctx's span, the traceparent and
// tracestate an event created under it carries; both "" when ctx has no
// valid span context.
func Inject(ctx context.Context) (traceparent, tracestate string) {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c[TraceParent], c[TraceState]
}

// Extract returns ctx with the span of a W3C trace context as its remote
// parent, or ctx itself when traceparent is empty or malformed (a
// malformed tracestate alone is dropped).
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{TraceParent: traceparent, TraceState: tracestate})
}

// SpanContext is the span context of a W3C trace context; it is not
// valid when traceparent is empty or malformed.
func SpanContext(traceparent, tracestate string) trace.SpanContext {
	return trace.SpanContextFromContext(Extract(context.Background(), traceparent, tracestate))
}

// TraceID returns the trace id of ctx's span in X-Ray's form, the one the
// X-Ray console shows and searches by, or "" when ctx has none. The logs
// carry it, so a product's lines can be found from its trace and back.
func TraceID(ctx context.Context) string {
	return XRayTraceID(trace.SpanContextFromContext(ctx).TraceID())
}

// XRayTraceID writes a trace id in X-Ray's form: "1-", the first 8 hex
// digits (epoch seconds when X-Ray's ID generator made it), "-", the other
// 24. It returns "" for the invalid (zero) id.
func XRayTraceID(id trace.TraceID) string {
	if !id.IsValid() {
		return ""
	}
	s := id.String()
	return "1-" + s[:8] + "-" + s[8:]
}
