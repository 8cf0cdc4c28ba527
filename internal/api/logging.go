package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// Logged writes one JSON line per request, msg at info level, or at error
// level for a 5xx: the Lambda and API Gateway request ids, the trace id
// (X-Ray's form), the caller (principal), the outcome and the attributes
// the handler added, the status, the duration and the error. Never the
// body or the idempotency key, nor a hash of it: they can carry client
// data, and an unkeyed hash of a key a client chose ("order-42") is
// reversed by guessing.
//
// The principal is the caller as the route's authorizer names it and as
// the idempotency scope uses it (idemhttp.PrincipalV2: iam:<ARN>,
// jwt:"<issuer>":sub="<subject>", lambda:principalId="<id>"), and ""
// for a request without an authorizer or with one that names no caller:
// with the access log's caller, the record of who did what.
func Logged(log *slog.Logger, msg string, next Handler) Handler {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) Reply {
		start := time.Now()
		r := next(ctx, req)
		attrs := make([]slog.Attr, 0, 8+len(r.Attrs))
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			attrs = append(attrs, slog.String("aws_request_id", lc.AwsRequestID))
		}
		if id := req.RequestContext.RequestID; id != "" {
			attrs = append(attrs, slog.String("api_request_id", id))
		}
		principal, _ := idemhttp.PrincipalV2(req.RequestContext) // "" when it names no caller
		attrs = append(attrs, slog.String("principal", principal))
		// The request's trace id, in X-Ray's form: the relay and the
		// consumer log it too, so one product can be followed to its
		// consumers.
		if id := tracing.TraceID(ctx); id != "" {
			attrs = append(attrs, slog.String("trace_id", id))
		}
		if r.Outcome != "" {
			attrs = append(attrs, slog.String("outcome", string(r.Outcome)))
		}
		attrs = append(attrs, r.Attrs...)
		attrs = append(attrs, slog.Int("status", r.Response.StatusCode), slog.Int64("duration_ms", time.Since(start).Milliseconds()))
		level := slog.LevelInfo
		if r.Err != nil {
			attrs = append(attrs, slog.String("error", r.Err.Error()))
			if r.Response.StatusCode >= 500 {
				level = slog.LevelError
			}
		}
		log.LogAttrs(ctx, level, msg, attrs...)
		return r
	}
}
