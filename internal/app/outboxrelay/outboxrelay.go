// Package outboxrelay assembles the outboxrelay function with its
// EventBridge client. It is apart from package app so that only the relay's
// bootstrap links the EventBridge client.
package outboxrelay

import (
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/relay"
)

// New assembles outboxrelay publishing to the configured bus with the
// EventBridge client its configuration describes.
func New(cfg config.OutboxRelay, out io.Writer) (*relay.Handler, error) {
	awsCfg, err := app.AWSConfig(cfg.AWS)
	if err != nil {
		return nil, err
	}
	client := eventbridge.NewFromConfig(awsCfg, func(o *eventbridge.Options) {
		if cfg.AWS.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.AWS.Endpoint)
		}
	})
	pub, err := bridge.New(client, bridge.Config{Bus: cfg.EventBusName, Source: cfg.EventSource})
	if err != nil {
		return nil, err
	}
	return app.OutboxRelay(pub, cfg, out)
}
