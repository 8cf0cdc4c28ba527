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
// A Kinesis consumer (NewKinesis) or a DynamoDB Streams one (NewDynamoDB)
// applies a batch two ways, by where the effect lands:
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
//	orders, err := idemstream.NewKinesis(store, "ship", decodeOrder)
//	...
//	resp, results := orders.Run(ctx, ev, ship)
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
	"fmt"
	"time"

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

// Option configures a consumer.
type Option struct{ call idem.CallOption }

// WithRetention is idem.WithRetention for the consumer's records
// (idem.CallRetention): how long a record's key replays, as long as the
// stream keeps records and its retries last. NewKinesis and NewDynamoDB
// refuse one under the store's lease.
func WithRetention(d time.Duration) Option { return Option{idem.CallRetention(d)} }

// stream is what both consumers hold: the store, the operation, how a
// record is read and its sequence number, and the options of each call.
type stream[R, T any] struct {
	store     *idem.Store
	operation string
	decode    func(R) (Entry[T], error)
	seq       func(R) string
	call      []idem.CallOption
}

// newStream checks a consumer's configuration.
func newStream[R, T any](store *idem.Store, operation string, decode func(R) (Entry[T], error), seq func(R) string, opts []Option) (stream[R, T], error) {
	s := stream[R, T]{store: store, operation: operation, decode: decode, seq: seq}
	for _, o := range opts {
		s.call = append(s.call, o.call)
	}
	if err := batchway.Check(store, operation, decode != nil, s.call); err != nil {
		return stream[R, T]{}, fmt.Errorf("idemstream: %w", err)
	}
	return s, nil
}

// run applies records with effect outside DynamoDB.
func (s stream[R, T]) run(ctx context.Context, records []R, effect func(context.Context, T) error) []Result {
	return s.results(records, batchway.Run(ctx, s.batch(records), effect))
}

// transact applies records' DynamoDB writes, each its own transaction.
func (s stream[R, T]) transact(ctx context.Context, records []R,
	shared func(executing []T, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error),
) []Result {
	return s.results(records, batchway.Transact(ctx, s.batch(records), shared))
}

// batch is a shard's records as the batch ways in take them: in order.
func (s stream[R, T]) batch(records []R) batchway.Batch[T] {
	return batchway.Batch[T]{
		Store: s.store, Operation: s.operation, Len: len(records), InOrder: true, Skipped: ErrSkipped, Call: s.call,
		Decode: func(i int) (batchway.Entry[T], error) {
			e, err := s.decode(records[i])
			return batchway.Entry[T](e), err
		},
	}
}

// results is each record's Result with its sequence number.
func (s stream[R, T]) results(records []R, res []batchway.Result) []Result {
	results := make([]Result, len(res))
	for i, r := range res {
		results[i] = Result{SequenceNumber: s.seq(records[i]), Outcome: r.Outcome, Err: r.Err}
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
