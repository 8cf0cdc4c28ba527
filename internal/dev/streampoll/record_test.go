package streampoll_test

import (
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/streampoll"
	"github.com/idemlambda/idemlambda/internal/streams"
)

const testARN = "arn:aws:dynamodb:us-east-1:123456789012:table/outbox/stream/2026-11-29T00:00:00.000"

func TestEventRecordMatchesWhatLambdaDelivers(t *testing.T) {
	t.Parallel()
	at := time.Unix(1764417600, 0)
	in := streamtypes.Record{
		AwsRegion:    aws.String("us-east-1"),
		EventID:      aws.String("ev-1"),
		EventName:    streamtypes.OperationTypeRemove,
		EventSource:  aws.String("aws:dynamodb"),
		EventVersion: aws.String("1.1"),
		UserIdentity: &streamtypes.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")},
		Dynamodb: &streamtypes.StreamRecord{
			ApproximateCreationDateTime: &at,
			Keys:                        map[string]streamtypes.AttributeValue{"aggregate_id": &streamtypes.AttributeValueMemberS{Value: "p1"}},
			OldImage:                    map[string]streamtypes.AttributeValue{"n": &streamtypes.AttributeValueMemberN{Value: "7"}},
			SequenceNumber:              aws.String("4000000000000000000001"),
			SizeBytes:                   aws.Int64(42),
			StreamViewType:              streamtypes.StreamViewTypeNewAndOldImages,
		},
	}
	got, err := streampoll.EventRecord(in, testARN)
	require.NoError(t, err)
	assert.Equal(t, events.DynamoDBEventRecord{
		AWSRegion: "us-east-1", EventID: "ev-1", EventName: "REMOVE", EventSource: "aws:dynamodb",
		EventVersion: "1.1", EventSourceArn: testARN,
		UserIdentity: &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"},
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: at},
			Keys:                        map[string]events.DynamoDBAttributeValue{"aggregate_id": events.NewStringAttribute("p1")},
			OldImage:                    map[string]events.DynamoDBAttributeValue{"n": events.NewNumberAttribute("7")},
			SequenceNumber:              "4000000000000000000001",
			SizeBytes:                   42,
			StreamViewType:              "NEW_AND_OLD_IMAGES",
		},
	}, got)
}

func TestEventRecordKeepsTheRecordWhenAnImageFails(t *testing.T) {
	t.Parallel()
	in := streamtypes.Record{
		EventName: streamtypes.OperationTypeInsert,
		Dynamodb: &streamtypes.StreamRecord{
			Keys:           map[string]streamtypes.AttributeValue{"aggregate_id": &streamtypes.AttributeValueMemberS{Value: "p1"}},
			NewImage:       map[string]streamtypes.AttributeValue{"x": &streamtypes.UnknownUnionMember{Tag: "Z"}},
			SequenceNumber: aws.String("42"),
		},
	}
	got, err := streampoll.EventRecord(in, testARN)
	require.ErrorIs(t, err, streams.ErrInvalidValue)
	assert.ErrorContains(t, err, "NewImage")
	assert.Nil(t, got.Change.NewImage)
	assert.Equal(t, "42", got.Change.SequenceNumber)
	assert.Equal(t, "INSERT", got.EventName)
	assert.Len(t, got.Change.Keys, 1)
}

func TestEventRecordWithoutStreamRecord(t *testing.T) {
	t.Parallel()
	got, err := streampoll.EventRecord(streamtypes.Record{EventID: aws.String("e")}, testARN)
	require.NoError(t, err)
	assert.Equal(t, "e", got.EventID)
	assert.Empty(t, got.Change.SequenceNumber)
}
