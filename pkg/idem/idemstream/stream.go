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
// Kinesis and DynamoDB read their stream's event, and a Way applies its
// records:
//
//   - Transact, for effects that are DynamoDB writes: each record's key
//     and the writes shared computes for its value commit in one
//     TransactWriteItems (idem.Store.ExecuteBatch), one record after
//     another.
//   - Run, for effects outside DynamoDB: each record is reserved,
//     applied and completed with a fenced write (idem.Store.Run).
//
// As in:
//
//	resp, results := idemstream.Kinesis(ev, decodeOrder, idemstream.Run(ctx, store, "ship", ship))
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
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/batchway"
)

// Entry is one record as the caller's decode function reads it: its
// producer (Principal), the id the producer gave the event (Key) and what
// it asks for (Value, whose JSON is the fingerprint), as idemsqs reads a
// message.
type Entry[T any] = idemsqs.Entry[T]

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

// Way is how a batch's records are applied: Run or Transact.
type Way[T any] struct {
	operation string
	store     *idem.Store
	apply     func(batchway.Batch[T]) []batchway.Result
}

// Run applies each record's effect outside DynamoDB (an e-mail, a call to
// another API) once: reserved, run, completed with a fenced write
// (idem.Store.Run). A record whose effect fails is released, so the
// shard's retry runs it again.
func Run[T any](ctx context.Context, store *idem.Store, operation string, effect func(context.Context, T) error) Way[T] {
	return Way[T]{operation, store, func(b batchway.Batch[T]) []batchway.Result { return batchway.Run(ctx, b, effect) }}
}

// Transact applies each record's DynamoDB writes once: the record's key
// and the writes shared returns for its value (executing holds that one
// value; contended is as idem.Store.ExecuteBatch says) commit in one
// TransactWriteItems.
func Transact[T any](ctx context.Context, store *idem.Store, operation string,
	shared func(executing []T, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error),
) Way[T] {
	return Way[T]{operation, store, func(b batchway.Batch[T]) []batchway.Result { return batchway.Transact(ctx, b, shared) }}
}

// apply applies a shard's records, read by decode, the way w says, and
// returns each record's Result with its sequence number.
func apply[R, T any](w Way[T], records []R, decode func(R) (Entry[T], error), seq func(R) string) []Result {
	res := w.apply(batchway.Batch[T]{
		Store: w.store, Operation: w.operation, Len: len(records), InOrder: true, Skipped: ErrSkipped,
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

// failed is the batch item failures of a shard's answer: the first
// record that needs redelivery, if any. Kinesis's and DynamoDB Streams'
// failure types are both this.
func failed[F ~struct {
	ItemIdentifier string `json:"itemIdentifier"`
}](results []Result) []F {
	out := []F{}
	for _, r := range results {
		if r.Redeliver() {
			return append(out, F{ItemIdentifier: r.SequenceNumber})
		}
	}
	return out
}
