package idemstream

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// Kinesis applies the batches of a Kinesis data stream's shards for one
// operation; build it with NewKinesis. It is safe for concurrent use.
type Kinesis[T any] struct {
	s stream[events.KinesisEventRecord, T]
}

// NewKinesis returns the consumer of operation's records on store: decode
// reads each record into its Entry. It refuses a missing store,
// operation or decode function, and an option the store cannot honour.
func NewKinesis[T any](store *idem.Store, operation string, decode func(events.KinesisEventRecord) (Entry[T], error), opts ...Option) (*Kinesis[T], error) {
	s, err := newStream(store, operation, decode, func(r events.KinesisEventRecord) string { return r.Kinesis.SequenceNumber }, opts)
	if err != nil {
		return nil, err
	}
	return &Kinesis[T]{s}, nil
}

// Run applies a batch's records with effect, outside DynamoDB: in order,
// until one fails, which the answer names.
func (k *Kinesis[T]) Run(ctx context.Context, ev events.KinesisEvent, effect func(context.Context, T) error) (events.KinesisEventResponse, []Result) {
	res := k.s.run(ctx, ev.Records, effect)
	return KinesisResponse(res), res
}

// Transact applies a batch's records' DynamoDB writes: each record's key
// and the writes shared returns for its value (executing holds that one
// value; contended is as idem.Store.ExecuteBatch says) in one
// TransactWriteItems, in order, until one fails.
func (k *Kinesis[T]) Transact(ctx context.Context, ev events.KinesisEvent,
	shared func(executing []T, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error),
) (events.KinesisEventResponse, []Result) {
	res := k.s.transact(ctx, ev.Records, shared)
	return KinesisResponse(res), res
}

// KinesisResponse is the answer for the Lambda runtime: the sequence
// number of the first record whose Result asks for redelivery, if any.
func KinesisResponse(results []Result) events.KinesisEventResponse {
	return events.KinesisEventResponse{BatchItemFailures: failed[events.KinesisBatchItemFailure](results)}
}
