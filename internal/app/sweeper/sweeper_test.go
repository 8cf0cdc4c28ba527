package sweeper_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/sweeper"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
)

// The sweeper is assembled as its main does, from its configuration,
// calls the endpoint of the SDK's DynamoDB variable, and, run, deletes
// an expired window counter and keeps a grant; mrsc's configuration
// (three Regions, this one among them) assembles too.
func TestTheSweeperAssemblesFromItsConfiguration(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	vars := map[string]string{
		"IDEMPOTENCY_TABLE": env.Tables.Idempotency, "OUTBOX_TABLE": env.Tables.Outbox, "CALLERS_TABLE": env.Tables.Callers,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "AWS_ENDPOINT_URL_DYNAMODB": env.URL,
	}
	cfg, err := config.LoadSweeper(func(k string) string { return vars[k] })
	require.NoError(t, err)
	db, err := app.Client(cfg.AWS, nil, dynamodb.NewFromConfig, ddb.CountPerContext)
	require.NoError(t, err)
	if env.URL != "" {
		assert.Equal(t, env.URL, *db.Options().BaseEndpoint)
	}
	out := &logbuf.Buffer{}
	h, err := sweeper.New(env.Client, cfg, app.Runtime{Out: out})
	require.NoError(t, err)

	past := time.Now().Add(-time.Minute).Unix()
	for _, id := range []string{"window|1|c|0", "grant|c|0"} {
		_, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Callers), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: id}, "expires_at": &types.AttributeValueMemberN{Value: itoa(past)},
		}})
		require.NoError(t, err)
	}
	res, err := h.Handle(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.Windows.Deleted)
	left, err := env.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(env.Tables.Callers)})
	require.NoError(t, err)
	require.Len(t, left.Items, 1)
	assert.Equal(t, "grant|c|0", left.Items[0]["id"].(*types.AttributeValueMemberS).Value)
	lines := out.Metrics(t)
	require.Len(t, lines, 1)
	assert.Equal(t, config.NameSweeper, lines[0]["Function"])

	vars["IDEMPOTENCY_TABLE_KIND"], vars["REPLICA_REGIONS"] = "mrsc", "us-east-1,us-east-2,us-west-2"
	cfg, err = config.LoadSweeper(func(k string) string { return vars[k] })
	require.NoError(t, err)
	_, err = sweeper.New(env.Client, cfg, app.Runtime{Out: out})
	require.NoError(t, err)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// On mrec the tables have TTL and createproduct's records live in their
// keys' home: a sweep run in another Region (the runbook's manual invoke)
// would delete a record its replica shows expired while the home has
// claimed the key again, and last writer wins would let that delete
// remove the new claim. pkg/idem refuses Sweep to a store with homes for
// that reason; the sweeper, whose store has none, must refuse mrec
// itself rather than run.
func TestTheSweeperRefusesMREC(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	vars := map[string]string{
		"IDEMPOTENCY_TABLE": env.Tables.Idempotency, "OUTBOX_TABLE": env.Tables.Outbox, "CALLERS_TABLE": env.Tables.Callers,
		"AWS_REGION": "us-east-1", "IDEMPOTENCY_TABLE_KIND": "mrec", "REPLICA_REGIONS": "us-east-1,eu-west-1",
	}
	cfg, err := config.LoadSweeper(func(k string) string { return vars[k] })
	require.NoError(t, err)
	_, err = sweeper.New(env.Client, cfg, app.Runtime{Out: &logbuf.Buffer{}})
	require.Error(t, err, "a sweeper assembled on mrec")
	assert.ErrorContains(t, err, "mrec")
}
