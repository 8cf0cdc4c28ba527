package idemstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

var errBoom = errors.New("boom")

// newStore is a store on a strict store's idempotency table.
func newStore(t *testing.T) *idem.Store {
	t.Helper()
	db := idemtest.New(t).Client()
	must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
	store, err := idem.NewStore(db, "idempotency")
	must.NoError(t, err)
	return store
}

// A shard's records apply in order; the first that fails is the one the
// answer names, the rest are untried; a retry from it replays what was
// done and applies the rest.
func TestAShardStopsAtItsFirstFailureAndResumesFromIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newStore(t)

	record := func(seq, body string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{SequenceNumber: seq,
			NewImage: map[string]events.DynamoDBAttributeValue{"body": events.NewStringAttribute(body)}}}
	}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("100", "a"), record("200", "fail"), record("300", "c")}}
	decode := func(r events.DynamoDBEventRecord) (idemstream.Entry[string], error) {
		return idemstream.Entry[string]{Principal: "orders", Key: r.Change.SequenceNumber, Value: r.Change.NewImage["body"].String()}, nil
	}
	var applied []string
	failing := true
	effect := func(_ context.Context, v string) error {
		if v == "fail" && failing {
			return errBoom
		}
		applied = append(applied, v)
		return nil
	}
	resp, results := idemstream.DynamoDB(ev, decode, idemstream.Run(ctx, store, "count", effect))
	check.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "200"}}, resp.BatchItemFailures)
	check.Equal(t, []string{"a"}, applied)
	check.ErrorIs(t, results[1].Err, errBoom)
	check.ErrorIs(t, results[2].Err, idemstream.ErrSkipped)

	// Lambda retries the shard from 200; the batch starts there again.
	failing = false
	resp, results = idemstream.DynamoDB(events.DynamoDBEvent{Records: ev.Records}, decode, idemstream.Run(ctx, store, "count", effect))
	check.Empty(t, resp.BatchItemFailures)
	check.Equal(t, []string{"a", "fail", "c"}, applied, "the first record replays; the rest apply once")
	check.Equal(t, idem.OutcomeReplayed, results[0].Outcome)

	// Kinesis: the same, by the record's sequence number.
	kev := events.KinesisEvent{Records: []events.KinesisEventRecord{
		{Kinesis: events.KinesisRecord{SequenceNumber: "7", Data: []byte("x")}},
		{Kinesis: events.KinesisRecord{SequenceNumber: "8", Data: []byte("")}},
	}}
	kresp, kres := idemstream.Kinesis(kev, func(r events.KinesisEventRecord) (idemstream.Entry[string], error) {
		return idemstream.Entry[string]{Principal: "orders", Key: "k" + r.Kinesis.SequenceNumber, Value: string(r.Kinesis.Data)}, nil
	}, idemstream.Run(ctx, store, "count", func(_ context.Context, v string) error {
		if strings.TrimSpace(v) == "" {
			return errBoom
		}
		return nil
	}))
	check.Equal(t, []events.KinesisBatchItemFailure{{ItemIdentifier: "8"}}, kresp.BatchItemFailures)
	check.Equal(t, idem.OutcomeExecuted, kres[0].Outcome)
}

// A producer named "anonymous" and one that cannot be named (the
// anonymous scope) are two producers: the same event id from each is two
// events, each applied once.
func TestAProducerNamedAnonymousIsNotTheAnonymousScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newStore(t)
	ev := events.KinesisEvent{Records: []events.KinesisEventRecord{
		{Kinesis: events.KinesisRecord{SequenceNumber: "1", PartitionKey: "", Data: []byte("ev-1")}},
		{Kinesis: events.KinesisRecord{SequenceNumber: "2", PartitionKey: "anonymous", Data: []byte("ev-1")}},
	}}
	decode := func(r events.KinesisEventRecord) (idemstream.Entry[string], error) {
		p := r.Kinesis.PartitionKey // the producer; "" when it cannot be named
		return idemstream.Entry[string]{Principal: p, Anonymous: p == "", Key: string(r.Kinesis.Data), Value: "v"}, nil
	}
	applied := 0
	for round, want := range []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed} {
		resp, res := idemstream.Kinesis(ev, decode, idemstream.Run(ctx, store, "count", func(context.Context, string) error { applied++; return nil }))
		check.Empty(t, resp.BatchItemFailures)
		for _, r := range res {
			check.Equal(t, want, r.Outcome, "round %d: %v", round, r.Err)
		}
	}
	check.Equal(t, 2, applied)
}
