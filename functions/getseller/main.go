// Command getseller is the GET /sellers/{id} Lambda function: its
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
		fmt.Fprintln(os.Stderr, "getseller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.LoadGetSeller(os.Getenv)
	if err != nil {
		return err
	}
	h, err := app.NewGetSeller(cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return nil
}
