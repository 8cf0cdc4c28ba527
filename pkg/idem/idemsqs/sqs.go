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
// Two ways in, by where the effect lands:
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
	"strings"

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

// Transact applies the batch's messages whose effects are DynamoDB writes
// in one transaction: decode reads each message; shared returns the
// writes for the values of exactly the messages a transaction executes
// (it may be called more than once, with fewer values, when some messages
// turn out to be duplicates, and once per retry of a transaction) and
// must not depend on anything else; contended is the shared writes whose
// items another transaction held when the previous transaction was
// cancelled (idem.Store.ExecuteBatch). A message fails only for its own
// sake, never because another of the batch was a duplicate, poison or
// conflicted: a transaction whose shared writes keep meeting an item that
// other batches hold (an aggregate most messages update) is retried, then
// split in halves down to single messages, each with its own shared
// writes and attempts, so the messages whose writes miss that item commit
// and a message fails with the (retryable) conflict only when a
// transaction of its own kept meeting it (idem.Store.ExecuteBatch). To
// keep such batches from meeting at all, spread the aggregate over items
// with pkg/idem/idemshard. An error from shared itself fails every
// message of the transaction it was asked for. The results
// are in the batch's order; Response turns them into the runtime's
// answer. On a FIFO queue each message is its own transaction, in order,
// until one fails.
func Transact[T any](ctx context.Context, store *idem.Store, ev events.SQSEvent, operation string,
	decode func(events.SQSMessage) (Entry[T], error),
	shared func(executing []T, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error),
) (events.SQSEventResponse, []Result) {
	return answer(ev, batchway.Transact(ctx, batch(store, ev, operation, decode), shared))
}

// Run applies the batch's messages whose effects are outside DynamoDB,
// one after another: each is reserved, effect runs, and its completion is
// a fenced write (idem.Store.Run); a duplicate replays without running
// effect. A failed effect releases the message's key, so its redelivery
// runs it again. An effect that ran but whose completion could not be
// recorded (idem.OutcomeNotRecorded) is acknowledged, not redelivered:
// the redelivery would come after the lease and run it again. Run stops
// at ctx's end, reporting the untried messages failed. The results are in
// the batch's order.
func Run[T any](ctx context.Context, store *idem.Store, ev events.SQSEvent, operation string,
	decode func(events.SQSMessage) (Entry[T], error),
	effect func(context.Context, T) error,
) (events.SQSEventResponse, []Result) {
	return answer(ev, batchway.Run(ctx, batch(store, ev, operation, decode), effect))
}

// batch is the SQS event as the batch ways in take it: on a FIFO queue
// (an event source ARN ending in ".fifo"), in order.
func batch[T any](store *idem.Store, ev events.SQSEvent, operation string, decode func(events.SQSMessage) (Entry[T], error)) batchway.Batch[T] {
	return batchway.Batch[T]{
		Store: store, Operation: operation, Len: len(ev.Records),
		Decode: func(i int) (batchway.Entry[T], error) {
			e, err := decode(ev.Records[i])
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
