// Command outboxrelay is the Lambda function behind the outbox table's
// DynamoDB stream: it publishes each new outbox event to EventBridge.
// main only wires configuration; internal/relay does the work.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/relay"
	"github.com/idemlambda/idemlambda/internal/wire"
)

func main() {
	h, err := setup(context.Background(), os.Getenv)
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("outboxrelay: startup failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// setup reads the environment (config.Vars(config.OutboxRelay)) and builds
// the handler. The SDK's default chain supplies region and credentials, and
// AWS_ENDPOINT_URL_EVENTBRIDGE points it at an emulator.
func setup(ctx context.Context, getenv func(string) string) (*relay.Handler, error) {
	env := config.New(getenv)
	bus := env.String(config.EventBusName)
	source := env.String(config.EventSource)
	level := env.Level(config.LogLevel)
	if err := env.Err(); err != nil {
		return nil, err
	}
	log := wire.Logger(os.Stdout, level)
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	pub, err := outbox.NewEventBridgePublisher(eventbridge.NewFromConfig(cfg),
		outbox.EventBridgeConfig{Bus: bus, Source: source})
	if err != nil {
		return nil, err
	}
	return relay.NewHandler(pub, log), nil
}
