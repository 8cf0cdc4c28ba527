// Command sellerstats is the seller statistics consumer, behind the SQS
// queue the EventBridge rule for ProductCreated fills: it reads its
// configuration, builds the DynamoDB client and the consumer
// (internal/sellers), and hands the consumer to the Lambda runtime.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/sellers"
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
	client, err := ddb.NewClient(ctx)
	if err != nil {
		return err
	}
	h, err := sellers.NewSellerStats(client, cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.StartWithOptions(h.Handle, lambda.WithContext(ctx))
	return nil
}
