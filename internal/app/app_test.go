package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/config"
)

func TestLoggerWritesJSONAtTheConfiguredLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := Logger(config.Common{LogLevel: slog.LevelWarn}, &buf)
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	assert.Equal(t, 1, strings.Count(buf.String(), "\n"))
	assert.Contains(t, buf.String(), `"msg":"shown","k":1`)
}

func TestMetricsNameTheFunction(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	rec, err := Metrics(config.Common{MetricsNamespace: "idemlambda/prod-eu"}, &out, config.NameGetProduct)
	require.NoError(t, err)
	assert.Equal(t, "getproduct", rec.Function())
}

// Every client, whatever its service, is built from Lambda's variables
// alone: the region, the role's credentials, and the endpoint the
// service's SDK variable names (none: the regional endpoint).
func TestClientsFromTheConfiguration(t *testing.T) {
	t.Parallel()
	a := config.AWS{Region: "eu-central-1", AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "token", Endpoint: "http://127.0.0.1:8000"}
	db, err := Client(a, nil, dynamodb.NewFromConfig)
	require.NoError(t, err)
	o := db.Options()
	assert.Equal(t, "eu-central-1", o.Region)
	require.NotNil(t, o.BaseEndpoint)
	assert.Equal(t, "http://127.0.0.1:8000", *o.BaseEndpoint)
	creds, err := o.Credentials.Retrieve(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"AKID", "secret", "token"}, []string{creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken})

	streams, err := Client(a, nil, dynamodbstreams.NewFromConfig)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8000", *streams.Options().BaseEndpoint)
	bus, err := Client(a, nil, eventbridge.NewFromConfig)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8000", *bus.Options().BaseEndpoint)

	counted := false
	_, err = Client(a, nil, dynamodb.NewFromConfig, func(*dynamodb.Options) { counted = true })
	require.NoError(t, err)
	assert.True(t, counted, "the caller's options apply")

	a.Endpoint = ""
	db, err = Client(a, nil, dynamodb.NewFromConfig)
	require.NoError(t, err)
	assert.Nil(t, db.Options().BaseEndpoint, "no endpoint: the regional one")

	_, err = Client(config.AWS{AccessKeyID: "a", SecretAccessKey: "s"}, nil, dynamodb.NewFromConfig)
	assert.ErrorContains(t, err, "AWS_REGION")
	_, err = Client(config.AWS{Region: "us-east-1"}, nil, eventbridge.NewFromConfig)
	assert.ErrorContains(t, err, "AWS_ACCESS_KEY_ID")
}

// A variable of another process (make run's shell, say) cannot move a
// client off the endpoint it was built with: the SDK reads no
// configuration source beside the config.AWS it is given.
func TestTheEnvironmentDoesNotMoveAClient(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:2")
	db, err := Client(config.AWS{Region: "us-east-1", AccessKeyID: "a", SecretAccessKey: "s", Endpoint: "http://127.0.0.1:8000"}, nil, dynamodb.NewFromConfig)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8000", *db.Options().BaseEndpoint)
}

// A main's start: the configuration read through getenv, then the
// handler built from it, writing to the function's stdout; either's error
// stops it.
func TestStartLoadsThenBuilds(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PRODUCTS_TABLE": "p"}
	var out bytes.Buffer
	h, err := start(config.NameGetProduct, config.LoadGetProduct, func(cfg config.GetProduct, rt Runtime) (any, error) {
		assert.Equal(t, "p", cfg.ProductsTable)
		assert.Same(t, &out, rt.Out)
		assert.Nil(t, rt.Tracing, "no exporter: nothing traced")
		return "handler", nil
	}, func(k string) string { return env[k] }, &out)
	require.NoError(t, err)
	assert.Equal(t, "handler", h, "no exporter: the handler itself, nothing to flush")

	_, err = start(config.NameGetProduct, config.LoadGetProduct, func(config.GetProduct, Runtime) (any, error) {
		t.Fatal("built without a configuration")
		return nil, nil
	}, func(string) string { return "" }, &out)
	assert.ErrorIs(t, err, config.ErrInvalid)

	boom := errors.New("boom")
	_, err = start(config.NameGetProduct, config.LoadGetProduct, func(config.GetProduct, Runtime) (any, error) { return nil, boom }, func(k string) string { return env[k] }, &out)
	assert.ErrorIs(t, err, boom)

	// An exporter: the function traces, and its handler flushes.
	env["OTEL_TRACES_EXPORTER"] = "console"
	h, err = start(config.NameGetProduct, config.LoadGetProduct, func(_ config.GetProduct, rt Runtime) (any, error) {
		assert.True(t, rt.Tracing.On())
		return func(context.Context) error { return nil }, nil
	}, func(k string) string { return env[k] }, &out)
	require.NoError(t, err)
	assert.Implements(t, (*lambda.Handler)(nil), h)
}

