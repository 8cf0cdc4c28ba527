// Package app assembles each function from its configuration: the clients,
// the stores, the services, the handler, and the logging and metrics
// decorators around it. It is the one place that knows how the pieces fit;
// the Lambda mains, the local runner (make run), the benchmarks and the
// end-to-end tests all build their functions here, so each runs the same
// assembly.
//
// Each function has two constructors: New<Function> builds the AWS clients
// its configuration describes, as a Lambda main needs, and <Function> takes them
// (or, for the relay, its publisher) as arguments, for the local runner and
// tests. Assembling outboxrelay from the environment lives in
// internal/app/outboxrelay, so that only the relay links the EventBridge
// client.
package app

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/relay"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// AWSConfig is the configuration of a function's AWS clients, built from
// the region and credentials Lambda puts in the environment. It does not
// run the SDK's configuration loader: the loader's shared files and
// credential providers (SSO, STS web identity, IMDS) are of no use in
// Lambda, and linking them costs every cold start about a millisecond of
// package initialisers.
func AWSConfig(a config.AWS) (aws.Config, error) {
	switch {
	case a.Region == "":
		return aws.Config{}, fmt.Errorf("app: %s is not set (Lambda sets it)", config.Region.Name)
	case a.AccessKeyID == "" || a.SecretAccessKey == "":
		return aws.Config{}, fmt.Errorf("app: no credentials: %s and %s are not set (Lambda sets them)", config.AccessKeyID.Name, config.SecretAccessKey.Name)
	}
	return aws.Config{
		Region:      a.Region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(a.AccessKeyID, a.SecretAccessKey, a.SessionToken)),
	}, nil
}

// DynamoDB returns the function's DynamoDB client, counting its calls per
// context (ddb.CountCalls) for the metrics.
func DynamoDB(a config.AWS) (*dynamodb.Client, error) {
	cfg, err := AWSConfig(a)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, ddb.CountPerContext, func(o *dynamodb.Options) {
		if a.Endpoint != "" {
			o.BaseEndpoint = aws.String(a.Endpoint)
		}
	}), nil
}

// Logger returns the JSON logger a function writes to out: Lambda's JSON
// log format expects one JSON object per line on stdout.
func Logger(c config.Common, out io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: c.LogLevel}))
}

// Metrics returns the Recorder of the function's metrics lines, written to
// out beside its log: CloudWatch Logs extracts them.
func Metrics(c config.Common, out io.Writer, function string) (*metrics.Recorder, error) {
	return metrics.New(out, c.MetricsNamespace, function)
}

// StoreOptions are the idempotency store options the settings stand for.
func StoreOptions(i config.Idempotency) []idem.Option {
	return []idem.Option{idem.WithRetention(i.Retention), idem.WithCache(i.CacheSize, 0)}
}

// NewCreateProduct assembles createproduct with the DynamoDB client its
// configuration describes.
func NewCreateProduct(cfg config.CreateProduct, out io.Writer) (idemhttp.APIGatewayV2Handler, error) {
	db, err := DynamoDB(cfg.AWS)
	if err != nil {
		return nil, err
	}
	return CreateProduct(db, cfg, out)
}

// CreateProduct assembles createproduct: the idempotency store, the
// product service, the handler, its request log and its metrics, both
// written to out (the function's stdout). opts add to, and override, the
// configured store options.
func CreateProduct(db *dynamodb.Client, cfg config.CreateProduct, out io.Writer, opts ...idem.Option) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || out == nil {
		return nil, errors.New("app: createproduct needs a DynamoDB client and an output")
	}
	// The release must finish inside the handler's deadline margin.
	opts = append(append(StoreOptions(cfg.Idempotency), idem.WithReleaseTimeout(api.DeadlineMargin/2)), opts...)
	store, err := idem.NewStore(db, cfg.Idempotency.Table, opts...)
	if err != nil {
		return nil, err
	}
	products, err := product.NewService(product.Config{
		ProductsTable: cfg.ProductsTable, OutboxTable: cfg.OutboxTable, EventSource: cfg.EventSource,
	})
	if err != nil {
		return nil, err
	}
	execute := store.Execute
	if cfg.Idempotency.Mode == config.ModeTransact {
		execute = store.Transact
	}
	creator, err := api.NewProductCreator(execute, products)
	if err != nil {
		return nil, err
	}
	return decorate(out, cfg.Common, config.NameCreateProduct, "create product", api.NewCreateHandler(creator).Serve)
}

