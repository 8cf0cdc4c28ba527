package api

import (
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// NewCreateProduct assembles the createproduct function from its
// configuration: the idempotency store, the product service, the handler,
// its request log and its metrics, both written to out (the function's
// stdout). The Lambda main and make run both call it; opts add to (and
// override) the configured store options.
func NewCreateProduct(db *dynamodb.Client, cfg config.CreateProduct, out io.Writer, opts ...idem.Option) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || out == nil {
		return nil, errors.New("api: createproduct needs a DynamoDB client and an output")
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
	return decorate(out, cfg.Common, config.NameCreateProduct, "create product", NewCreateHandler(svc).Serve)
}

// NewGetProduct assembles the getproduct function from its configuration.
func NewGetProduct(db *dynamodb.Client, cfg config.GetProduct, out io.Writer) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || out == nil {
		return nil, errors.New("api: getproduct needs a DynamoDB client and an output")
	}
	reader, err := product.NewReader(db, cfg.ProductsTable)
	if err != nil {
		return nil, err
	}
	return decorate(out, cfg.Common, config.NameGetProduct, "get product", NewGetHandler(reader).Serve)
}

// decorate wraps a function's handler in its request log and its metrics,
// both written to out (the function's stdout), and adapts it to Lambda.
func decorate(out io.Writer, c config.Common, function, msg string, h Handler) (idemhttp.APIGatewayV2Handler, error) {
	rec, err := c.Metrics(out, function)
	if err != nil {
		return nil, err
	}
	return Lambda(Logged(c.Logger(out), msg, Measured(rec, h))), nil
}
