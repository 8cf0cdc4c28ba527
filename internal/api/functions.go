package api

import (
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// NewCreateProduct assembles the createproduct function from its
// configuration: the idempotency store, the product service, the handler
// and its request log. The Lambda main and make run both call it; opts
// add to (and override) the configured store options.
func NewCreateProduct(db *dynamodb.Client, cfg config.CreateProduct, log *slog.Logger, opts ...idem.Option) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || log == nil {
		return nil, errors.New("api: createproduct needs a DynamoDB client and a logger")
	}
	// The release must finish inside the handler's deadline margin.
	opts = append(append(cfg.Idempotency.Options(), idem.WithReleaseTimeout(DeadlineMargin/2)), opts...)
	store, err := idem.NewStore(db, cfg.Idempotency.Table, opts...)
	if err != nil {
		return nil, err
	}
	svc, err := product.NewService(product.Config{
		Store: store, ProductsTable: cfg.ProductsTable, OutboxTable: cfg.OutboxTable, EventSource: cfg.EventSource,
	})
	if err != nil {
		return nil, err
	}
	return Lambda(Logged(log, "create product", NewCreateHandler(svc).Serve)), nil
}

// NewGetProduct assembles the getproduct function from its configuration.
func NewGetProduct(db *dynamodb.Client, cfg config.GetProduct, log *slog.Logger) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || log == nil {
		return nil, errors.New("api: getproduct needs a DynamoDB client and a logger")
	}
	reader, err := product.NewReader(db, cfg.ProductsTable)
	if err != nil {
		return nil, err
	}
	return Lambda(Logged(log, "get product", NewGetHandler(reader).Serve)), nil
}
