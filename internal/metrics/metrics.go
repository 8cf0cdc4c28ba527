// Package metrics defines the metrics every function publishes, once: the
// names, units and dimensions the template's alarms and docs/operations.md's
// table refer to, and a Recorder that writes one CloudWatch Embedded
// Metric Format line (pkg/emf) per invocation to the function's stdout.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemlambda/idemlambda/pkg/emf"
)

// DefaultNamespace is the CloudWatch namespace when METRICS_NAMESPACE is
// not set; template.yaml sets one per stack.
const DefaultNamespace = "idemlambda"

// The dimensions. Function is the function's name (createproduct, ...);
// Outcome is an API request's idempotency outcome.
const (
	DimFunction = "Function"
	DimOutcome  = "Outcome"
)

// The metrics. API functions publish Requests, Faults, DynamoDBCalls and
// Duration under [Function, Outcome] and [Function]; the relay, the
// consumer and the sweeper publish their batch or run counts under
// [Function].
const (
	Requests      = "Requests"      // Count: API requests answered
	Faults        = "Faults"        // Count: API requests answered 5xx other than 503: ours to fix, not the store's to clear
	DynamoDBCalls = "DynamoDBCalls" // Count: requests sent to DynamoDB, retries included
	Duration      = "Duration"      // Milliseconds: the handler's time, as the decorator saw it
	Records       = "Records"       // Count: records in a relay or consumer batch
	Published     = "Published"     // Count: relay: events EventBridge accepted
	Failed        = "Failed"        // Count: records to be retried (relay) or redelivered (consumer)
	Dropped       = "Dropped"       // Count: relay: outbox records that can never be published, passed over
	Replicas      = "Replicas"      // Count: relay: records of outbox items another Region wrote, passed over (that Region publishes them)
	Applied       = "Applied"       // Count: consumer: events counted by this delivery
	Duplicate     = "Duplicate"     // Count: consumer: deliveries of events counted before
	Poison        = "Poison"        // Count: consumer: messages that can never be counted, bound for the DLQ
	Pages         = "Pages"         // Count: sweeper: Scan pages read, over its tables
	Expired       = "Expired"       // Count: sweeper: expired items (and records) read
	Deleted       = "Deleted"       // Count: sweeper: expired items deleted
	Kept          = "Kept"          // Count: sweeper: expired items renewed (or deleted by another sweeper) between the read and the delete, left as they are
)

// OutcomeServed is the Outcome of a request on a route without an
// idempotency key (the GET routes) that was answered below 500 and not
// refused: found or not found.
const OutcomeServed = "served"

// Recorder writes one function's metrics lines. It is safe for concurrent
// use and never fails an invocation on a broken output. Its writes are
// synchronous, as the log's on the same stdout are.
type Recorder struct {
	w        *emf.Writer
	function string
}

// New returns a Recorder writing to out under namespace (DefaultNamespace
// when empty) with Function = function.
func New(out io.Writer, namespace, function string) (*Recorder, error) {
	if function == "" {
		return nil, errors.New("metrics: no function name")
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	w, err := emf.NewWriter(out, namespace)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &Recorder{w: w, function: function}, nil
}

// Function returns the Function dimension's value.
func (r *Recorder) Function() string { return r.function }

// Dropped returns how many lines could not be written.
func (r *Recorder) Dropped() int64 { return r.w.Dropped() }

// API is what one API request did.
type API struct {
	// Outcome is the idempotency outcome, or OutcomeServed and the like on
	// a route without a key.
	Outcome string
	// Status is the HTTP status of the answer.
	Status int
	// DynamoDBCalls is the requests it sent to DynamoDB.
	DynamoDBCalls int
}

// Request records one API request. Faults is 1 for a 5xx other than 503
// whatever the outcome: a request that failed and released its key reads
// Outcome=released, and its 500 must still reach the alarm.
func (r *Recorder) Request(ctx context.Context, a API, elapsed time.Duration) {
	fault := 0.0
	if a.Status >= 500 && a.Status != 503 {
		fault = 1
	}
	r.w.Write(r.line(ctx).Dimension(DimOutcome, a.Outcome).
		DimensionSet(DimFunction, DimOutcome).DimensionSet(DimFunction).
		Metric(Requests, emf.Count, 1).
		Metric(Faults, emf.Count, fault).
		Metric(DynamoDBCalls, emf.Count, float64(a.DynamoDBCalls)).
		Metric(Duration, emf.Milliseconds, ms(elapsed)))
}

// Relay is what one relay batch did.
type Relay struct {
	Records, Published, Failed, Dropped int
	// Replicas is the INSERT records of items another Region wrote,
	// passed over: that Region's relay publishes them.
	Replicas int
}

// RelayBatch records one relay batch.
func (r *Recorder) RelayBatch(ctx context.Context, b Relay, elapsed time.Duration) {
	r.w.Write(r.line(ctx).DimensionSet(DimFunction).
		Metric(Records, emf.Count, float64(b.Records)).
		Metric(Published, emf.Count, float64(b.Published)).
		Metric(Failed, emf.Count, float64(b.Failed)).
		Metric(Dropped, emf.Count, float64(b.Dropped)).
		Metric(Replicas, emf.Count, float64(b.Replicas)).
		Metric(Duration, emf.Milliseconds, ms(elapsed)))
}

// Consumer is what one consumer batch did.
type Consumer struct {
	Records, Applied, Duplicate, Poison, Failed int
	// DynamoDBCalls is the requests the batch sent to DynamoDB.
	DynamoDBCalls int
}

// ConsumerBatch records one consumer batch.
func (r *Recorder) ConsumerBatch(ctx context.Context, b Consumer, elapsed time.Duration) {
	r.w.Write(r.line(ctx).DimensionSet(DimFunction).
		Metric(Records, emf.Count, float64(b.Records)).
		Metric(Applied, emf.Count, float64(b.Applied)).
		Metric(Duplicate, emf.Count, float64(b.Duplicate)).
		Metric(Poison, emf.Count, float64(b.Poison)).
		Metric(Failed, emf.Count, float64(b.Failed)).
		Metric(DynamoDBCalls, emf.Count, float64(b.DynamoDBCalls)).
		Metric(Duration, emf.Milliseconds, ms(elapsed)))
}

// Sweep is what one sweeper invocation did, over its tables.
type Sweep struct {
	Pages, Expired, Deleted, Kept int
	// Applied is the idempotency records whose stranded writes it
	// applied; Failed the tables whose sweep (or the checkpoint) failed.
	Applied, Failed int
}

// Sweep records one sweeper invocation.
func (r *Recorder) Sweep(ctx context.Context, s Sweep, elapsed time.Duration) {
	r.w.Write(r.line(ctx).DimensionSet(DimFunction).
		Metric(Pages, emf.Count, float64(s.Pages)).
		Metric(Expired, emf.Count, float64(s.Expired)).
		Metric(Deleted, emf.Count, float64(s.Deleted)).
		Metric(Kept, emf.Count, float64(s.Kept)).
		Metric(Applied, emf.Count, float64(s.Applied)).
		Metric(Failed, emf.Count, float64(s.Failed)).
		Metric(Duration, emf.Milliseconds, ms(elapsed)))
}

// line starts a line with the Function dimension and, inside Lambda, the
// request id, so a metric's spike leads to its invocations' log lines.
func (r *Recorder) line(ctx context.Context) *emf.Line {
	l := emf.NewLine().Dimension(DimFunction, r.function)
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		l.Property("aws_request_id", lc.AwsRequestID)
	}
	return l
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
