package idemstream

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// DynamoDB applies the batches of a DynamoDB stream's shards for one
// operation; build it with NewDynamoDB. It is safe for concurrent use.
type DynamoDB[T any] struct {
	s stream[events.DynamoDBEventRecord, T]
}

// NewDynamoDB returns the consumer of operation's records on store:
// decode reads each record into its Entry. It refuses a missing store,
// operation or decode function, and an option the store cannot honour.
func NewDynamoDB[T any](store *idem.Store, operation string, decode func(events.DynamoDBEventRecord) (Entry[T], error), opts ...Option) (*DynamoDB[T], error) {
	s, err := newStream(store, operation, decode, func(r events.DynamoDBEventRecord) string { return r.Change.SequenceNumber }, opts)
	if err != nil {
		return nil, err
	}
	return &DynamoDB[T]{s}, nil
}

// Run is Kinesis.Run for a DynamoDB Streams batch.
func (d *DynamoDB[T]) Run(ctx context.Context, ev events.DynamoDBEvent, effect func(context.Context, T) error) (events.DynamoDBEventResponse, []Result) {
	res := d.s.run(ctx, ev.Records, effect)
	return DynamoDBResponse(res), res
}

// Transact is Kinesis.Transact for a DynamoDB Streams batch.
func (d *DynamoDB[T]) Transact(ctx context.Context, ev events.DynamoDBEvent,
	shared func(executing []T, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error),
) (events.DynamoDBEventResponse, []Result) {
	res := d.s.transact(ctx, ev.Records, shared)
	return DynamoDBResponse(res), res
}

// DynamoDBResponse is the answer for the Lambda runtime: the sequence
// number of the first record whose Result asks for redelivery, if any.
func DynamoDBResponse(results []Result) events.DynamoDBEventResponse {
	return events.DynamoDBEventResponse{BatchItemFailures: failed[events.DynamoDBBatchItemFailure](results)}
}
