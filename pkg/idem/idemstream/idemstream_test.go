package idemstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

var errBoom = errors.New("boom")

// kinesis is idemstream.NewKinesis, which must succeed.
func kinesis[T any](t testing.TB, store *idem.Store, operation string, decode func(events.KinesisEventRecord) (idemstream.Entry[T], error), opts ...idemstream.Option) *idemstream.Kinesis[T] {
	t.Helper()
	k, err := idemstream.NewKinesis(store, operation, decode, opts...)
	must.NoError(t, err)
	return k
}

// dynamoDB is idemstream.NewDynamoDB, which must succeed.
func dynamoDB[T any](t testing.TB, store *idem.Store, operation string, decode func(events.DynamoDBEventRecord) (idemstream.Entry[T], error), opts ...idemstream.Option) *idemstream.DynamoDB[T] {
	t.Helper()
	d, err := idemstream.NewDynamoDB(store, operation, decode, opts...)
	must.NoError(t, err)
	return d
}

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
	resp, results := dynamoDB(t, store, "count", decode).Run(ctx, ev, effect)
	check.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "200"}}, resp.BatchItemFailures)
	check.Equal(t, []string{"a"}, applied)
	check.ErrorIs(t, results[1].Err, errBoom)
	check.ErrorIs(t, results[2].Err, idemstream.ErrSkipped)

	// Lambda retries the shard from 200; the batch starts there again.
	failing = false
	resp, results = dynamoDB(t, store, "count", decode).Run(ctx, events.DynamoDBEvent{Records: ev.Records}, effect)
	check.Empty(t, resp.BatchItemFailures)
	check.Equal(t, []string{"a", "fail", "c"}, applied, "the first record replays; the rest apply once")
	check.Equal(t, idem.OutcomeReplayed, results[0].Outcome)

	// Kinesis: the same, by the record's sequence number.
	kev := events.KinesisEvent{Records: []events.KinesisEventRecord{
		{Kinesis: events.KinesisRecord{SequenceNumber: "7", Data: []byte("x")}},
		{Kinesis: events.KinesisRecord{SequenceNumber: "8", Data: []byte("")}},
	}}
	kresp, kres := kinesis(t, store, "count", func(r events.KinesisEventRecord) (idemstream.Entry[string], error) {
		return idemstream.Entry[string]{Principal: "orders", Key: "k" + r.Kinesis.SequenceNumber, Value: string(r.Kinesis.Data)}, nil
	}).Run(ctx, kev, func(_ context.Context, v string) error {
		if strings.TrimSpace(v) == "" {
			return errBoom
		}
		return nil
	})

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
		resp, res := kinesis(t, store, "count", decode).Run(ctx, ev, func(context.Context, string) error { applied++; return nil })
		check.Empty(t, resp.BatchItemFailures)
		for _, r := range res {
			check.Equal(t, want, r.Outcome, "round %d: %v", round, r.Err)
		}
	}
	check.Equal(t, 2, applied)
}

// NewKinesis and NewDynamoDB refuse what they cannot serve, before any
// batch.
func TestNewRefusesWhatItCannotServe(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	decodeK := func(events.KinesisEventRecord) (idemstream.Entry[string], error) {
		return idemstream.Entry[string]{}, nil
	}
	decodeD := func(events.DynamoDBEventRecord) (idemstream.Entry[string], error) {
		return idemstream.Entry[string]{}, nil
	}
	for name, build := range map[string]func() error{
		"kinesis, no store":     func() error { _, err := idemstream.NewKinesis(nil, "count", decodeK); return err },
		"kinesis, no operation": func() error { _, err := idemstream.NewKinesis(store, "", decodeK); return err },
		"kinesis, no decode": func() error {
			_, err := idemstream.NewKinesis[string](store, "count", nil)
			return err
		},
		"kinesis, short retention": func() error {
			_, err := idemstream.NewKinesis(store, "count", decodeK, idemstream.WithRetention(time.Second))
			return err
		},
		"dynamodb, no store": func() error { _, err := idemstream.NewDynamoDB(nil, "count", decodeD); return err },
		"dynamodb, no decode": func() error {
			_, err := idemstream.NewDynamoDB[string](store, "count", nil)
			return err
		},
		"dynamodb, short retention": func() error {
			_, err := idemstream.NewDynamoDB(store, "count", decodeD, idemstream.WithRetention(time.Second))
			return err
		},
	} {
		check.Error(t, build(), name)
	}
	_, err := idemstream.NewDynamoDB(store, "count", decodeD, idemstream.WithRetention(48*time.Hour))
	check.NoError(t, err)
}
