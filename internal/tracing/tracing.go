// Package tracing carries one trace through the functions with
// OpenTelemetry's propagators, and is what a function traces with
// (Tracing). The trace Lambda starts an invocation in arrives as an X-Ray
// header in the handler's context (Invocation); an event carries the W3C
// trace context it was created under (traceparent and tracestate, on the
// outbox item and, by the CloudEvents Distributed Tracing extension, on
// the CloudEvent: Inject, Extract); PutEvents takes an X-Ray header per
// entry (XRayHeader), which reaches the SQS message as AWSTraceHeader
// (FromXRay). No header is parsed or written here by hand: the X-Ray and
// W3C propagators do both.
package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// lambdaContextKey is the context key under which aws-lambda-go puts each
// invocation's trace header (lambda/invoke_loop.go). It is a plain string
// there, so it must be one here too to be found.
const lambdaContextKey = "x-amzn-trace-id"

// SQSAttribute is the SQS message system attribute that carries the trace
// header EventBridge (or a sender) passed on.
const SQSAttribute = "AWSTraceHeader"

// HTTPHeader is the X-Ray trace header's name, in HTTP requests and in the
// X-Ray propagator's carriers.
const HTTPHeader = "X-Amzn-Trace-Id"

// FromContext returns the trace header of the Lambda invocation ctx
// belongs to, or "" when there is none (no tracing, or not in Lambda).
// The context value is per invocation; the _X_AMZN_TRACE_ID environment
// variable aws-lambda-go also sets is the process's latest one, which
// concurrent invocations (make run) would share.
func FromContext(ctx context.Context) string {
	h, _ := ctx.Value(lambdaContextKey).(string)
	return h
}

// NewContext returns ctx carrying header exactly as aws-lambda-go passes
// it to a handler, for runners and tests that stand in for Lambda.
func NewContext(ctx context.Context, header string) context.Context {
	//lint:ignore SA1029 the key must be aws-lambda-go's own untyped string
	return context.WithValue(ctx, lambdaContextKey, header)
}

// Provider is a tracer provider that can flush and shut down: the SDK's
// (*sdktrace.TracerProvider), which internal/app builds.
type Provider interface {
	trace.TracerProvider
	// ForceFlush exports every span ended so far.
	ForceFlush(ctx context.Context) error
	// Shutdown flushes, then stops the provider.
	Shutdown(ctx context.Context) error
}

// Tracing is what a function traces with: a tracer provider, and the
// propagator its AWS SDK calls inject their trace header with. A nil
// *Tracing traces nothing: its tracers are no-op ones, which cost next to
// nothing and still pass a parent's context on (the trace Lambda began
// an invocation in still reaches the outbox item and PutEvents).
type Tracing struct {
	provider   Provider
	propagator propagation.TextMapPropagator
}

// New returns the Tracing of provider, its AWS SDK calls injecting their
// trace header with propagator (nil: none).
func New(provider Provider, propagator propagation.TextMapPropagator) *Tracing {
	if propagator == nil {
		propagator = propagation.NewCompositeTextMapPropagator()
	}
	return &Tracing{provider: provider, propagator: propagator}
}

// On reports whether spans are recorded and exported.
func (t *Tracing) On() bool { return t != nil && t.provider != nil }

// Tracer returns the tracer of an instrumentation scope (the package's
// import path).
func (t *Tracing) Tracer(scope string) trace.Tracer {
	if !t.On() {
		return noop.Tracer{}
	}
	return t.provider.Tracer(scope)
}

// Provider returns the tracer provider; a no-op one when t is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if !t.On() {
		return noop.NewTracerProvider()
	}
	return t.provider
}

// Propagator returns the propagator of the AWS SDK calls' trace header.
func (t *Tracing) Propagator() propagation.TextMapPropagator {
	if !t.On() {
		return propagation.NewCompositeTextMapPropagator()
	}
	return t.propagator
}

// Flush exports every span ended so far: a Lambda function calls it at
// the end of each invocation, before Lambda may freeze the environment.
func (t *Tracing) Flush(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Shutdown flushes and stops the provider (make run, when it stops).
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
