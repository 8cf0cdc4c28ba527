package idem_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// testEnv is one test's store: the strict test store (pkg/idem/idemtest)
// by default, or, with DYNAMODB_TEST_BACKEND=endpoint, the server that
// AWS_ENDPOINT_URL_DYNAMODB names (moto, DynamoDB Local, a container),
// with tables of this test's own. IDEM_TEST_LAYOUT picks the idempotency
// table's layout (testLayouts); TestCoreSuitesOnEachLayout runs the core
// suites on each.
type testEnv struct {
	Kind string
	// Layout is the idempotency table's; newStore's stores use it.
	Layout  idemtable.Layout
	Client  *dynamodb.Client
	Counter *callCounter
	Tables  testTables
	// Store is the strict test store; nil on an endpoint.
	Store *idemtest.Server
	// PutItemReturnsOldItem and TransactPutReturnsOldItem are false where
	// the server ignores ALL_OLD on PutItem (moto answers it; DynamoDB
	// and the test store do).
	PutItemReturnsOldItem, TransactPutReturnsOldItem bool
	url                                              string
}

type testTables struct{ Idempotency, Products, Outbox string }

func newEnv(tb testing.TB) *testEnv {
	tb.Helper()
	env := &testEnv{Kind: "embedded", PutItemReturnsOldItem: true, TransactPutReturnsOldItem: true}
	switch kind := os.Getenv("DYNAMODB_TEST_BACKEND"); kind {
	case "", "embedded":
		env.Store = idemtest.New(tb)
		env.url = env.Store.URL()
	case "endpoint":
		env.Kind = kind
		env.url = os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
		if env.url == "" {
			tb.Fatal("DYNAMODB_TEST_BACKEND=endpoint needs AWS_ENDPOINT_URL_DYNAMODB")
		}
	default:
		tb.Fatalf("DYNAMODB_TEST_BACKEND=%q: pkg/idem's tests run on embedded or endpoint", kind)
	}
	layout, ok := testLayouts[os.Getenv("IDEM_TEST_LAYOUT")]
	if !ok {
		tb.Fatalf("IDEM_TEST_LAYOUT=%q: one of default, single, spread, prefix", os.Getenv("IDEM_TEST_LAYOUT"))
	}
	env.Layout = layout
	env.Client, env.Counter = env.NewClient(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	env.Tables = testTables{Idempotency: "idempotency-" + suffix, Products: "products-" + suffix, Outbox: "outbox-" + suffix}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must.NoError(tb, idemtable.Create(ctx, env.Client, env.Tables.Idempotency, env.Layout))
	_, err := env.Client.CreateTable(ctx, idemtable.Input(env.Tables.Products, idemtable.Layout{}))
	must.NoError(tb, err)
	outbox := idemtable.Input(env.Tables.Outbox, idemtable.Layout{})
	outbox.AttributeDefinitions = outboxKey.AttributeDefinitions
	outbox.KeySchema = outboxKey.KeySchema
	_, err = env.Client.CreateTable(ctx, outbox)
	must.NoError(tb, err)
	if env.Store == nil {
		tb.Cleanup(func() {
			for _, t := range []string{env.Tables.Idempotency, env.Tables.Products, env.Tables.Outbox} {
				_, _ = env.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(t)})
			}
		})
	}
	env.Counter.Reset()
	return env
}

// testLayouts are the idempotency table's layouts the core suites run on,
// by IDEM_TEST_LAYOUT: the default; a single-table design (PK/SK, a
// static partition, attribute names of its own); a single-table design
// with the ID in the partition key and a fixed sort key; a key prefix.
var testLayouts = map[string]idemtable.Layout{
	"": {}, "default": {},
	"single": {
		PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY", KeyPrefix: "IDEM#",
		Attributes: idemtable.Attributes{
			Status: "st", Fingerprint: "fp", LeaseToken: "lt", LeaseExpiresAt: "lexp",
			ResponseStatus: "rs", ResponseHeaders: "rh", ResponseBody: "rb",
			CreatedAt: "cat", CompletedAt: "done_at", CompletionID: "cid", ExpiresAt: "ttl",
		},
	},
	"spread": {PartitionKey: "PK", SortKey: "SK", SortValue: "#IDEMPOTENCY", KeyPrefix: "IDEM#"},
	"prefix": {KeyPrefix: "IDEMPOTENCY#"},
}

// defaultLayoutOnly skips a test that writes or reads records by their
// attribute names itself, on any other layout.
func (e *testEnv) defaultLayoutOnly(tb testing.TB) {
	tb.Helper()
	if e.Layout != (idemtable.Layout{}) {
		tb.Skip("writes records in the default layout itself")
	}
}

// concurrent marks a concurrency test. On the strict store the test runs
// with DynamoDB's transaction isolation modelled and a transaction latency
// that opens the window in which duplicates meet a running commit. On an
// endpoint it says in the output what the run cannot prove: moto does not
// isolate concurrent transactions (two can both pass attribute_not_exists),
// so there the test checks the algorithm against that server's answers,
// and the isolation claims rest on the strict store's run.
func (e *testEnv) concurrent(tb testing.TB) {
	tb.Helper()
	if e.Store != nil {
		e.Store.SetTransactionLatency(time.Millisecond)
		return
	}
	tb.Logf("backend=%s: transaction isolation is this server's own (moto has none); the concurrency claims are proven on the strict store", e.Kind)
}

// NewClient returns another client for the same server with a counter of
// its own; opts adjust it (a transport that loses answers, say).
func (e *testEnv) NewClient(tb testing.TB, opts ...func(*dynamodb.Options)) (*dynamodb.Client, *callCounter) {
	tb.Helper()
	c := &callCounter{counts: map[string]int{}}
	opts = append([]func(*dynamodb.Options){c.option}, opts...)
	if e.Store != nil {
		return e.Store.Client(opts...), c
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(e.url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		}),
	}, opts...), c
}

// callCounter counts the requests one client sends, per operation, SDK
// retries included: what a caller pays DynamoDB for.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *callCounter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("idem_test.count",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				// A store's one DescribeTable (it learns its table's kind on
				// its first call) is the process's, not a request's.
				if op := middleware.GetOperationName(ctx); op != "DescribeTable" {
					c.mu.Lock()
					c.counts[op]++
					c.mu.Unlock()
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

func (c *callCounter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

func (c *callCounter) Get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[op]
}

func (c *callCounter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

func (c *callCounter) Reset() {
	c.mu.Lock()
	c.counts = map[string]int{}
	c.mu.Unlock()
}

func (c *callCounter) String() string {
	snap := c.Snapshot()
	ops := make([]string, 0, len(snap))
	for op := range snap {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s=%d", op, snap[op])
	}
	return strings.Join(parts, " ")
}

// outboxKey is the outbox table's key: aggregate_id, event_id.
var outboxKey = dynamodb.CreateTableInput{
	AttributeDefinitions: []types.AttributeDefinition{
		{AttributeName: aws.String("aggregate_id"), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String("event_id"), AttributeType: types.ScalarAttributeTypeS},
	},
	KeySchema: []types.KeySchemaElement{
		{AttributeName: aws.String("aggregate_id"), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String("event_id"), KeyType: types.KeyTypeRange},
	},
}
