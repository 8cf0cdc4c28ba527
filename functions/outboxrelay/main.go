// Command outboxrelay is the Lambda function behind the outbox table's
// DynamoDB stream: its configuration, the relay internal/app/outboxrelay
// assembles from it, and the Lambda runtime.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/config"
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
	h, err := outboxrelay.New(cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.StartWithOptions(h.Handle, lambda.WithContext(ctx))
	return nil
}
