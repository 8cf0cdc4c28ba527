package outboxrelay_test

import (
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/config"
)

func load(t *testing.T, env map[string]string) config.OutboxRelay {
	t.Helper()
	cfg, err := config.LoadOutboxRelay(func(k string) string { return env[k] })
	require.NoError(t, err)
	return cfg
}

// The relay is assembled as its main does, from its configuration, without
// calling AWS: the first call is the first batch's PutEvents, to the
// endpoint of the SDK's EventBridge variable.
func TestTheRelayAssemblesFromItsConfiguration(t *testing.T) {
	t.Parallel()
	cfg := load(t, map[string]string{
		"EVENT_BUS_NAME": "bus", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s",
		"AWS_ENDPOINT_URL_EVENTBRIDGE": "http://127.0.0.1:1",
	})
	client, err := app.Client(cfg.AWS, nil, eventbridge.NewFromConfig)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:1", *client.Options().BaseEndpoint)
	pub, err := outboxrelay.Bridge(client, cfg)
	require.NoError(t, err)
	h, err := outboxrelay.New(pub, cfg, app.Runtime{Out: io.Discard})
	require.NoError(t, err)
	assert.NotNil(t, h)

	_, err = outboxrelay.New(nil, cfg, app.Runtime{Out: io.Discard})
	assert.Error(t, err, "no publisher")
}
