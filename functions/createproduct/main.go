// Command createproduct is the POST /products Lambda function: it reads
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
		fmt.Fprintln(os.Stderr, "createproduct:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.LoadCreateProduct(os.Getenv)
	if err != nil {
		return err
	}
	client, err := ddb.NewClient(ctx)
	if err != nil {
		return err
	}
	h, err := api.NewCreateProduct(client, cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return nil
}
