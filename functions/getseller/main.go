// Command getseller is the GET /sellers/{id} Lambda function: it reads
// its configuration, builds the DynamoDB client and the handler
// (internal/api), and hands the handler to the Lambda runtime.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "getseller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.LoadGetSeller(os.Getenv)
	if err != nil {
		return err
	}
	client, err := ddb.NewClient(ctx)
	if err != nil {
		return err
	}
	h, err := api.NewGetSeller(client, cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return nil
}
