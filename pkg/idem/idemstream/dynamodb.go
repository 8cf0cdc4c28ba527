package idemstream

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// RunDynamoDB applies a DynamoDB Streams batch's records whose effects
// are outside DynamoDB, in order, until one fails.
func RunDynamoDB[T any](ctx context.Context, store *idem.Store, ev events.DynamoDBEvent, operation string,
	decode func(events.DynamoDBEventRecord) (Entry[T], error), effect func(context.Context, T) error,
) (events.DynamoDBEventResponse, []Result) {
	res := apply(ev.Records, dynamoDBSeq, store, operation, decode, run(ctx, effect))
	return DynamoDBResponse(res), res
}

// TransactDynamoDB applies a DynamoDB Streams batch's records whose
// effects are DynamoDB writes, one transaction each, in order, until one
// fails.
func TransactDynamoDB[T any](ctx context.Context, store *idem.Store, ev events.DynamoDBEvent, operation string,
	decode func(events.DynamoDBEventRecord) (Entry[T], error), shared Shared[T],
) (events.DynamoDBEventResponse, []Result) {
	res := apply(ev.Records, dynamoDBSeq, store, operation, decode, transact(ctx, shared))
	return DynamoDBResponse(res), res
}

// DynamoDBResponse is the answer for the Lambda runtime: the sequence
// number of the first record whose Result asks for redelivery, if any.
func DynamoDBResponse(results []Result) events.DynamoDBEventResponse {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	if first := failure(results); first != "" {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: first})
	}
	return resp
}

func dynamoDBSeq(r events.DynamoDBEventRecord) string { return r.Change.SequenceNumber }
