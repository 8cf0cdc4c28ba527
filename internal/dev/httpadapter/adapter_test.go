package httpadapter_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/httpadapter"
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
