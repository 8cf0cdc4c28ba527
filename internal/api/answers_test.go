package api_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// creatorFunc is a Creator made of a function: the handler's answers are
// tested here without a store behind them.
type creatorFunc func(ctx context.Context, scope idem.Scope, caller access.Caller, cmd product.CreateCommand) (idem.Result, error)

func (f creatorFunc) Create(ctx context.Context, scope idem.Scope, caller access.Caller, cmd product.CreateCommand) (idem.Result, error) {
	return f(ctx, scope, caller, cmd)
}

type finderFunc func(ctx context.Context, id uuid.UUID) (product.Product, error)

func (f finderFunc) Get(ctx context.Context, id uuid.UUID) (product.Product, error) {
	return f(ctx, id)
}

// TestCreateAnswersEveryOutcome: what the use case returns, and the answer
// the client gets for it.
func TestCreateAnswersEveryOutcome(t *testing.T) {
	t.Parallel()
	created, err := idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{
		StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json", "Location": "/products/1"}, Body: `{"id":"1"}`,
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		res        idem.Result
		err        error
		status     int
		kind       string
		retryAfter string
		replayed   bool
	}{
		{"executed", idem.Result{Response: created, Outcome: idem.OutcomeExecuted}, nil, 201, "", "", false},
		{"replayed", idem.Result{Response: created, Outcome: idem.OutcomeReplayed}, nil, 201, "", "", true},
		{"in flight", idem.Result{Outcome: idem.OutcomeInFlight}, &idem.InFlightError{RetryAfter: 9500 * time.Millisecond}, 409, "in-flight", "10", false},
		{"lease lost", idem.Result{Outcome: idem.OutcomeLeaseLost}, fmt.Errorf("commit: %w", idem.ErrLeaseLost), 409, "in-flight", "1", false},
		{"key reuse", idem.Result{Outcome: idem.OutcomeKeyReuse}, idem.ErrKeyReuse, 422, "key-reuse", "", false},
		{"throttled", idem.Result{Outcome: idem.OutcomeUnavailable}, fmt.Errorf("commit: %w", &types.ProvisionedThroughputExceededException{}), 503, "unavailable", "1", false},
		{"conflicts", idem.Result{Outcome: idem.OutcomeUnavailable}, fmt.Errorf("commit: %w", &types.TransactionConflictException{}), 503, "unavailable", "1", false},
		{"timeout", idem.Result{Outcome: idem.OutcomeUnavailable}, context.DeadlineExceeded, 503, "unavailable", "1", false},
		{"bug", idem.Result{Outcome: idem.OutcomeError}, errors.New("table products-x: ResourceNotFoundException"), 500, "internal", "", false},
		{"seller not granted", idem.Result{Outcome: idem.OutcomeRejected}, fmt.Errorf("%w (commit)", &access.SellerError{Seller: uuid.MustParse(sellerID), Reason: "no grant"}), 403, "seller-forbidden", "", false},
		{"over the limit", idem.Result{Outcome: idem.OutcomeRejected}, &access.LimitedError{RetryAfter: 2500 * time.Millisecond}, 429, "too-many-requests", "3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got struct{ principal, key, caller string }
			h := createHandler(t, creatorFunc(func(_ context.Context, scope idem.Scope, caller access.Caller, _ product.CreateCommand) (idem.Result, error) {
				got.principal, got.key, got.caller = scope.Principal, scope.Key, caller.ID()
				return tc.res, tc.err
			}))
			r := h.Serve(context.Background(), postReq(jsonHeaders(`"k-1"`), widget))
			assert.Equal(t, tc.status, r.Response.StatusCode, r.Response.Body)
			assert.Equal(t, tc.res.Outcome, r.Outcome, "the outcome reaches the decorators")
			assert.Equal(t, tc.retryAfter, r.Response.Headers["Retry-After"])
			assert.Equal(t, testCaller, got.principal)
			assert.Equal(t, testCaller, got.caller, "the use case acts for the caller the authorizer names")
			assert.Equal(t, "k-1", got.key, "the quoted header is parsed")
			if tc.kind != "" {
				assertProblem(t, r.Response, tc.status, tc.kind)
				assert.Equal(t, tc.err, r.Err, "the cause goes to the log")
				assert.NotContains(t, r.Response.Body, "products-x", "never to the client")
				return
			}
			assert.Equal(t, string(created.Body), r.Response.Body)
			assert.Equal(t, "/products/1", r.Response.Headers["Location"])
			if tc.replayed {
				assert.Equal(t, "true", r.Response.Headers["Idempotent-Replayed"])
			} else {
				assert.NotContains(t, r.Response.Headers, "Idempotent-Replayed")
			}
			require.NoError(t, r.Err)
		})
	}
}

