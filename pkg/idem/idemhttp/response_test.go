package idemhttp_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

func TestAPIGatewayV2RoundTrip(t *testing.T) {
	t.Parallel()
	in := events.APIGatewayV2HTTPResponse{
		StatusCode:        201,
		Headers:           map[string]string{"Content-Type": "application/json", "Location": "/x/1", idemhttp.HeaderReplayed: "true", "set-cookie": "z=0"},
		MultiValueHeaders: map[string][]string{"Vary": {"Accept", "Origin"}},
		Cookies:           []string{"a=1; Path=/", "b=2, c; Path=/"},
		Body:              `{"id":1}`,
	}
	stored, err := idemhttp.FromAPIGatewayV2(in)
	require.NoError(t, err)
	assert.Equal(t, 201, stored.Status)
	assert.Equal(t, "Accept, Origin", stored.Headers["Vary"])
	assert.NotContains(t, stored.Headers, idemhttp.HeaderReplayed, "a replay marker is never stored")

	out := idemhttp.ToAPIGatewayV2(stored, true)
	assert.Equal(t, in.Body, out.Body)
	assert.Equal(t, []string{"z=0", "a=1; Path=/", "b=2, c; Path=/"}, out.Cookies, "cookies from a header and from Cookies, commas and order kept")
	assert.NotContains(t, out.Headers, "set-cookie")
	assert.Equal(t, "true", out.Headers[idemhttp.HeaderReplayed])
	assert.Equal(t, "/x/1", out.Headers["Location"])
	assert.False(t, out.IsBase64Encoded)
	assert.NotContains(t, idemhttp.ToAPIGatewayV2(stored, false).Headers, idemhttp.HeaderReplayed)

	bin := []byte{0xff, 0x00, 0xfe}
	stored, err = idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{Body: base64.StdEncoding.EncodeToString(bin), IsBase64Encoded: true})
	require.NoError(t, err)
	assert.Equal(t, bin, stored.Body)
	assert.Equal(t, 200, stored.Status, "API Gateway's default status")
	out = idemhttp.ToAPIGatewayV2(stored, false)
	assert.True(t, out.IsBase64Encoded)
	assert.Equal(t, base64.StdEncoding.EncodeToString(bin), out.Body)

	_, err = idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{Body: "!!", IsBase64Encoded: true})
	assert.Error(t, err)
}

func TestNetHTTPResponsesStoreAndReplayEveryHeader(t *testing.T) {
	t.Parallel()
	mw := newMiddleware(t, &outcomes{})
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Add("Vary", "Accept")
		w.Header().Add("Vary", "Origin")
		w.Header()["x-lower"] = []string{"v"} // set without canonicalising
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("ok"))
	}))
	send := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader("{}"))
		req.Header.Set(idemhttp.HeaderKey, "k")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	first, replay := send(), send()
	for _, rec := range []*httptest.ResponseRecorder{first, replay} {
		assert.Equal(t, http.StatusCreated, rec.Code)
		assert.Equal(t, []string{"a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT", "b=2"}, rec.Header().Values("Set-Cookie"), "cookies with commas survive")
		assert.Equal(t, "Accept, Origin", rec.Header().Get("Vary"))
		assert.Equal(t, "v", rec.Header().Get("X-Lower"))
		assert.Equal(t, "ok", rec.Body.String())
	}
	assert.Equal(t, "true", replay.Header().Get(idemhttp.HeaderReplayed))
}
