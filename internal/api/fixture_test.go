package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/getproduct"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/problem"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

type fixture struct {
	env    *ddbtest.Env
	create idemhttp.APIGatewayV2Handler
	get    idemhttp.APIGatewayV2Handler
	logs   *logbuf.Buffer
}

// createConfig is createproduct's configuration for a test's tables.
func createConfig(n tables.Names, mode config.Mode) config.CreateProduct {
	return config.CreateProduct{
		Common:        config.Common{LogLevel: slog.LevelDebug},
		ProductsTable: n.Products, OutboxTable: n.Outbox, EventSource: "idemlambda.products",
		Idempotency:  config.Idempotency{Table: n.Idempotency, Retention: 24 * time.Hour, Mode: mode},
		CallersTable: n.Callers, Limit: config.Limit{Creates: config.MaxCallerLimit, Window: 10 * time.Second},
	}
}

func testLogger(w *logbuf.Buffer, level slog.Level) *slog.Logger {
	return app.Logger(config.Common{LogLevel: level}, w)
}

// modes are the two ways createproduct can claim a key (IDEMPOTENCY_MODE).
var modes = []config.Mode{config.ModeReserve, config.ModeTransact}

// eachMode runs f as a parallel subtest per mode.
func eachMode(t *testing.T, f func(t *testing.T, mode config.Mode)) {
	t.Helper()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			f(t, m)
		})
	}
}

func newFixture(t *testing.T) *fixture { return newFixtureMode(t, config.ModeReserve, slog.LevelDebug) }

// newBenchFixture logs errors only, as production would at volume, and
// renders every metrics line, as production does, into io.Discard.
func newBenchFixture(b *testing.B, mode config.Mode, cache int) *fixture {
	return newFixtureOut(b, mode, slog.LevelError, io.Discard, idem.WithCache(cache, 0))
}

// newFixtureMode's handlers write their log and metrics lines to
// f.logs; when the test ends, every metrics line must meet the EMF
// specification, one per request.
func newFixtureMode(t testing.TB, mode config.Mode, level slog.Level, opts ...idem.Option) *fixture {
	t.Helper()
	logs := &logbuf.Buffer{}
	f := newFixtureOut(t, mode, level, logs, opts...)
	f.logs = logs
	t.Cleanup(func() { logs.Metrics(t) })
	return f
}

func newFixtureOut(t testing.TB, mode config.Mode, level slog.Level, logs io.Writer, opts ...idem.Option) *fixture {
	t.Helper()
	return newFixtureRuntime(t, mode, level, app.Runtime{Out: logs}, opts...)
}

// newFixtureTraced's functions trace with tr.
func newFixtureTraced(t testing.TB, tr *tracing.Tracing) *fixture {
	t.Helper()
	logs := &logbuf.Buffer{}
	f := newFixtureRuntime(t, config.ModeReserve, slog.LevelDebug, app.Runtime{Out: logs, Tracing: tr})
	f.logs = logs
	return f
}

func newFixtureRuntime(t testing.TB, mode config.Mode, level slog.Level, rt app.Runtime, opts ...idem.Option) *fixture {
	t.Helper()
	logs := rt.Out
	env := ddbtest.New(t)
	cfg := createConfig(env.Tables, mode)
	cfg.LogLevel = level
	create, err := createproduct.New(env.Client, cfg, rt, opts...)
	require.NoError(t, err)
	get, err := getproduct.New(env.Client, config.GetProduct{Common: cfg.Common, ProductsTable: env.Tables.Products}, app.Runtime{Out: logs, Tracing: rt.Tracing})
	require.NoError(t, err)
	return &fixture{env: env, create: create, get: get}
}

const sellerID = "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"

const widget = `{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"` + sellerID + `"}`

func jsonHeaders(key string) map[string]string {
	h := map[string]string{"content-type": "application/json"}
	if key != "" {
		h["idempotency-key"] = key
	}
	return h
}

// testCaller is the principal of postReq's requests: a JWT (testIssuer,
// sub tester) whose seller_ids lists every seller.
const testCaller = `jwt:"` + testIssuer + `":sub="tester"`

const testIssuer = "https://issuer.example"

// jwtCaller is a JWT authorizer's context for the token of sub, its
// seller_ids claim sellers (none when empty).
func jwtCaller(sub, sellers string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	claims := map[string]string{"iss": testIssuer, "sub": sub, "scope": "products:create"}
	if sellers != "" {
		claims["seller_ids"] = sellers
	}
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims, Scopes: []string{"products:create"}},
	}
}

// iamCaller is an IAM authorizer's context for a session of role in
// account 123456789012: every session of the role is one caller,
// arn:aws:iam::123456789012:role/<role>.
func iamCaller(role, session string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
		AccountID: "123456789012", CallerID: "AROAEXAMPLE:" + session, UserID: "AROAEXAMPLE:" + session,
		UserARN: "arn:aws:sts::123456789012:assumed-role/" + role + "/" + session,
	}}
}

// postReq is POST /products from testCaller, whose token lists every
// seller.
func postReq(headers map[string]string, body string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /products", RawPath: "/products", Headers: headers, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID:  "req-1",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/products"},
			Authorizer: jwtCaller("tester", "*"),
		},
	}
}

func (f *fixture) post(t *testing.T, headers map[string]string, body string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := f.create(context.Background(), postReq(headers, body))
	require.NoError(t, err, "handlers never return an error to Lambda")
	return resp
}

func (f *fixture) getProduct(t *testing.T, id string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := f.get(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: "GET /products/{id}", RawPath: "/products/" + id, PathParameters: map[string]string{"id": id},
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}, Authorizer: jwtCaller("tester", "*")},
	})
	require.NoError(t, err)
	return resp
}

type problemBody struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// assertProblem checks an RFC 9457 response and returns it decoded.
func assertProblem(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int, kind string) problemBody {
	t.Helper()
	assert.Equal(t, status, resp.StatusCode, resp.Body)
	assert.Equal(t, "application/problem+json", resp.Headers["Content-Type"])
	var p problemBody
	dec := json.NewDecoder(bytes.NewReader([]byte(resp.Body)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&p), resp.Body)
	assert.Equal(t, problem.TypeBase+kind, p.Type)
	assert.Equal(t, status, p.Status)
	assert.NotEmpty(t, p.Title)
	assert.NotEmpty(t, p.Detail)
	return p
}

func (f *fixture) count(t *testing.T, table string) int {
	t.Helper()
	out, err := f.env.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return len(out.Items)
}

func (f *fixture) assertNothingWritten(t *testing.T) {
	t.Helper()
	for _, tb := range tables.All() {
		assert.Zero(t, f.count(t, f.env.Tables.Of(tb)), "%s has items after a rejected request", tb.Logical)
	}
}

// outboxEvent is the one event in the outbox table.
func (f *fixture) outboxEvent(t *testing.T) outbox.Event {
	t.Helper()
	out, err := f.env.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.env.Tables.Outbox), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Len(t, out.Items, 1)
	ev, err := outboxitem.Decode(out.Items[0])
	require.NoError(t, err)
	return ev
}
