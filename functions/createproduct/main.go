// Command createproduct is the POST /products Lambda function. It only
// wires configuration; internal/api serves the request.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/wire"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "createproduct:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	s, err := wire.Load(os.Getenv, config.CreateProduct)
	if err != nil {
		return err
	}
	log := wire.Logger(os.Stdout, s.LogLevel)
	client, _, err := ddb.NewClient(ctx)
	if err != nil {
		return err
	}
	h, err := wire.CreateHandler(client, s, log)
	if err != nil {
		return err
	}
	lambda.Start(h.Handle)
	return nil
}
