// Package idemsqs applies the messages of an SQS batch at most once each,
// for a Lambda function with ReportBatchItemFailures on its event source
// mapping: it returns the events.SQSEventResponse that fails exactly the
// messages that need another delivery.
//
// A message is identified by what its producer gave it, not by its SQS
// messageId (a producer that retries SendMessage, or a redrive, sends the
// same event under a new messageId): the caller's decode function reads
// the message into an Entry, with the principal (the producer, such as a
// CloudEvent source) and the key (such as a CloudEvent id) that scope its
// record, and the value the message stands for. The value's JSON is the
// payload fingerprint, so the same key carrying another value is
// idem.ErrKeyReuse; what is stored for the key is only that it was
// applied (nothing at all), so a value of any size can be applied.
//
// A Consumer (New) applies a batch two ways, by where the effect lands:
//
//   - Transact, for effects that are DynamoDB writes: every new message's
//     record and the writes shared by exactly those messages (one
//     aggregated update per account, say) commit in one
//     TransactWriteItems (idem.Store.ExecuteBatch): one call per batch,
//     two when some messages were delivered before.
//   - Run, for effects outside DynamoDB (an e-mail, a call to another
//     API): each message is reserved, applied and completed with a fenced
//     write (idem.Store.Run), one after another.
//
// As in:
//
//	consumer, err := idemsqs.New(store, "deposit", decodeDeposit)
//	...
//	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
//		resp, results := consumer.Transact(ctx, ev, perAccountUpdates)
//		return resp, nil
//	})
//
// A transaction whose shared writes keep meeting an item other batches
// hold (an aggregate most messages update) is retried, then split in
// halves down to single messages, so a message fails with the
// (retryable) conflict only when a transaction of its own kept meeting
// it; pkg/idem/idemshard spreads such an aggregate so that batches meet
// less.
//
// Poison is the caller's to classify: a message decode refuses, or whose
// effect fails, is reported failed with decode's or the effect's error in
// its Result, so the queue redelivers it and, after its maxReceiveCount,
// moves it to the dead-letter queue; log each Result to say which. On a
// FIFO queue (an event source ARN ending in ".fifo"), messages are applied
// one after another (Transact: one transaction each), and the first
// failed message and every message after it are reported failed,
// untried, as Lambda requires to keep each message group in order.
package idemsqs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/batchway"
)

// Entry is one message as the caller's decode function reads it.
type Entry[T any] struct {
	// Principal names the producer: a CloudEvent source, or the ARN of
	// the queue the consumer serves. Another principal is another scope.
	// Empty is an error (idem.ErrInvalidKey), unless Anonymous is set.
	Principal string
	// Anonymous puts the message in the one anonymous scope of the
	// operation (idem.NewAnonymousScope), for producers that cannot be
	// named and may share one scope; Principal must then be empty. No
	// named producer, "anonymous" included, is ever in that scope.
	Anonymous bool
	// Key is the id the producer gave the event, the same on every
	// delivery of it.
	Key string
	// Value is what the message asks for. Its JSON is the fingerprint.
	Value T
}

// Result is what became of one message.
type Result struct {
	// MessageID is the SQS messageId.
	MessageID string
	// Outcome is idem.OutcomeExecuted for the delivery that applied the
	// message, idem.OutcomeReplayed for a duplicate (acknowledged), and
	// otherwise says why it failed.
	Outcome idem.Outcome
	// Err is nil for an applied or duplicate message; otherwise decode's
	// or the effect's error, idem.ErrKeyReuse, an *idem.InFlightError, a
	// store error (idem.IsUnavailable tells one a retry fixes), or
	// ErrSkipped (with idem.OutcomeRejected: the message was not tried).
	// With idem.OutcomeNotRecorded (Run only), Err wraps
	// idem.ErrNotRecorded: the effect ran but its key's completion could
	// not be recorded. Such a message is acknowledged all the same (its
	// redelivery, after the lease, would run the effect again): log it.
	Err error
}

// Redeliver reports whether the message needs another delivery: it
// failed and its effect did not happen.
func (r Result) Redeliver() bool { return batchway.Result{Outcome: r.Outcome, Err: r.Err}.Redeliver() }