// NewGetProduct assembles getproduct with the DynamoDB client its
// configuration describes.
func NewGetProduct(cfg config.GetProduct, out io.Writer) (idemhttp.APIGatewayV2Handler, error) {
	db, err := DynamoDB(cfg.AWS)
	if err != nil {
		return nil, err
	}
	return GetProduct(db, cfg, out)
}

// GetProduct assembles getproduct: the product reader, the handler, its
// log and its metrics.
func GetProduct(db *dynamodb.Client, cfg config.GetProduct, out io.Writer) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || out == nil {
		return nil, errors.New("app: getproduct needs a DynamoDB client and an output")
	}
	reader, err := product.NewReader(db, cfg.ProductsTable)
	if err != nil {
		return nil, err
	}
	return decorate(out, cfg.Common, config.NameGetProduct, "get product", api.NewGetHandler(reader).Serve)
}

// NewGetSeller assembles getseller with the DynamoDB client its
// configuration describes.
func NewGetSeller(cfg config.GetSeller, out io.Writer) (idemhttp.APIGatewayV2Handler, error) {
	db, err := DynamoDB(cfg.AWS)
	if err != nil {
		return nil, err
	}
	return GetSeller(db, cfg, out)
}

// GetSeller assembles getseller: the seller statistics reader, the
// handler, its log and its metrics.
func GetSeller(db *dynamodb.Client, cfg config.GetSeller, out io.Writer) (idemhttp.APIGatewayV2Handler, error) {
	if db == nil || out == nil {
		return nil, errors.New("app: getseller needs a DynamoDB client and an output")
	}
	reader, err := sellers.NewReader(db, cfg.SellersTable)
	if err != nil {
		return nil, err
	}
	return decorate(out, cfg.Common, config.NameGetSeller, "get seller", api.NewSellerHandler(reader).Serve)
}

// decorate wraps an API function's handler in its request log and its
// metrics, both written to out, and adapts it to Lambda.
func decorate(out io.Writer, c config.Common, function, msg string, h api.Handler) (idemhttp.APIGatewayV2Handler, error) {
	rec, err := Metrics(c, out, function)
	if err != nil {
		return nil, err
	}
	return api.Lambda(api.Logged(Logger(c, out), msg, api.Measured(rec, h))), nil
}

// NewSellerStats assembles sellerstats with the DynamoDB client its
// configuration describes.
func NewSellerStats(cfg config.SellerStats, out io.Writer) (*sellersqs.Consumer, error) {
	db, err := DynamoDB(cfg.AWS)
	if err != nil {
		return nil, err
	}
	return SellerStats(db, cfg, out)
}

// SellerStats assembles sellerstats: a store on the idempotency table in
// the configured (transact) mode, the counter on the sellers table, the
// consumer, its log and its metrics written to out. opts add to, and
// override, the configured store options.
func SellerStats(db *dynamodb.Client, cfg config.SellerStats, out io.Writer, opts ...idem.Option) (*sellersqs.Consumer, error) {
	if db == nil || out == nil {
		return nil, errors.New("app: sellerstats needs a DynamoDB client and an output")
	}
	rec, err := Metrics(cfg.Common, out, config.NameSellerStats)
	if err != nil {
		return nil, err
	}
	// A transaction's outcome, when unknown, is read back detached from
	// the batch's context: bounded to fit in the consumer's deadline margin.
	opts = append(append(StoreOptions(cfg.Idempotency), idem.WithReleaseTimeout(sellersqs.DeadlineMargin/2), idem.WithConflictAttempts(sellersqs.MaxTxAttempts)), opts...)
	// The counter's batches read which item a cancelled transaction met
	// held: only their seller shard's makes them move to another.
	store, err := idem.NewStore(sellersqs.WatchConflicts(db), cfg.Idempotency.Table, opts...)
	if err != nil {
		return nil, err
	}
	counter, err := sellers.NewCounter(cfg.SellersTable)
	if err != nil {
		return nil, err
	}
	return sellersqs.NewConsumer(store, counter, cfg.EventSource, Logger(cfg.Common, out), rec)
}

// OutboxRelay assembles outboxrelay around pub: the relay handler, its
// log and its metrics written to out. In Lambda pub is the EventBridge
// publisher (internal/app/outboxrelay); make run passes its own.
func OutboxRelay(pub outbox.Publisher, cfg config.OutboxRelay, out io.Writer) (*relay.Handler, error) {
	if pub == nil || out == nil {
		return nil, errors.New("app: outboxrelay needs a publisher and an output")
	}
	rec, err := Metrics(cfg.Common, out, config.NameOutboxRelay)
	if err != nil {
		return nil, err
	}
	return relay.NewHandler(pub, Logger(cfg.Common, out), rec), nil
}
