package streampoll_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/streampoll"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/streams"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
)

// streamsEnv gives a test the DynamoDB backend and a Streams client for it,
// or skips: the embedded server has no Streams API.
func streamsEnv(t *testing.T) (*ddbtest.Env, *dynamodbstreams.Client) {
	t.Helper()
	kind, err := ddbtest.Backend()
	require.NoError(t, err)
	if kind == ddbtest.Embedded {
		t.Skip("needs the DynamoDB Streams API, which the embedded backend lacks: run with " +
			"DYNAMODB_TEST_BACKEND=endpoint AWS_ENDPOINT_URL_DYNAMODB=<moto or DynamoDB Local> (make e2e), " +
			"or DYNAMODB_TEST_BACKEND=container")
	}
	env := ddbtest.New(t)
	// The SDK's Streams variable when set; else the DynamoDB endpoint:
	// DynamoDB Local and moto serve Streams on the DynamoDB port.
	a := config.AWS{Region: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test"}
	if env.Kind == ddbtest.Endpoint {
		a, err = config.LoadAWS(os.Getenv, config.EndpointDynamoDBStreams)
		require.NoError(t, err)
	}
	a.Endpoint = cmp.Or(a.Endpoint, env.URL)
	client, err := app.Client(a, nil, dynamodbstreams.NewFromConfig)
	require.NoError(t, err)
	return env, client
}

func TestLatestStreamARN(t *testing.T) {
	t.Parallel()
	env, _ := streamsEnv(t)
	arn, err := streampoll.LatestStreamARN(t.Context(), env.Client, env.Tables.Outbox)
	require.NoError(t, err)
	assert.Contains(t, arn, env.Tables.Outbox)
	_, err = streampoll.LatestStreamARN(t.Context(), env.Client, env.Tables.Products)
	assert.ErrorIs(t, err, streampoll.ErrNoStream, "products has no stream")
}

// TestPollerFeedsTheHandlerLikeTheEventSourceMapping writes outbox items,
// then checks the poller delivers every INSERT and the REMOVE in order per
// item, and after a reported batch item failure reads again from exactly
// that record.
func TestPollerFeedsTheHandlerLikeTheEventSourceMapping(t *testing.T) {
	t.Parallel()
	env, client := streamsEnv(t)
	ctx := t.Context()
	arn, err := streampoll.LatestStreamARN(ctx, env.Client, env.Tables.Outbox)
	require.NoError(t, err)

	const n = 30
	var written []outbox.Event
	for i := range n {
		e, err := outbox.NewEvent("test", "ProductCreated", fmt.Sprintf("p-%d", i%3), []byte(`{"i":1}`), time.Now())
		require.NoError(t, err)
		item, err := outboxitem.Encode(e, time.Hour)
		require.NoError(t, err)
		_, err = env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Outbox), Item: item})
		require.NoError(t, err)
		written = append(written, e)
	}
	_, err = env.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(env.Tables.Outbox),
		Key: map[string]ddbtypes.AttributeValue{
			tables.AttrAggregateID: &ddbtypes.AttributeValueMemberS{Value: written[0].Subject},
			tables.AttrEventID:     &ddbtypes.AttributeValueMemberS{Value: written[0].ID},
		}})
	require.NoError(t, err)

	var (
		mu        sync.Mutex
		delivered []events.DynamoDBEventRecord // in delivery order, with repeats
		batches   []int
		failAt    = written[12].ID // reported as failed on its first delivery
		failedSeq string
	)
	handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, len(ev.Records))
		delivered = append(delivered, ev.Records...)
		for _, r := range ev.Records {
			if r.EventName == "INSERT" && failedSeq == "" && r.Change.Keys[tables.AttrEventID].String() == failAt {
				failedSeq = r.Change.SequenceNumber
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: failedSeq}}}, nil
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}
	p, err := streampoll.NewPoller(client, arn, handler, streampoll.Options{
		BatchSize: 7, PollInterval: 20 * time.Millisecond, RetryDelay: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		seen := map[string]bool{}
		for _, r := range delivered {
			seen[r.EventName+" "+r.Change.SequenceNumber] = true
		}
		return len(seen) == n+1
	}, time.Minute, 50*time.Millisecond, "every INSERT and the REMOVE delivered")
	stop()
	require.NoError(t, <-done)

	mu.Lock()
	defer mu.Unlock()
	for _, b := range batches {
		assert.LessOrEqual(t, b, 7, "batch size")
	}
	// The failed record came again, first in the next batch, and nothing
	// before it did.
	count := map[string]int{}
	firstRepeat := -1
	for i, r := range delivered {
		count[r.Change.SequenceNumber]++
		if count[r.Change.SequenceNumber] == 2 && firstRepeat < 0 {
			firstRepeat = i
		}
	}
	assert.Equal(t, 2, count[failedSeq], "the failed record is delivered again")
	require.GreaterOrEqual(t, firstRepeat, 0)
	assert.Equal(t, failedSeq, delivered[firstRepeat].Change.SequenceNumber, "re-reading starts at the failed record")
	for _, r := range delivered {
		assert.Equal(t, arn, r.EventSourceArn)
		if r.Change.SequenceNumber < failedSeq && len(r.Change.SequenceNumber) == len(failedSeq) {
			assert.Equal(t, 1, count[r.Change.SequenceNumber], "records before the failure are not repeated")
		}
	}
	// Per item, events arrive in the order they were written, and the
	// INSERT images decode back to the events.
	byAggregate := map[string][]string{}
	for _, r := range delivered {
		if r.EventName != "INSERT" {
			continue
		}
		item, err := streams.Item(r.Change.NewImage)
		require.NoError(t, err)
		e, err := outboxitem.Decode(item)
		require.NoError(t, err)
		if !slices.Contains(byAggregate[e.Subject], e.ID) {
			byAggregate[e.Subject] = append(byAggregate[e.Subject], e.ID)
		}
	}
	for agg, ids := range byAggregate {
		assert.True(t, slices.IsSorted(ids), "order of %s", agg) // UUIDv7 ids sort by time
	}
	removeAt := slices.IndexFunc(delivered, func(r events.DynamoDBEventRecord) bool { return r.EventName == "REMOVE" })
	insertAt := slices.IndexFunc(delivered, func(r events.DynamoDBEventRecord) bool {
		return r.EventName == "INSERT" && r.Change.Keys[tables.AttrEventID].String() == written[0].ID
	})
	assert.Less(t, insertAt, removeAt, "an item's REMOVE comes after its INSERT")
}

func TestPollerRunStopsOnAMissingStream(t *testing.T) {
	t.Parallel()
	_, client := streamsEnv(t)
	missing := "arn:aws:dynamodb:us-east-1:000000000000:table/no-such-table/stream/2026-11-29T00:00:00.000"
	p, err := streampoll.NewPoller(client, missing, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		t.Error("handler called for a stream that does not exist")
		return events.DynamoDBEventResponse{}, nil
	}, streampoll.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = p.Run(ctx)
	_, notFound := errors.AsType[*streamtypes.ResourceNotFoundException](err)
	assert.True(t, notFound, "Run returns the ResourceNotFoundException, got %v", err)
}
