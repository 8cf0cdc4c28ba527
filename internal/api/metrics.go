package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// Measured writes one metrics line per request: the outcome, whether the
// answer was a fault (a 5xx other than 503), the DynamoDB requests made
// with the request's context (ddb.CountCalls) and the duration. It also
// adds the call count to the request's log line. A broken metrics output
// never changes the Reply.
func Measured(rec *metrics.Recorder, next Handler) Handler {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) Reply {
		start := time.Now()
		ctx, calls := ddb.CountCalls(ctx)
		r := next(ctx, req)
		n := calls.Load()
		rec.Request(ctx, metrics.API{Outcome: outcome(r), Status: r.Response.StatusCode, DynamoDBCalls: n}, time.Since(start))
		r.Attrs = append(r.Attrs, slog.Int("dynamodb_calls", n))
		return r
	}
}

// outcome is the request's Outcome dimension: the idempotency outcome
// where the route has a key, else what the status says.
func outcome(r Reply) string {
	if r.Outcome != "" {
		return string(r.Outcome)
	}
	switch s := r.Response.StatusCode; {
	case s == http.StatusServiceUnavailable:
		return string(idem.OutcomeUnavailable)
	case s >= 500:
		return string(idem.OutcomeError)
	case s >= 400 && s != http.StatusNotFound:
		return string(idem.OutcomeRejected)
	default:
		return metrics.OutcomeServed
	}
}
