package bridge_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
)

// TestEventBridgePublisherAgainstEndpoint sends real PutEvents requests
// through the SDK to the endpoint AWS_ENDPOINT_URL_EVENTBRIDGE, else
// AWS_ENDPOINT_URL, names (moto in make e2e); without one it skips.
func TestEventBridgePublisherAgainstEndpoint(t *testing.T) {
	t.Parallel()
	a, err := config.LoadAWS(os.Getenv, config.EndpointEventBridge)
	require.NoError(t, err)
	if a.Endpoint == "" {
		t.Skip("set AWS_ENDPOINT_URL_EVENTBRIDGE or AWS_ENDPOINT_URL (moto, make e2e) to publish to a real EventBridge API")
	}
	ctx := t.Context()
	client, err := app.Client(a, nil, eventbridge.NewFromConfig)
	require.NoError(t, err)
	bus := fmt.Sprintf("outbox-test-%d", time.Now().UnixNano())
	_, err = client.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(bus)})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = client.DeleteEventBus(t.Context(), &eventbridge.DeleteEventBusInput{Name: aws.String(bus)})
	})
	p, err := bridge.New(client, bridge.Config{Bus: bus, Source: "idemlambda.products"})
	require.NoError(t, err)
	res, err := p.Publish(ctx, newEvents(t, 25))
	require.NoError(t, err)
	assert.Equal(t, 25, res.Published)
}
