// Package wire builds the handlers from settings and a DynamoDB client, so
// the Lambda mains and the local runner assemble them the same way.
package wire

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/tables"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// Settings is a function's configuration, read from the environment.
type Settings struct {
	Tables      tables.Names
	EventSource string
	Retention   time.Duration
	Mode        idem.Mode
	CacheSize   int
	LogLevel    slog.Level
}

// maxCacheSize bounds IDEMPOTENCY_CACHE_SIZE; memory is bounded apart from
// it by idem.DefaultCacheBytes (16 MiB of responses).
const maxCacheSize = 1_000_000

// Load reads exactly the variables config.Vars(fn) lists.
func Load(getenv func(string) string, fn config.Function) (Settings, error) {
	env := config.New(getenv)
	var s Settings
	for _, v := range config.Vars(fn) {
		switch v {
		case config.ProductsTable:
			s.Tables.Products = env.String(v)
		case config.IdempotencyTable:
			s.Tables.Idempotency = env.String(v)
		case config.OutboxTable:
			s.Tables.Outbox = env.String(v)
		case config.EventSource:
			s.EventSource = env.String(v)
		case config.IdempotencyRetention:
			s.Retention = env.Duration(v)
		case config.IdempotencyMode:
			s.Mode = config.Parse(env, v, idem.ParseMode)
		case config.IdempotencyCacheSize:
			s.CacheSize = env.Int(v, maxCacheSize)
		case config.LogLevel:
			s.LogLevel = env.Level(v)
		}
	}
	if err := env.Err(); err != nil {
		return Settings{}, fmt.Errorf("%s: %w", fn, err)
	}
	return s, nil
}

// Logger returns the JSON logger every function uses (Lambda's JSON log
// format expects one JSON object per line on stdout).
func Logger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// CreateHandler assembles POST /products.
func CreateHandler(client *dynamodb.Client, s Settings, log *slog.Logger, opts ...idem.Option) (*api.CreateHandler, error) {
	// The release must finish inside the handler's deadline margin.
	opts = append([]idem.Option{
		idem.WithRetention(s.Retention), idem.WithReleaseTimeout(api.DeadlineMargin / 2),
		idem.WithMode(s.Mode), idem.WithCache(s.CacheSize),
	}, opts...)
	store, err := idem.NewStore(client, s.Tables.Idempotency, opts...)
	if err != nil {
		return nil, err
	}
	svc, err := product.NewService(product.Config{Store: store, Tables: s.Tables, EventSource: s.EventSource})
	if err != nil {
		return nil, err
	}
	return api.NewCreateHandler(svc, log), nil
}

// GetHandler assembles GET /products/{id}.
func GetHandler(client *dynamodb.Client, s Settings, log *slog.Logger) (*api.GetHandler, error) {
	reader, err := product.NewReader(client, s.Tables.Products)
	if err != nil {
		return nil, err
	}
	return api.NewGetHandler(reader, log), nil
}

// Builder makes an API handler from a client, settings and a logger.
type Builder func(*dynamodb.Client, Settings, *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error)

// Serve is an HTTP API function's main: it loads fn's settings from the
// environment, builds the handler on a default-config DynamoDB client and
// hands it to the Lambda runtime, which never returns.
func Serve(ctx context.Context, fn config.Function, build Builder) error {
	s, err := Load(os.Getenv, fn)
	if err != nil {
		return err
	}
	client, _, err := ddb.NewClient(ctx)
	if err != nil {
		return err
	}
	h, err := build(client, s, Logger(os.Stdout, s.LogLevel))
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return nil
}

// CreateFunc is the Builder of the createproduct function.
func CreateFunc(c *dynamodb.Client, s Settings, log *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	h, err := CreateHandler(c, s, log)
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}

// GetFunc is the Builder of the getproduct function.
func GetFunc(c *dynamodb.Client, s Settings, log *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	h, err := GetHandler(c, s, log)
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}
