package idemtest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// Hole 4 of issue 36: UpdateTimeToLive as DynamoDB answers it (API
// Reference, UpdateTimeToLive: "It can take up to one hour for the change
// to fully process. Any additional UpdateTimeToLive calls for the same
// table during this one hour duration result in a ValidationException").
// A setting the table already has is refused whenever it comes, and
// before the hour's rule; a table that does not exist is
// ResourceNotFoundException, for DescribeTimeToLive too.
func TestTimeToLiveAsDynamoDBRefusesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := idemtest.NewServer().HandlerClient()
		ttl := func(table, attr string, on bool) error {
			_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(on)}})
			return err
		}
		status := func() string {
			out, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("t")})
			must.NoError(t, err)
			return string(out.TimeToLiveDescription.TimeToLiveStatus) + " " + aws.ToString(out.TimeToLiveDescription.AttributeName)
		}
		var notFound *types.ResourceNotFoundException
		check.ErrorAs(t, ttl("missing", "expires_at", true), &notFound, "UpdateTimeToLive on a table that does not exist")
		_, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("missing")})
		check.ErrorAs(t, err, &notFound, "DescribeTimeToLive on a table that does not exist")

		must.NoError(t, createTable(ctx, db, "t"))
		refused(t, ttl("t", "expires_at", false), "TimeToLive is already disabled")
		must.NoError(t, ttl("t", "expires_at", true))
		check.Equal(t, "ENABLED expires_at", status())
		refused(t, ttl("t", "expires_at", true), "TimeToLive is already enabled")
		refused(t, ttl("t", "other", true), "TimeToLive is active on a different AttributeName")
		refused(t, ttl("t", "expires_at", false), "Time to live has been modified multiple times within a fixed interval")

		time.Sleep(time.Hour - time.Second)
		refused(t, ttl("t", "expires_at", false), "Time to live has been modified multiple times within a fixed interval")
		time.Sleep(time.Second)
		must.NoError(t, ttl("t", "expires_at", false), "an hour after the last change")
		check.Equal(t, "DISABLED ", status())
		refused(t, ttl("t", "expires_at", true), "Time to live has been modified multiple times within a fixed interval")

		// A table created anew is another table: no setting, no interval.
		_, err = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("t")})
		must.NoError(t, err)
		must.NoError(t, createTable(ctx, db, "t"))
		must.NoError(t, ttl("t", "expires_at", true))
	})
}
