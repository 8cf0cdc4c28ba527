// Package createproduct assembles the createproduct function (POST
// /products) around its DynamoDB client: the idempotency store, the
// product service, the handler, its request log and its metrics.
package createproduct

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/globaltable"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
)

// New assembles createproduct on db (its callers checked against the
// callers table: internal/access), its log and metrics lines written to
// rt.Out (the function's stdout). opts add to, and override, the configured
// store options. The store is told its table's kind (cfg.Global), so it
// asks no DescribeTable, which the role does not grant; on a global table
// with eventual consistency (MREC) it claims each key in the home Region,
// through a client of each Region's replica made from db's options with
// that Region: db's endpoint resolver must resolve every Region's (the
// SDK's default does; make run's two local Regions route each to its own
// store).
func New(db *dynamodb.Client, cfg config.CreateProduct, rt app.Runtime, opts ...idem.Option) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || rt.Out == nil {
		return nil, errors.New("createproduct: needs a DynamoDB client and an output")
	}
	global, err := globaltable.StoreOptions(cfg.Global, cfg.AWS.Region, func(region string) (idem.API, error) {
		return dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.Region = region }), nil
	})
	if err != nil {
		return nil, err
	}
	// The release must finish inside the handler's deadline margin.
	opts = append(append([]idem.Option{
		idem.WithRetention(cfg.Idempotency.Retention), idem.WithCache(cfg.Idempotency.CacheSize, 0),
		idem.WithReleaseTimeout(api.DeadlineMargin / 2),
		// The idempotency phases as spans in the function's trace
		// (none, and no cost, when tracing is off).
		idem.WithTrace(idemotel.NewTrace(rt.Tracing.Provider())),
	}, global...), opts...)
	store, err := idem.NewStore(db, cfg.Idempotency.Table, opts...)
	if err != nil {
		return nil, err
	}
	products, err := product.NewService(product.Config{
		ProductsTable: cfg.ProductsTable, OutboxTable: cfg.OutboxTable, EventSource: cfg.EventSource, Tracing: rt.Tracing,
		// The outbox item names the Region whose replica takes it (the
		// key's home on MREC, else this one), so that only that Region's
		// relay publishes its event.
		Origin: func(ctx context.Context) string {
			if region, _, ok := idemglobal.WriterOf(ctx); ok {
				return region
			}
			return cfg.AWS.Region
		},
	})
	if err != nil {
		return nil, err
	}
	execute := store.Execute
	if cfg.Idempotency.Mode == config.ModeTransact {
		execute = store.Transact
	}
	guard, err := access.NewGuard(access.Config{
		Table: cfg.CallersTable, Limit: access.Limit{Creates: cfg.Limit.Creates, Window: cfg.Limit.Window},
	})
	if err != nil {
		return nil, err
	}
	creator, err := api.NewProductCreator(execute, products, guard)
	if err != nil {
		return nil, err
	}
	rec, err := app.Metrics(cfg.Common, rt.Out, config.NameCreateProduct)
	if err != nil {
		return nil, err
	}
	handler, err := api.NewCreateHandler(creator, store)
	if err != nil {
		return nil, err
	}
	return api.Function(app.Logger(cfg.Common, rt.Out), rec, rt.Tracing, "create product", handler.Serve), nil
}
