package idemhttp_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
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
	must.NoError(t, err)
	check.Equal(t, 201, stored.Status)
	check.Equal(t, "Accept, Origin", stored.Meta["Vary"])
	check.NotContains(t, stored.Meta, idemhttp.HeaderReplayed, "a replay marker is never stored")

	out := idemhttp.ToAPIGatewayV2(stored, true)
	check.Equal(t, in.Body, out.Body)
	check.Equal(t, []string{"z=0", "a=1; Path=/", "b=2, c; Path=/"}, out.Cookies, "cookies from a header and from Cookies, commas and order kept")
	check.NotContains(t, out.Headers, "set-cookie")
	check.Equal(t, "true", out.Headers[idemhttp.HeaderReplayed])
	check.Equal(t, "/x/1", out.Headers["Location"])
	check.False(t, out.IsBase64Encoded)
	check.NotContains(t, idemhttp.ToAPIGatewayV2(stored, false).Headers, idemhttp.HeaderReplayed)

	bin := []byte{0xff, 0x00, 0xfe}
	stored, err = idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{Body: base64.StdEncoding.EncodeToString(bin), IsBase64Encoded: true})
	must.NoError(t, err)
	check.Equal(t, bin, stored.Body)
	check.Equal(t, 200, stored.Status, "API Gateway's default status")
	out = idemhttp.ToAPIGatewayV2(stored, false)
	check.True(t, out.IsBase64Encoded)
	check.Equal(t, base64.StdEncoding.EncodeToString(bin), out.Body)

	_, err = idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{Body: "!!", IsBase64Encoded: true})
	check.Error(t, err)
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
		check.Equal(t, http.StatusCreated, rec.Code)
		check.Equal(t, []string{"a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT", "b=2"}, rec.Header().Values("Set-Cookie"), "cookies with commas survive")
		check.Equal(t, "Accept, Origin", rec.Header().Get("Vary"))
		check.Equal(t, "v", rec.Header().Get("X-Lower"))
		check.Equal(t, "ok", rec.Body.String())
	}
	check.Equal(t, "true", replay.Header().Get(idemhttp.HeaderReplayed))
}
