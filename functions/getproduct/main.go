// Command getproduct is the GET /products/{id} Lambda function. It only wires
// configuration; internal/api serves the request.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/wire"
)

func main() {
	if err := wire.Serve(context.Background(), config.GetProduct, build); err != nil {
		fmt.Fprintln(os.Stderr, "getproduct:", err)
		os.Exit(1)
	}
}

func build(c *dynamodb.Client, s wire.Settings, log *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	h, err := wire.GetHandler(c, s, log)
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}
