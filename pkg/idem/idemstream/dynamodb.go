package idemstream

import "github.com/aws/aws-lambda-go/events"

// DynamoDB applies a DynamoDB Streams batch's records, read by decode,
// the way way says: in order, until one fails, which the answer names.
func DynamoDB[T any](ev events.DynamoDBEvent, decode func(events.DynamoDBEventRecord) (Entry[T], error), way Way[T]) (events.DynamoDBEventResponse, []Result) {
	res := apply(way, ev.Records, decode, func(r events.DynamoDBEventRecord) string { return r.Change.SequenceNumber })
	return DynamoDBResponse(res), res
}

// DynamoDBResponse is the answer for the Lambda runtime: the sequence
// number of the first record whose Result asks for redelivery, if any.
func DynamoDBResponse(results []Result) events.DynamoDBEventResponse {
	return events.DynamoDBEventResponse{BatchItemFailures: failed[events.DynamoDBBatchItemFailure](results)}
}
