// Package idemstream applies the records of a Kinesis Data Streams or
// DynamoDB Streams batch at most once each, for a Lambda function with
// ReportBatchItemFailures on its event source mapping. A batch comes from
// one shard, in order: the records are applied one after another, and the
// first that fails stops the batch. The answer (events.KinesisEventResponse,
// events.DynamoDBEventResponse) names that record's sequence number, from
// which Lambda retries the shard; the records after it are reported
// untried (ErrSkipped), and those before it are done. A record applied
// before replays when a retry brings it again.
//
// The caller's decode function reads each record into an Entry: the
// principal (the producer) and the key (the id the producer gave the
// event, the same in every record that carries it) that scope its
// idempotency record, and the value the record stands for, whose JSON is
// the fingerprint. A record's eventID is stable across Lambda's retries
// of the shard, so it is a key where the producer never writes one event
// twice.
//
//   - TransactKinesis and TransactDynamoDB, for effects that are DynamoDB
//     writes: each record's key and the writes shared computes for its
//     value commit in one TransactWriteItems (idem.Store.ExecuteBatch),
//     one record after another.
//   - RunKinesis and RunDynamoDB, for effects outside DynamoDB: each
//     record is reserved, applied and completed with a fenced write
//     (idem.Store.Run).
//
// A record's decode error, a key reused with another value
// (idem.ErrKeyReuse) or an effect's error fails it, and so stops the
// shard until it succeeds or the event source mapping gives up on it
// (MaximumRetryAttempts, an on-failure destination): poison is the
// caller's to classify in its log. An effect that ran but whose
// completion could not be recorded (idem.OutcomeNotRecorded) is
// acknowledged: a retry from it would run it again after the lease.
package idemstream

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/batchway"
)

// Entry is one record as the caller's decode function reads it.
type Entry[T any] struct {
	// Principal names the producer; another principal is another scope.
	Principal string
	// Key is the id the producer gave the event.
	Key string
	// Value is what the record asks for; its JSON is the fingerprint.
	Value T
}

// Result is what became of one record: idem.OutcomeExecuted or
// idem.OutcomeReplayed with a nil Err (done), or why it failed: decode's
// or the effect's error, idem.ErrKeyReuse, an *idem.InFlightError, a
// store error (idem.IsUnavailable tells one a retry fixes), or ErrSkipped
// for a record after the first failure. With idem.OutcomeNotRecorded
// (Run only) the effect ran unrecorded: the record is done all the same.
type Result struct {
	SequenceNumber string
	Outcome        idem.Outcome
	Err            error
}

// Redeliver reports whether the record needs another delivery.
func (r Result) Redeliver() bool { return batchway.Result{Outcome: r.Outcome, Err: r.Err}.Redeliver() }

// ErrSkipped reports a record left untried after an earlier one failed.
var ErrSkipped = errors.New("idemstream: skipped after an earlier failure in the shard's batch")

// Shared is the shared writes function of TransactKinesis and
// TransactDynamoDB: the writes of the values a transaction executes
// (idem.Store.ExecuteBatch's, as idemsqs.Transact takes it).
type Shared[T any] = func(executing []T, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error)

// apply applies a shard's records, read by decode, with do (batchway's
// Run or Transact), and returns each record's Result with its sequence
// number.
func apply[R, T any](records []R, seq func(R) string, store *idem.Store, operation string,
	decode func(R) (Entry[T], error), do func(batchway.Batch[T]) []batchway.Result,
) []Result {
	res := do(batchway.Batch[T]{
		Store: store, Operation: operation, Len: len(records), InOrder: true, Skipped: ErrSkipped,
		Decode: func(i int) (batchway.Entry[T], error) {
			e, err := decode(records[i])
			return batchway.Entry[T](e), err
		},
	})
	results := make([]Result, len(res))
	for i, r := range res {
		results[i] = Result{SequenceNumber: seq(records[i]), Outcome: r.Outcome, Err: r.Err}
	}
	return results
}

// failure is the sequence number of the first record that needs
// redelivery, "" when none does.
func failure(results []Result) string {
	for _, r := range results {
		if r.Redeliver() {
			return r.SequenceNumber
		}
	}
	return ""
}

// run and transact are the two ways to apply a batch.
func run[T any](ctx context.Context, effect func(context.Context, T) error) func(batchway.Batch[T]) []batchway.Result {
	return func(b batchway.Batch[T]) []batchway.Result { return batchway.Run(ctx, b, effect) }
}

func transact[T any](ctx context.Context, shared Shared[T]) func(batchway.Batch[T]) []batchway.Result {
	return func(b batchway.Batch[T]) []batchway.Result { return batchway.Transact(ctx, b, shared) }
}
