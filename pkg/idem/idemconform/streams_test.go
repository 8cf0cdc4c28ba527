package idemconform_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemconform"
	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
)

// The stream ways in: Kinesis Data Streams and DynamoDB Streams, each
// with effects outside DynamoDB (Run) and DynamoDB writes (Transact).
var streamWays = []idemconform.Way{
	{Name: "idemstream.Kinesis.Run", Source: idemconform.Stream, Deliver: deliverStream(kinesis, false)},
	{Name: "idemstream.Kinesis.Transact", Source: idemconform.Stream, Effect: idemconform.Writes, Deliver: deliverStream(kinesis, true)},
	{Name: "idemstream.DynamoDB.Run", Source: idemconform.Stream, Deliver: deliverStream(dynamoDB, false)},
	{Name: "idemstream.DynamoDB.Transact", Source: idemconform.Stream, Effect: idemconform.Writes, Deliver: deliverStream(dynamoDB, true)},
}

// streamKind is which stream a way in reads.
type streamKind int

const (
	kinesis streamKind = iota
	dynamoDB
)

// deliverStream hands a shard's batch to idemstream: Run with the
// outside effect, or Transact with the effect's writes, as the way says.
// A record's sequence number is its request's ID.
func deliverStream(kind streamKind, transact bool) func(context.Context, *idemconform.Invocation) []idemconform.Answer {
	return func(ctx context.Context, inv *idemconform.Invocation) []idemconform.Answer {
		seq := &sequential{inv: inv}
		decode := func(id, body string) (idemstream.Entry[value], error) {
			m, err := seq.decode(id, []byte(body))
			return idemstream.Entry[value]{Principal: m.Principal, Key: m.Key, Value: valueOf(m)}, err
		}
		effect := func(ctx context.Context, v value) error {
			return seq.effect(ctx, v.message().Payload())
		}
		shared := func([]value, []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			// One record a transaction, in order: the one decoded last.
			return inv.BatchWrites(ctx, []*idemconform.Execution{inv.Begin(seq.current)})
		}
		reqs := inv.Requests()
		var failed []string
		var results []idemstream.Result
		switch kind {
		case kinesis:
			ev := events.KinesisEvent{}
			for _, r := range reqs {
				ev.Records = append(ev.Records, events.KinesisEventRecord{
					EventSourceArn: "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
					Kinesis:        events.KinesisRecord{SequenceNumber: r.ID(), Data: r.Body()},
				})
			}
			consumer, err := idemstream.NewKinesis(inv.Store(), operation, func(r events.KinesisEventRecord) (idemstream.Entry[value], error) {
				return decode(r.Kinesis.SequenceNumber, string(r.Kinesis.Data))
			})
			if err != nil {
				return []idemconform.Answer{unclassified("idemstream.NewKinesis: " + err.Error())}
			}
			var resp events.KinesisEventResponse
			if transact {
				resp, results = consumer.Transact(ctx, ev, shared)
			} else {
				resp, results = consumer.Run(ctx, ev, effect)
			}
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
		case dynamoDB:
			ev := events.DynamoDBEvent{}
			for _, r := range reqs {
				ev.Records = append(ev.Records, events.DynamoDBEventRecord{
					EventName: "INSERT",
					Change: events.DynamoDBStreamRecord{SequenceNumber: r.ID(), NewImage: map[string]events.DynamoDBAttributeValue{
						"body": events.NewStringAttribute(string(r.Body())),
					}},
				})
			}
			consumer, err := idemstream.NewDynamoDB(inv.Store(), operation, func(r events.DynamoDBEventRecord) (idemstream.Entry[value], error) {
				return decode(r.Change.SequenceNumber, r.Change.NewImage["body"].String())
			})
			if err != nil {
				return []idemconform.Answer{unclassified("idemstream.NewDynamoDB: " + err.Error())}
			}
			var resp events.DynamoDBEventResponse
			if transact {
				resp, results = consumer.Transact(ctx, ev, shared)
			} else {
				resp, results = consumer.Run(ctx, ev, effect)
			}
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
		}
		return streamAnswers(reqs, failed, results)
	}
}

// streamAnswers reads idemstream's results with the answer the runtime
// got: the records before the one it names are done, and the shard goes
// on from that one (Checkpoint), the rest untried.
func streamAnswers(reqs []*idemconform.Request, failed []string, results []idemstream.Result) []idemconform.Answer {
	answers := make([]idemconform.Answer, len(reqs))
	from := len(reqs)
	switch {
	case len(failed) > 1:
		for i := range answers {
			answers[i] = unclassified(fmt.Sprintf("the answer names %d records; a shard resumes from one", len(failed)))
		}
		return answers
	case len(failed) == 1:
		from = slices.IndexFunc(reqs, func(r *idemconform.Request) bool { return r.ID() == failed[0] })
		if from < 0 {
			for i := range answers {
				answers[i] = unclassified("the answer names a record not in the batch: " + failed[0])
			}
			return answers
		}
	}
	for i, r := range reqs {
		res := results[i]
		var a idemconform.Answer
		switch {
		case res.SequenceNumber != r.ID():
			a = unclassified("result for another record: " + res.SequenceNumber)
		case errors.Is(res.Err, idemstream.ErrSkipped) && i > from:
			a = idemconform.Answer{Class: idemconform.Unavailable, Untried: true, Detail: "untried after an earlier failure"}
		default:
			a = idemconform.FromRecord(res.Outcome, res.Err, i < from)
		}
		a.Checkpoint = i == from
		answers[i] = a
	}
	return answers
}
