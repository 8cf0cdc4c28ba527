package idemstream

import "github.com/aws/aws-lambda-go/events"

// Kinesis applies a Kinesis Data Streams batch's records, read by decode,
// the way way says: in order, until one fails, which the answer names.
func Kinesis[T any](ev events.KinesisEvent, decode func(events.KinesisEventRecord) (Entry[T], error), way Way[T]) (events.KinesisEventResponse, []Result) {
	res := apply(way, ev.Records, decode, func(r events.KinesisEventRecord) string { return r.Kinesis.SequenceNumber })
	return KinesisResponse(res), res
}

// KinesisResponse is the answer for the Lambda runtime: the sequence
// number of the first record whose Result asks for redelivery, if any.
func KinesisResponse(results []Result) events.KinesisEventResponse {
	return events.KinesisEventResponse{BatchItemFailures: failed[events.KinesisBatchItemFailure](results)}
}
