package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/tracing"
)

// Scope is the instrumentation scope of the API's spans.
const Scope = "github.com/idemlambda/idemlambda/internal/api"

// Traced runs each request in a server span, a child of the trace Lambda
// began the invocation in (tracing.Invocation), named after its route
// ("POST /products"), with the HTTP method, route and status, the
// invocation's request id and the idempotency outcome as attributes. A
// 5xx sets the span's status to Error, with the error. Off (t nil), the
// span is a no-op one that still carries Lambda's trace on to what the
// request writes.
func Traced(t *tracing.Tracing, next Handler) Handler {
	tracer := t.Tracer(Scope)
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) Reply {
		method, route := routeOf(req)
		ctx, span := tracer.Start(tracing.Invocation(ctx), strings.TrimSpace(method+" "+route), trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		r := next(ctx, req)
		if !span.IsRecording() {
			return r
		}
		status := r.Response.StatusCode
		span.SetAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPResponseStatusCode(status), semconv.FaaSTriggerHTTP)
		if route != "" {
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			span.SetAttributes(semconv.FaaSInvocationID(lc.AwsRequestID))
		}
		if r.Outcome != "" {
			span.SetAttributes(tracing.AttrOutcome.String(string(r.Outcome)))
		}
		if status >= http.StatusInternalServerError {
			if r.Err != nil {
				span.RecordError(r.Err)
			}
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		return r
	}
}

// routeOf reads the method and route template from the request's route
// key ("POST /products/{id}"), which API Gateway sets, or the method
// alone.
func routeOf(req events.APIGatewayV2HTTPRequest) (method, route string) {
	if m, r, ok := strings.Cut(req.RouteKey, " "); ok {
		return m, r
	}
	return req.RequestContext.HTTP.Method, ""
}