// createHandler is the handler of svc, a use case that calls no store:
// the store it is given stands unused on a table nobody created.
func createHandler(t *testing.T, svc api.Creator) *api.CreateHandler {
	t.Helper()
	store, err := idem.NewStore(idemtest.New(t).Client(), "unused")
	require.NoError(t, err)
	h, err := api.NewCreateHandler(svc, store)
	require.NoError(t, err)
	return h
}

// A request refused before the use case never reaches it.
func TestCreateRejectsWithoutCallingTheUseCase(t *testing.T) {
	t.Parallel()
	h := createHandler(t, creatorFunc(func(context.Context, idem.Scope, access.Caller, product.CreateCommand) (idem.Result, error) {
		t.Error("the use case ran for a rejected request")
		return idem.Result{}, nil
	}))
	noSub := postReq(jsonHeaders("k"), widget)
	noSub.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"iss": "i"}},
	}
	// A route without an authorizer names no caller, and so acts for no
	// seller.
	noAuthorizer := postReq(jsonHeaders("k"), widget)
	noAuthorizer.RequestContext.Authorizer = nil
	for name, tc := range map[string]struct {
		req    events.APIGatewayV2HTTPRequest
		status int
	}{
		"no key":       {postReq(jsonHeaders(""), widget), 400},
		"bad key":      {postReq(jsonHeaders(`"a b"`), widget), 400},
		"bad body":     {postReq(jsonHeaders("k"), `{"name":1}`), 400},
		"jwt, no sub":  {noSub, 403},
		"no caller":    {noAuthorizer, 403},
		"wrong type":   {postReq(map[string]string{"content-type": "text/plain", "idempotency-key": "k"}, widget), 415},
		"body too big": {postReq(jsonHeaders("k"), `{"name":"`+strings.Repeat("x", 17<<10)+`"}`), 413},
	} {
		r := h.Serve(context.Background(), tc.req)
		assert.Equal(t, tc.status, r.Response.StatusCode, name)
		assert.Equal(t, idem.OutcomeRejected, r.Outcome, name)
		assert.Error(t, r.Err, name)
	}
}

func TestGetAnswers(t *testing.T) {
	t.Parallel()
	id := uuid.New()
	for _, tc := range []struct {
		err    error
		status int
		kind   string
	}{
		{product.ErrNotFound, 404, "not-found"},
		{fmt.Errorf("get: %w", &types.ProvisionedThroughputExceededException{}), 503, "unavailable"},
		{errors.New("boom"), 500, "internal"},
	} {
		h := api.NewGetHandler(finderFunc(func(context.Context, uuid.UUID) (product.Product, error) { return product.Product{}, tc.err }))
		r := h.Serve(context.Background(), events.APIGatewayV2HTTPRequest{PathParameters: map[string]string{"id": id.String()}})
		assertProblem(t, r.Response, tc.status, tc.kind)
	}
}

func TestLoggedWritesOneLinePerRequest(t *testing.T) {
	t.Parallel()
	logs := &logbuf.Buffer{}
	log := testLogger(logs, slog.LevelInfo)
	h := api.Logged(log, "create product", func(context.Context, events.APIGatewayV2HTTPRequest) api.Reply {
		return api.Reply{Outcome: idem.OutcomeReplayed, Attrs: []slog.Attr{slog.String("product_id", "abc")},
			Response: events.APIGatewayV2HTTPResponse{StatusCode: 201}}
	})
	h(context.Background(), postReq(nil, ""))
	failing := api.Logged(log, "create product", func(context.Context, events.APIGatewayV2HTTPRequest) api.Reply {
		return api.Reply{Err: errors.New("store down"), Response: events.APIGatewayV2HTTPResponse{StatusCode: 503}}
	})
	failing(context.Background(), postReq(nil, ""))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], `"level":"INFO","msg":"create product","api_request_id":"req-1","principal":`+strconv.Quote(testCaller)+`,"outcome":"replayed","product_id":"abc","status":201`)
	assert.Contains(t, lines[1], `"level":"ERROR"`)
	assert.Contains(t, lines[1], `"error":"store down"`)
	resp, err := api.Lambda(h)(context.Background(), postReq(nil, ""))
	require.NoError(t, err, "the Lambda adapter never returns an error")
	assert.Equal(t, 201, resp.StatusCode)
}