// ErrSkipped reports a message of a FIFO queue left untried because an
// earlier message of the batch failed.
var ErrSkipped = errors.New("idemsqs: skipped after an earlier failure in a FIFO batch")

// Response is the answer for the Lambda runtime: every message whose
// Result asks for redelivery (Result.Redeliver) is a batch item failure.
func Response(results []Result) events.SQSEventResponse {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, r := range results {
		if r.Redeliver() {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageID})
		}
	}
	return resp
}

// Option configures a Consumer.
type Option struct{ call idem.CallOption }

// WithRetention is idem.WithRetention for the consumer's messages
// (idem.CallRetention): how long a message's key replays. Choose it
// against the queue's retention (docs/library.md). New refuses one under
// the store's lease.
func WithRetention(d time.Duration) Option { return Option{idem.CallRetention(d)} }

// Consumer applies the batches of one queue's messages for one
// operation; build it with New. It is safe for concurrent use.
type Consumer[T any] struct {
	store     *idem.Store
	operation string
	decode    func(events.SQSMessage) (Entry[T], error)
	call      []idem.CallOption
}

// New returns the consumer of operation's messages on store: decode
// reads each message into its Entry. It refuses a missing store,
// operation or decode function, and an option the store cannot honour.
func New[T any](store *idem.Store, operation string, decode func(events.SQSMessage) (Entry[T], error), opts ...Option) (*Consumer[T], error) {
	c := &Consumer[T]{store: store, operation: operation, decode: decode}
	for _, o := range opts {
		c.call = append(c.call, o.call)
	}
	if err := batchway.Check(store, operation, decode != nil, c.call); err != nil {
		return nil, fmt.Errorf("idemsqs: %w", err)
	}
	return c, nil
}

// Transact applies the batch's messages whose effects are DynamoDB writes
// in one transaction: shared returns the writes for the values of
// exactly the messages a transaction executes, and may be asked again,
// with fewer values, per transaction (idem.Store.ExecuteBatch, whose
// contended it passes on); it must depend on nothing else, and its error
// fails the messages it was asked for. A message fails only for its own
// sake (the package documentation). On a FIFO queue each message is its
// own transaction, in order, until one fails. The results are in the
// batch's order.
func (c *Consumer[T]) Transact(ctx context.Context, ev events.SQSEvent,
	shared func(executing []T, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error),
) (events.SQSEventResponse, []Result) {
	return answer(ev, batchway.Transact(ctx, c.batch(ev), shared))
}

// Run applies the batch's messages whose effects are outside DynamoDB,
// one after another: each is reserved, effect runs, and its completion is
// a fenced write (idem.Store.Run); a duplicate replays without running
// effect. A failed effect releases the message's key, so its redelivery
// runs it again; an effect that ran but whose completion could not be
// recorded (idem.OutcomeNotRecorded) is acknowledged, since its
// redelivery would run it again after the lease. Run stops at ctx's end,
// and before it when the time left is less than the slowest message took,
// reporting the untried messages failed. The results are in the batch's
// order.
func (c *Consumer[T]) Run(ctx context.Context, ev events.SQSEvent, effect func(context.Context, T) error) (events.SQSEventResponse, []Result) {
	return answer(ev, batchway.Run(ctx, c.batch(ev), effect))
}

// batch is the SQS event as the batch ways in take it: on a FIFO queue
// (an event source ARN ending in ".fifo"), in order.
func (c *Consumer[T]) batch(ev events.SQSEvent) batchway.Batch[T] {
	return batchway.Batch[T]{
		Store: c.store, Operation: c.operation, Len: len(ev.Records), Call: c.call,
		Decode: func(i int) (batchway.Entry[T], error) {
			e, err := c.decode(ev.Records[i])
			return batchway.Entry[T](e), err
		},
		InOrder: len(ev.Records) > 0 && strings.HasSuffix(ev.Records[0].EventSourceARN, ".fifo"),
		Skipped: ErrSkipped,
	}
}

// answer is each message's Result, and the runtime's answer.
func answer(ev events.SQSEvent, res []batchway.Result) (events.SQSEventResponse, []Result) {
	results := make([]Result, len(res))
	for i, r := range res {
		results[i] = Result{MessageID: ev.Records[i].MessageId, Outcome: r.Outcome, Err: r.Err}
	}
	return Response(results), results
}