// A client built from what a loader read (config.LoadAWS) calls the
// endpoint the SDK's own loader (config.LoadDefaultConfig) would, in every
// combination of the SDK's endpoint variables: the service's variable,
// else AWS_ENDPOINT_URL, else the regional endpoint, both ignored under
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true; a variable set to "" counts as
// unset. An emulator that injects AWS_ENDPOINT_URL alone (MiniStack)
// moves every client.
func TestClientsResolveEndpointsAsTheSDKsLoader(t *testing.T) {
	noFiles := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", noFiles)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", noFiles)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "eu-central-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "a")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	type endpoints struct{ ours, sdks *string }
	services := map[config.Var]func(t *testing.T, a config.AWS) endpoints{
		config.EndpointDynamoDB: func(t *testing.T, a config.AWS) endpoints {
			ours, err := Client(a, nil, dynamodb.NewFromConfig)
			require.NoError(t, err)
			return endpoints{ours.Options().BaseEndpoint, dynamodb.NewFromConfig(sdkConfig(t)).Options().BaseEndpoint}
		},
		config.EndpointDynamoDBStreams: func(t *testing.T, a config.AWS) endpoints {
			ours, err := Client(a, nil, dynamodbstreams.NewFromConfig)
			require.NoError(t, err)
			return endpoints{ours.Options().BaseEndpoint, dynamodbstreams.NewFromConfig(sdkConfig(t)).Options().BaseEndpoint}
		},
		config.EndpointEventBridge: func(t *testing.T, a config.AWS) endpoints {
			ours, err := Client(a, nil, eventbridge.NewFromConfig)
			require.NoError(t, err)
			return endpoints{ours.Options().BaseEndpoint, eventbridge.NewFromConfig(sdkConfig(t)).Options().BaseEndpoint}
		},
	}
	const unset = "<unset>"
	set := func(name, v string) {
		t.Setenv(name, "") // restored when the test ends
		if v == unset {
			require.NoError(t, os.Unsetenv(name))
		} else {
			require.NoError(t, os.Setenv(name, v))
		}
	}
	str := func(p *string) string {
		if p == nil {
			return "(regional)"
		}
		return *p
	}
	cases := 0
	for service, get := range services {
		for _, own := range []string{unset, "", "http://127.0.0.1:1"} {
			for _, all := range []string{unset, "", "http://127.0.0.1:2"} {
				for _, ignore := range []string{unset, "", "true", "TRUE", "false", "False"} {
					set(service.Name, own)
					set(config.EndpointURL.Name, all)
					set(config.IgnoreConfiguredEndpointURLs.Name, ignore)
					a, err := config.LoadAWS(os.Getenv, service)
					require.NoError(t, err)
					e := get(t, a)
					assert.Equal(t, str(e.sdks), str(e.ours), "%s=%q AWS_ENDPOINT_URL=%q AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=%q",
						service.Name, own, all, ignore)
					cases++
				}
			}
		}
		// The SDK's loader refuses a flag that is neither true nor false;
		// so does ours.
		set(config.IgnoreConfiguredEndpointURLs.Name, "yes")
		_, sdkErr := awsconfig.LoadDefaultConfig(t.Context())
		require.Error(t, sdkErr)
		_, err := config.LoadAWS(os.Getenv, service)
		assert.ErrorIs(t, err, config.ErrInvalid, service.Name)
	}
	// AWS_ENDPOINT_URL alone, as an emulator injects it: every client there.
	set(config.IgnoreConfiguredEndpointURLs.Name, unset)
	set(config.EndpointURL.Name, "http://127.0.0.1:4566")
	for service, get := range services {
		set(service.Name, unset)
		a, err := config.LoadAWS(os.Getenv, service)
		require.NoError(t, err)
		assert.Equal(t, "http://127.0.0.1:4566", str(get(t, a).ours), service.Name)
	}
	t.Logf("%d combinations of the endpoint variables, ours and the SDK's loader alike", cases)
}

func sdkConfig(t *testing.T) aws.Config {
	t.Helper()
	cfg, err := awsconfig.LoadDefaultConfig(t.Context())
	require.NoError(t, err)
	return cfg
}
