// Package app is what every function's assembly shares, and nothing
// function-specific: a Lambda main's start (Main), the AWS clients built
// from config.AWS (Client, for every caller: the mains, make run, the
// tests and the benchmarks), the JSON logger, the metrics recorder and
// the tracing (Tracing, Flushed).
// Each function is assembled in a package of its own under internal/app
// (createproduct, getproduct, getseller, sellerstats, outboxrelay,
// sweeper), which imports only what that function runs and, for an API function, the
// plumbing every route shares: internal/api and internal/problem, which
// render every answer with pkg/idem/idemhttp's problem+json type, and
// internal/access, which names a token's caller as idemhttp.PrincipalV2
// does, the spelling its idempotency scope uses. So no
// bootstrap links another function's assembly, the relay and the
// consumer link no HTTP API, and the GET functions link pkg/idem and
// idemhttp only through that plumbing, without calling them
// (internal/testkit/template holds each rule with go list -deps).
package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/idemlambda/idemlambda/internal/awsotel"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// Config is what every function's configuration has: config's Common,
// which each embeds.
type Config interface {
	Shared() config.Common
}

// Main is a Lambda function's bootstrap: load reads the function's
// configuration from the environment, Main builds its tracing from it
// (Tracing), build makes its clients and assembles its handler (any
// function lambda.Start takes), whose log and metrics lines go to stdout,
// and Main starts the Lambda runtime with it, its spans flushed at the
// end of each invocation (Flushed). A load or build error is printed to
// stderr after the function's name, and the process exits 1, which
// Lambda reports as an init error.
func Main[C Config](name string, load func(getenv func(string) string) (C, error), build func(cfg C, rt Runtime) (any, error)) {
	h, err := start(name, load, build, os.Getenv, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// start is Main up to the runtime: the handler, or why there is none.
func start[C Config](name string, load func(getenv func(string) string) (C, error), build func(cfg C, rt Runtime) (any, error), getenv func(string) string, stdout io.Writer) (any, error) {
	cfg, err := load(getenv)
	if err != nil {
		return nil, err
	}
	common := cfg.Shared()
	t, err := Tracing(common.Tracing, name, stdout)
	if err != nil {
		return nil, err
	}
	h, err := build(cfg, Runtime{Out: stdout, Tracing: t})
	if err != nil {
		return nil, err
	}
	return Flushed(h, t, Logger(common, stdout)), nil
}

// Client builds an AWS SDK client, any service's (newClient is its
// NewFromConfig: dynamodb.NewFromConfig, eventbridge.NewFromConfig, ...),
// from a: the region, the credentials, and the endpoint, the service's
// SDK variable's value (AWS_ENDPOINT_URL_DYNAMODB, ...), set on the
// client as the SDK's own loader would, or the regional endpoint when it
// is empty. With t on, each call is a client span of t's, its request
// carrying t's trace headers (internal/awsotel). opts adjust the client
// (ddb.CountPerContext for the metrics' DynamoDB calls).
//
// It does not run the SDK's configuration loader (config.LoadDefaultConfig):
// the loader's shared files and credential providers (SSO, STS web
// identity, IMDS) are of no use in Lambda, which puts the region and the
// role's credentials in the environment, and linking them costs every
// cold start about a millisecond of package initialisers. Callers outside
// Lambda fill a in from their environment too (config's loaders), or with
// a local endpoint and dummy credentials.
func Client[C any, O any](a config.AWS, t *tracing.Tracing, newClient func(aws.Config, ...func(*O)) C, opts ...func(*O)) (C, error) {
	cfg, err := AWSConfig(a, t)
	if err != nil {
		var zero C
		return zero, err
	}
	return newClient(cfg, opts...), nil
}

// AWSConfig is the SDK configuration of the clients a describes, traced
// by t (see Client).
func AWSConfig(a config.AWS, t *tracing.Tracing) (aws.Config, error) {
	switch {
	case a.Region == "":
		return aws.Config{}, fmt.Errorf("app: %s is not set (Lambda sets it)", config.Region.Name)
	case a.AccessKeyID == "" || a.SecretAccessKey == "":
		return aws.Config{}, fmt.Errorf("app: no credentials: %s and %s are not set (Lambda sets them)", config.AccessKeyID.Name, config.SecretAccessKey.Name)
	}
	cfg := aws.Config{
		Region:      a.Region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(a.AccessKeyID, a.SecretAccessKey, a.SessionToken)),
	}
	if a.Endpoint != "" {
		// Every service client takes its base endpoint from here, and,
		// with no configuration sources, from nowhere else.
		cfg.BaseEndpoint = aws.String(a.Endpoint)
	}
	if t.On() {
		awsotel.Append(&cfg.APIOptions, t.Provider(), t.Propagator())
	}
	return cfg, nil
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
