package idemstream

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// RunKinesis applies a Kinesis batch's records whose effects are outside
// DynamoDB, in order, until one fails.
func RunKinesis[T any](ctx context.Context, store *idem.Store, ev events.KinesisEvent, operation string,
	decode func(events.KinesisEventRecord) (Entry[T], error), effect func(context.Context, T) error,
) (events.KinesisEventResponse, []Result) {
	res := apply(ev.Records, kinesisSeq, store, operation, decode, run(ctx, effect))
	return KinesisResponse(res), res
}

// TransactKinesis applies a Kinesis batch's records whose effects are
// DynamoDB writes, one transaction each, in order, until one fails.
func TransactKinesis[T any](ctx context.Context, store *idem.Store, ev events.KinesisEvent, operation string,
	decode func(events.KinesisEventRecord) (Entry[T], error), shared Shared[T],
) (events.KinesisEventResponse, []Result) {
	res := apply(ev.Records, kinesisSeq, store, operation, decode, transact(ctx, shared))
	return KinesisResponse(res), res
}

// KinesisResponse is the answer for the Lambda runtime: the sequence
// number of the first record whose Result asks for redelivery, if any.
func KinesisResponse(results []Result) events.KinesisEventResponse {
	resp := events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{}}
	if first := failure(results); first != "" {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: first})
	}
	return resp
}

func kinesisSeq(r events.KinesisEventRecord) string { return r.Kinesis.SequenceNumber }
