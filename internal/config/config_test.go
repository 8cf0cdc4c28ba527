package config_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/config"
)

func TestEnvDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	vals := map[string]string{"PRODUCTS_TABLE": "p", "LOG_LEVEL": "debug"}
	e := config.New(func(k string) string { return vals[k] })
	assert.Equal(t, "p", e.String(config.ProductsTable))
	assert.Equal(t, "idemlambda.products", e.String(config.EventSource))
	assert.Equal(t, 24*time.Hour, e.Duration(config.IdempotencyRetention))
	assert.Equal(t, slog.LevelDebug, e.Level(config.LogLevel))
	require.NoError(t, e.Err())

	vals = map[string]string{"IDEMPOTENCY_RETENTION": "-1h", "LOG_LEVEL": "loud"}
	e = config.New(func(k string) string { return vals[k] })
	e.String(config.OutboxTable)
	e.Duration(config.IdempotencyRetention)
	e.Level(config.LogLevel)
	err := e.Err()
	require.ErrorIs(t, err, config.ErrInvalid)
	for _, want := range []string{"OUTBOX_TABLE is required", "IDEMPOTENCY_RETENTION=\"-1h\"", "LOG_LEVEL=\"loud\""} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestEveryFunctionHasVars(t *testing.T) {
	t.Parallel()
	for _, f := range config.Functions() {
		vars := config.Vars(f)
		require.NotEmpty(t, vars, f)
		names := map[string]bool{}
		for _, v := range vars {
			assert.False(t, names[v.Name], "%s lists %s twice", f, v.Name)
			names[v.Name] = true
			assert.NotEmpty(t, v.Doc, v.Name)
		}
		assert.True(t, names["LOG_LEVEL"], f)
	}
	assert.Nil(t, config.Vars("nope"))
}

func TestSDKVarsAreTheSDKsEndpointVariables(t *testing.T) {
	t.Parallel()
	for _, f := range config.Functions() {
		sdk := config.SDKVars(f)
		require.Len(t, sdk, 1, f)
		for _, v := range sdk {
			assert.Regexp(t, `^AWS_ENDPOINT_URL_[A-Z_]+$`, v.Name, f)
			assert.NotEmpty(t, v.Doc, v.Name)
			for _, own := range config.Vars(f) {
				assert.NotEqual(t, own.Name, v.Name, "%s lists %s in both Vars and SDKVars", f, v.Name)
			}
		}
	}
	assert.Equal(t, []config.Var{config.EndpointDynamoDB}, config.SDKVars(config.CreateProduct))
	assert.Equal(t, []config.Var{config.EndpointDynamoDB}, config.SDKVars(config.GetProduct))
	assert.Equal(t, []config.Var{config.EndpointEventBridge}, config.SDKVars(config.OutboxRelay))
	assert.Nil(t, config.SDKVars("nope"))
}
