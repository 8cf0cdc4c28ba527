// Command outboxrelay is the Lambda function behind the outbox table's
// DynamoDB stream: it reads its configuration, builds the EventBridge
// client and the relay handler (internal/relay), and hands the handler to
// the Lambda runtime.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/relay"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "outboxrelay:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.LoadOutboxRelay(os.Getenv)
	if err != nil {
		return err
	}
	// The SDK's default chain supplies region and credentials;
	// AWS_ENDPOINT_URL_EVENTBRIDGE points it at an emulator.
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load aws config: %w", err)
	}
	h, err := relay.NewEventBridge(eventbridge.NewFromConfig(awsCfg), cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.StartWithOptions(h.Handle, lambda.WithContext(ctx))
	return nil
}
