// Command createproduct is the POST /products Lambda function: its
// configuration, the function internal/app assembles from it, and the
// Lambda runtime.
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
		fmt.Fprintln(os.Stderr, "createproduct:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.LoadCreateProduct(os.Getenv)
	if err != nil {
		return err
	}
	h, err := app.NewCreateProduct(cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return nil
}
