// Command sellerstats is the seller statistics consumer, behind the SQS
// queue the EventBridge rule for ProductCreated fills: its configuration,
// the consumer internal/app assembles from it, and the Lambda runtime.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "sellerstats:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.LoadSellerStats(os.Getenv)
	if err != nil {
		return err
	}
	h, err := app.NewSellerStats(cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.StartWithOptions(h.Handle, lambda.WithContext(ctx))
	return nil
}
