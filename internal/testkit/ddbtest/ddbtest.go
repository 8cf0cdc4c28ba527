// Package ddbtest gives tests a real DynamoDB-compatible server and freshly
// created tables. The backend is chosen by DYNAMODB_TEST_BACKEND:
//
//   - embedded (default): the strict store of pkg/idem/idemtest behind an
//     httptest server (internal/dev/embedded), reached by the real SDK over
//     HTTP;
//   - endpoint: whatever AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL,
//     points at (DynamoDB Local, moto, or a real account when both are
//     unset), as the SDK resolves them, with the region and
//     credentials of AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
//     and AWS_SESSION_TOKEN, as a function reads them;
//   - container: amazon/dynamodb-local (or the image DYNAMODB_TEST_IMAGE
//     names) started by testcontainers-go; skipped, with the reason, where
//     no Docker engine answers, and failed there when CI=true.
//
// Every call to New creates tables with unique names, so tests run in
// parallel on any backend. There are no hand-written mocks here: every
// request goes through the SDK's HTTP stack to a server.
package ddbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/dev/embedded"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// EnvBackend is the environment variable that selects the backend.
const EnvBackend = "DYNAMODB_TEST_BACKEND"

// Backend kinds accepted in DYNAMODB_TEST_BACKEND.
const (
	Embedded  = "embedded"
	Endpoint  = "endpoint"
	Container = "container"
)

// Env is one test's view of the backend: a counted client and its own tables.
type Env struct {
	// Kind is the backend in use (embedded, endpoint or container).
	Kind string
	// URL is the endpoint the client talks to; empty for the SDK default.
	URL string
	// Image is the container backend's image (DYNAMODB_TEST_IMAGE or
	// DynamoDBLocalImage); empty on the other backends.
	Image string
	// Client is a DynamoDB client whose calls Counter counts.
	Client *dynamodb.Client
	// Counter counts Client's requests per operation.
	Counter *ddb.Counter
	// Tables names this test's freshly created tables.
	Tables tables.Names
	// Store is the embedded store (pkg/idem/idemtest), for fault
	// injection, holds and call counts; nil on the other backends.
	Store *idemtest.Server
	// PutItemReturnsOldItem is false where the backend ignores ALL_OLD on
	// PutItem: ReturnValuesOnConditionCheckFailure on a failed condition
	// (callers need a fallback read) and ReturnValues on success (it echoes
	// the new item, so a replaced item cannot be seen). The conformance
	// suite pins it per backend; UpdateItem and transactions return the old
	// item everywhere.
	PutItemReturnsOldItem bool
	// TransactPutReturnsOldItem is false where a Put inside
	// TransactWriteItems ignores ReturnValuesOnConditionCheckFailure, so a
	// cancelled transaction's reason carries no item (minidyn v0.8.2
	// passes it only for Update and ConditionCheck). pkg/idem's transact
	// mode then reads the record with one consistent GetItem.
	TransactPutReturnsOldItem bool
	// ExactNumbers is false where the backend keeps numbers as float64,
	// so integers above 2^53 lose precision; DynamoDB keeps 38 digits, and
	// so do the strict store and DynamoDB Local, in items, updates and
	// conditions, and in Query key conditions. Pinned by
	// TestConformanceNumbersAreExact and
	// TestConformanceQueryReadsAPartitionInNumberOrder.
	ExactNumbers bool
}

// Backend returns the backend named by DYNAMODB_TEST_BACKEND, or embedded.
func Backend() (string, error) {
	switch k := strings.TrimSpace(os.Getenv(EnvBackend)); k {
	case "", Embedded:
		return Embedded, nil
	case Endpoint, Container:
		return k, nil
	default:
		return "", fmt.Errorf("%s=%q: want embedded, endpoint or container", EnvBackend, k)
	}
}

// New connects to the selected backend and creates a fresh set of the
// project's tables for this test. It skips the test, saying why, when the
// container backend has no Docker engine.
func New(tb testing.TB) *Env {
	tb.Helper()
	env := Connect(tb)
	env.Tables = env.CreateTables(tb)
	return env
}

