package app_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
)

func TestLoggerWritesJSONAtTheConfiguredLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := app.Logger(config.Common{LogLevel: slog.LevelWarn}, &buf)
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	assert.Equal(t, 1, strings.Count(buf.String(), "\n"))
	assert.Contains(t, buf.String(), `"msg":"shown","k":1`)
}

func TestMetricsNameTheFunction(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	rec, err := app.Metrics(config.Common{MetricsNamespace: "idemlambda/prod-eu"}, &out, config.NameGetProduct)
	require.NoError(t, err)
	assert.Equal(t, "getproduct", rec.Function())
}

func TestStoreOptionsCoverEverySetting(t *testing.T) {
	t.Parallel()
	opts := app.StoreOptions(config.Idempotency{Table: "i", Retention: time.Hour, Mode: config.ModeTransact, CacheSize: 10})
	assert.Len(t, opts, 2, "retention and cache; the mode picks Store.Execute or Store.Transact")
}

// Each assembler refuses to build a function without its dependencies,
// rather than one that fails at its first request.
func TestAssemblersRefuseMissingDependencies(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := app.CreateProduct(nil, config.CreateProduct{}, &out)
	assert.Error(t, err)
	_, err = app.GetProduct(nil, config.GetProduct{}, &out)
	assert.Error(t, err)
	_, err = app.GetSeller(nil, config.GetSeller{}, &out)
	assert.Error(t, err)
	_, err = app.SellerStats(nil, config.SellerStats{}, &out)
	assert.Error(t, err)
	_, err = app.OutboxRelay(nil, config.OutboxRelay{}, &out)
	assert.Error(t, err)
}

// The clients are built from Lambda's variables alone: region, the role's
// credentials, and the SDK's endpoint variable for the service.
func TestDynamoDBClientFromTheConfiguration(t *testing.T) {
	t.Parallel()
	a := config.AWS{Region: "eu-central-1", AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "token", Endpoint: "http://127.0.0.1:8000"}
	db, err := app.DynamoDB(a)
	require.NoError(t, err)
	o := db.Options()
	assert.Equal(t, "eu-central-1", o.Region)
	require.NotNil(t, o.BaseEndpoint)
	assert.Equal(t, "http://127.0.0.1:8000", *o.BaseEndpoint)
	creds, err := o.Credentials.Retrieve(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"AKID", "secret", "token"}, []string{creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken})

	a.Endpoint = ""
	db, err = app.DynamoDB(a)
	require.NoError(t, err)
	assert.Nil(t, db.Options().BaseEndpoint, "no endpoint: the regional one")

	_, err = app.AWSConfig(config.AWS{AccessKeyID: "a", SecretAccessKey: "s"})
	assert.ErrorContains(t, err, "AWS_REGION")
	_, err = app.AWSConfig(config.AWS{Region: "us-east-1"})
	assert.ErrorContains(t, err, "AWS_ACCESS_KEY_ID")
}
