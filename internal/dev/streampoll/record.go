package streampoll

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/idemlambda/idemlambda/internal/streams"
)

// EventRecord converts a record read with GetRecords to the record Lambda
// would deliver for it from the stream streamARN. An image that cannot be
// converted is left out (nil) and reported in the joined error, so the
// caller can still deliver the record and let the handler count it as
// undecodable, as it would an image it cannot parse.
func EventRecord(r streamtypes.Record, streamARN string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(r.AwsRegion),
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    aws.ToString(r.EventSource),
		EventVersion:   aws.ToString(r.EventVersion),
		EventSourceArn: streamARN,
	}
	if r.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{
			Type:        aws.ToString(r.UserIdentity.Type),
			PrincipalID: aws.ToString(r.UserIdentity.PrincipalId),
		}
	}
	if r.Dynamodb == nil {
		return out, nil
	}
	d := r.Dynamodb
	out.Change = events.DynamoDBStreamRecord{
		SequenceNumber: aws.ToString(d.SequenceNumber),
		SizeBytes:      aws.ToInt64(d.SizeBytes),
		StreamViewType: string(d.StreamViewType),
	}
	if d.ApproximateCreationDateTime != nil {
		out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	var errs []error
	image := func(name string, in map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
		img, err := streams.StreamImage(in)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return img
	}
	out.Change.Keys = image("Keys", d.Keys)
	out.Change.NewImage = image("NewImage", d.NewImage)
	out.Change.OldImage = image("OldImage", d.OldImage)
	return out, errors.Join(errs...)
}
