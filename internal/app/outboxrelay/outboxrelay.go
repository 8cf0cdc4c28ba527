// Package outboxrelay assembles the outboxrelay function from the
// environment. It is apart from package app so that only the relay's
// bootstrap links the EventBridge client.
package outboxrelay

import (
	"context"
	"fmt"
	"io"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/relay"
)

// New assembles outboxrelay publishing to the configured bus, through the
// EventBridge endpoint the environment names.
func New(ctx context.Context, cfg config.OutboxRelay, out io.Writer) (*relay.Handler, error) {
	// The SDK's default chain supplies region and credentials;
	// AWS_ENDPOINT_URL_EVENTBRIDGE points it at an emulator.
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	pub, err := bridge.New(eventbridge.NewFromConfig(awsCfg), bridge.Config{Bus: cfg.EventBusName, Source: cfg.EventSource})
	if err != nil {
		return nil, err
	}
	return app.OutboxRelay(pub, cfg, out)
}
