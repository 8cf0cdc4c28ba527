// Package getproduct assembles the getproduct function (GET
// /products/{id}) around its DynamoDB client: the product reader, the
// handler, its request log and its metrics.
package getproduct

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// New assembles getproduct on db, its log and metrics lines written to
// rt.Out (the function's stdout).
func New(db *dynamodb.Client, cfg config.GetProduct, rt app.Runtime) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || rt.Out == nil {
		return nil, errors.New("getproduct: needs a DynamoDB client and an output")
	}
	reader, err := product.NewReader(db, cfg.ProductsTable)
	if err != nil {
		return nil, err
	}
	rec, err := app.Metrics(cfg.Common, rt.Out, config.NameGetProduct)
	if err != nil {
		return nil, err
	}
	return api.Function(app.Logger(cfg.Common, rt.Out), rec, rt.Tracing, "get product", api.NewGetHandler(reader).Serve), nil
}
