// Package getseller assembles the getseller function (GET /sellers/{id})
// around its DynamoDB client: the seller statistics reader, the handler,
// its request log and its metrics.
package getseller

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/sellers/sellershttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// New assembles getseller on db, its log and metrics lines written to
// rt.Out (the function's stdout).
func New(db *dynamodb.Client, cfg config.GetSeller, rt app.Runtime) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || rt.Out == nil {
		return nil, errors.New("getseller: needs a DynamoDB client and an output")
	}
	reader, err := sellers.NewReader(db, cfg.SellersTable)
	if err != nil {
		return nil, err
	}
	rec, err := app.Metrics(cfg.Common, rt.Out, config.NameGetSeller)
	if err != nil {
		return nil, err
	}
	return api.Function(app.Logger(cfg.Common, rt.Out), rec, rt.Tracing, "get seller", sellershttp.NewHandler(reader).Serve), nil
}
