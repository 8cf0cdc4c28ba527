package api

import (
	"context"
	"log/slog"

	"github.com/idemlambda/idemlambda/internal/problem"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// Reply is a handler's answer, and what the decorators around it record.
type Reply struct {
	// Response goes to the client.
	Response events.APIGatewayV2HTTPResponse
	// Outcome is the idempotency outcome; empty on routes without a key.
	Outcome idem.Outcome
	// Err is why the request failed, for the log; it is never sent.
	Err error
	// Attrs are more attributes for the request's log line.
	Attrs []slog.Attr
}

// Handler answers one API Gateway request. Cross-cutting concerns
// (logging, metrics) are decorators that take a Handler and return one;
// Lambda turns the result into what lambda.Start takes.
type Handler func(context.Context, events.APIGatewayV2HTTPRequest) Reply

// Lambda adapts h to the Lambda runtime. It never returns an error: every
// failure is a problem+json response, so API Gateway never turns one into
// an opaque 502.
func Lambda(h Handler) idemhttp.APIGatewayV2Handler {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return h(ctx, req).Response, nil
	}
}

// fail is the Reply of a request answered with a problem.
func fail(p problem.Problem, outcome idem.Outcome, err error) Reply {
	return Reply{Response: p.APIGatewayV2(), Outcome: outcome, Err: err}
}

// Function is an API function's Lambda handler: h with its span (traced
// by t), its request log (msg, written by log) and its metrics (rec)
// around it, adapted to Lambda.
func Function(log *slog.Logger, rec *metrics.Recorder, t *tracing.Tracing, msg string, h Handler) idemhttp.APIGatewayV2Handler {
	return Lambda(Traced(t, Logged(log, msg, Measured(rec, h))))
}
