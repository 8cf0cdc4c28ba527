package httpadapter_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/httpadapter"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

func TestRequestAndResponseConversion(t *testing.T) {
	t.Parallel()
	var got events.APIGatewayV2HTTPRequest
	h := httpadapter.New(httpadapter.Route{Method: "POST", Pattern: "/things/{id}", Handler: func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		got = req
		return events.APIGatewayV2HTTPResponse{
			StatusCode: 202, Headers: map[string]string{"X-One": "1"},
			MultiValueHeaders: map[string][]string{"X-Many": {"a", "b"}},
			Cookies:           []string{"c=1"},
			Body:              base64.StdEncoding.EncodeToString([]byte{0xff, 0x00}), IsBase64Encoded: true,
		}, nil
	}})
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, err := http.NewRequest("POST", srv.URL+"/things/42?x=1&x=2", strings.NewReader("\xff\xfe"))
	require.NoError(t, err)
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	req.Header.Set("Idempotency-Key", `"k"`)
	req.AddCookie(&http.Cookie{Name: "s", Value: "v"})
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	assert.Equal(t, "2.0", got.Version)
	assert.Equal(t, "POST /things/{id}", got.RouteKey)
	assert.Equal(t, map[string]string{"id": "42"}, got.PathParameters)
	assert.Equal(t, "a,b", got.Headers["x-multi"], "lower-case names, repeated values joined")
	assert.Equal(t, `"k"`, got.Headers["idempotency-key"])
	assert.NotContains(t, got.Headers, "cookie")
	assert.Equal(t, []string{"s=v"}, got.Cookies)
	assert.Equal(t, "1,2", got.QueryStringParameters["x"])
	assert.True(t, got.IsBase64Encoded, "a binary body is base64, as API Gateway sends it")
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("\xff\xfe")), got.Body)
	assert.Equal(t, "POST", got.RequestContext.HTTP.Method)
	assert.Len(t, got.RequestContext.RequestID, 32)
	assert.Nil(t, got.RequestContext.Authorizer, "a route without an authorizer")

	assert.Equal(t, 202, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("X-One"))
	assert.Equal(t, []string{"a", "b"}, resp.Header.Values("X-Many"))
	assert.Equal(t, "c=1", resp.Header.Get("Set-Cookie"))
	assert.Equal(t, []byte{0xff, 0x00}, body)
}

func TestHandlerErrorIsAPIGateway500AndUnknownRoute404(t *testing.T) {
	t.Parallel()
	h := httpadapter.New(httpadapter.Route{Method: "GET", Pattern: "/boom", Handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("boom")
	}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	assert.Equal(t, 500, rec.Code)
	assert.JSONEq(t, `{"message":"Internal Server Error"}`, rec.Body.String())

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("DELETE", "/elsewhere", nil))
	assert.Equal(t, 404, rec.Code)
	assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
}

// Each invocation gets a trace header in its context where aws-lambda-go
// puts it: the client's, when well formed, else a fresh one per request.
func TestEachRequestGetsATraceHeaderAsLambdaGivesIt(t *testing.T) {
	t.Parallel()
	var seen []string
	h := httpadapter.New(httpadapter.Route{Method: "GET", Pattern: "/t", Handler: func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		seen = append(seen, ctx.Value("x-amzn-trace-id").(string))
		return events.APIGatewayV2HTTPResponse{StatusCode: 204}, nil
	}})
	const sent = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	for _, header := range []string{sent, "", "", "Root=nonsense"} {
		req := httptest.NewRequest("GET", "/t", nil)
		if header != "" {
			req.Header.Set("X-Amzn-Trace-Id", header)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	require.Len(t, seen, 4)
	assert.Equal(t, sent, seen[0], "the client's own header is kept")
	for _, got := range seen[1:] {
		assert.Regexp(t, `^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=1$`, got)
	}
	traceID := func(h string) string { return tracing.TraceID(tracing.FromXRay(context.Background(), h)) }
	assert.NotEqual(t, traceID(seen[1]), traceID(seen[2]), "one trace per request")
	now := time.Now().Unix()
	for _, h := range seen[1:] {
		epoch, err := strconv.ParseInt(traceID(h)[2:10], 16, 64)
		require.NoError(t, err)
		assert.InDelta(t, now, epoch, 60, "X-Ray's trace ids begin with the epoch second: %s", h)
	}
}

// A route with an Authorizer hands its handler the caller the authorizer
// describes, as API Gateway does once its authorizer let the request in;
// a route without one, no authorizer at all.
func TestARouteAuthorizerDescribesTheCaller(t *testing.T) {
	t.Parallel()
	var got []*events.APIGatewayV2HTTPRequestContextAuthorizerDescription
	handler := func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		got = append(got, req.RequestContext.Authorizer)
		return events.APIGatewayV2HTTPResponse{StatusCode: 204}, nil
	}
	iam := &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::000000000000:user/u"},
	}
	srv := httptest.NewServer(httpadapter.New(
		httpadapter.Route{Method: "GET", Pattern: "/signed", Handler: handler,
			Authorizer: func(*http.Request) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription { return iam }},
		httpadapter.Route{Method: "GET", Pattern: "/open", Handler: handler},
	))
	defer srv.Close()
	for _, path := range []string{"/signed", "/open"} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 204, resp.StatusCode)
	}
	assert.Equal(t, []*events.APIGatewayV2HTTPRequestContextAuthorizerDescription{iam, nil}, got)
}