// Connect connects to the selected backend without creating tables.
func Connect(tb testing.TB) *Env {
	tb.Helper()
	kind, err := Backend()
	if err != nil {
		tb.Fatal(err)
	}
	env := &Env{Kind: kind, Counter: ddb.NewCounter()}
	switch kind {
	case Embedded:
		store := embedded.New()
		env.Store = store.Server
		srv := httptest.NewServer(store)
		tb.Cleanup(srv.Close)
		env.URL = srv.URL
		// The strict store answers ALL_OLD as DynamoDB does and keeps
		// numbers exact (38 digits), as DynamoDB does.
		env.PutItemReturnsOldItem = true
		env.TransactPutReturnsOldItem = true
		env.ExactNumbers = true
		env.Client = staticClient(tb, env.URL, env.Counter.Option)
	case Endpoint:
		a, err := environmentAWS()
		if err != nil {
			tb.Fatal(err)
		}
		env.URL = a.Endpoint
		env.PutItemReturnsOldItem = true
		env.TransactPutReturnsOldItem = true
		env.ExactNumbers = true
		client, err := newClient(a, env.Counter.Option)
		if err != nil {
			tb.Fatal(err)
		}
		env.Client = client
	case Container:
		srv, err := containerEndpoint(tb)
		if err != nil {
			tb.Fatalf("container backend: %v", err)
		}
		env.URL = srv.url
		env.Image = srv.image
		// DynamoDB Local and the embedded store (an image labelled
		// LabelServer) both answer ALL_OLD and keep numbers exact.
		env.PutItemReturnsOldItem = true
		env.TransactPutReturnsOldItem = true
		env.ExactNumbers = true
		env.Client = staticClient(tb, srv.url, env.Counter.Option)
	}
	return env
}

// NewClient returns another client for the same endpoint with its own
// counter, for tests that count one party's calls; opts adjust it (an
// HTTP client that loses responses, say).
func (e *Env) NewClient(tb testing.TB, opts ...func(*dynamodb.Options)) (*dynamodb.Client, *ddb.Counter) {
	tb.Helper()
	c := ddb.NewCounter()
	opts = append([]func(*dynamodb.Options){c.Option}, opts...)
	if e.Kind == Endpoint {
		client, err := environmentClient(opts...)
		if err != nil {
			tb.Fatal(err)
		}
		return client, c
	}
	return staticClient(tb, e.URL, opts...), c
}

// CreateTables creates the project's tables under names unique to
// this call and deletes them when the test ends (the embedded server is
// simply closed).
func (e *Env) CreateTables(tb testing.TB) tables.Names {
	tb.Helper()
	suffix := uniqueSuffix(tb)
	n := tables.Names{
		Products:    "products-" + suffix,
		Idempotency: "idempotency-" + suffix,
		Outbox:      "outbox-" + suffix,
		Sellers:     "sellers-" + suffix,
		Callers:     "callers-" + suffix,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := tables.CreateAll(ctx, e.Client, n, tables.CreateOptions{}); err != nil {
		tb.Fatalf("create tables: %v", err)
	}
	if e.Kind != Embedded {
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, t := range tables.All() {
				_, _ = e.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n.Of(t))})
			}
		})
	}
	e.Counter.Reset()
	return n
}

// staticClient talks to a local endpoint with dummy credentials, so no AWS
// account or profile on the machine is needed or touched.
func staticClient(tb testing.TB, url string, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	tb.Helper()
	client, err := newClient(config.AWS{Region: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test", Endpoint: url}, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return client
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// uniqueSuffix keeps a readable part of the test name and adds randomness;
// DynamoDB names are [a-zA-Z0-9_.-]{3,255}.
func uniqueSuffix(tb testing.TB) string {
	name := unsafeName.ReplaceAllString(tb.Name(), "_")
	if len(name) > 60 {
		name = name[:60]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// environmentAWS is what a function builds its DynamoDB client from, read
// from the environment (AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL,
// AWS_REGION and the credentials' variables), for the endpoint backend,
// which may be a real account.
func environmentAWS() (config.AWS, error) {
	return config.LoadAWS(os.Getenv, config.EndpointDynamoDB)
}

// environmentClient is a client as a function builds its own, from the
// environment (environmentAWS).
func environmentClient(opts ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	a, err := environmentAWS()
	if err != nil {
		return nil, err
	}
	return newClient(a, opts...)
}

// newClient builds a client as the functions do (app.Client), counting its
// calls per context as theirs do.
func newClient(a config.AWS, opts ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	return app.Client(a, nil, dynamodb.NewFromConfig, append([]func(*dynamodb.Options){ddb.CountPerContext}, opts...)...)
}
