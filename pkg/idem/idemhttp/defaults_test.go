package idemhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The tests of this file hold the middleware's defaults to what is safe
// for an adopter who gives New nothing but a store.

// bareMiddleware is a middleware with opts alone, on a fresh table whose
// store has storeOpts.
func bareMiddleware(t *testing.T, storeOpts []idem.Option, opts ...idemhttp.Option) *idemhttp.Middleware {
	t.Helper()
	db := idemtest.New(t).Client()
	must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
	store, err := idem.NewStore(db, "idempotency", storeOpts...)
	must.NoError(t, err)
	return mustNew(t, store, opts...)
}

// counting answers each request with status and a body of its count, and
// a cookie that belongs to the caller who made it.
func counting(runs *atomic.Int64, status int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		http.SetCookie(w, &http.Cookie{Name: "session", Value: r.Header.Get("Authorization")})
		w.WriteHeader(status)
		_, _ = io.WriteString(w, strings.Repeat("x", int(n)))
	})
}

func postWith(t *testing.T, h http.Handler, key string, header map[string]string, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/emails", strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Without a Principal, two callers would share one scope: the second
// would be served the first's response, its Set-Cookie included. The
// middleware refuses to serve instead, until told how to name callers
// or that anonymity is meant.
func TestMiddlewareWithoutAWayToNameCallersRefuses(t *testing.T) {
	t.Parallel()
	mw := bareMiddleware(t, nil)
	var runs atomic.Int64
	h := mw.Handler(counting(&runs, http.StatusAccepted))
	ada := postWith(t, h, `"k"`, map[string]string{"Authorization": "ada"}, `{}`)
	bob := postWith(t, h, `"k"`, map[string]string{"Authorization": "bob"}, `{}`)
	check.NotContains(t, bob.Header().Values("Set-Cookie"), "session=ada", "bob got ada's cookie")
	check.Equal(t, http.StatusInternalServerError, ada.Code, "a configuration error")
	check.Equal(t, idemhttp.ContentTypeProblem, ada.Header().Get("Content-Type"))
	check.Zero(t, runs.Load(), "nothing runs in a shared scope")

	// On API Gateway: a route without an authorizer names no caller.
	var v2runs atomic.Int64
	v2 := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		v2runs.Add(1)
		return events.APIGatewayV2HTTPResponse{StatusCode: 202}, nil
	})
	resp, err := v2(context.Background(), emailRequest("k", `{}`))
	must.NoError(t, err)
	check.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	check.Contains(t, resp.Body, "cannot name its callers", "the first request shows the deployment's mistake")
	check.Zero(t, v2runs.Load())
}

// 401, 403, 406, 412 and 415 depend on the request's headers, which a
// retry corrects: they are not stored, and the retry runs the handler.
func TestMiddlewareDoesNotStoreAnswersAboutHeaders(t *testing.T) {
	t.Parallel()
	for _, status := range []int{401, 403, 406, 412, 415} {
		mw := bareMiddleware(t, nil, idemhttp.WithAnonymous())
		var runs atomic.Int64
		h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				w.WriteHeader(status)
				return
			}
			w.WriteHeader(http.StatusAccepted)
		}))
		first := postWith(t, h, `"k"`, nil, `{}`)
		again := postWith(t, h, `"k"`, nil, `{}`)
		check.Equal(t, status, first.Code)
		check.Equal(t, http.StatusAccepted, again.Code, "%d was replayed", status)
		check.EqualValues(t, 2, runs.Load(), "%d", status)
	}
}

// A 415 for a wrong Content-Type is not replayed to the corrected retry;
// and a stored answer is not replayed to a request with another
// Content-Type: the header is part of the fingerprint.
func TestMiddlewareFingerprintsContentType(t *testing.T) {
	t.Parallel()
	mw := bareMiddleware(t, nil, idemhttp.WithAnonymous())
	var runs atomic.Int64
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		if r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	wrong := postWith(t, h, `"k"`, map[string]string{"Content-Type": "text/plain"}, `{}`)
	right := postWith(t, h, `"k"`, map[string]string{"Content-Type": "application/json"}, `{}`)
	check.Equal(t, http.StatusUnsupportedMediaType, wrong.Code)
	check.Equal(t, http.StatusAccepted, right.Code, "the corrected retry runs")
	check.Empty(t, right.Header().Get(idemhttp.HeaderReplayed))

	other := postWith(t, h, `"k"`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `{}`)
	check.Equal(t, http.StatusUnprocessableEntity, other.Code, "another Content-Type is another request")
	check.EqualValues(t, 2, runs.Load())
}

// A response stored without its body replays without the headers that
// describe the body, and no response keeps hop-by-hop headers or its
// Content-Length: a replayed Content-Length for a body not sent makes a
// client read an unexpected EOF.
func TestMiddlewareReplaysNoStaleBodyHeaders(t *testing.T) {
	t.Parallel()
	mw := bareMiddleware(t, []idem.Option{idem.WithMaxResponseBytes(1 << 10)}, idemhttp.WithAnonymous())
	big := strings.Repeat("x", 4<<10)
	mux := http.NewServeMux()
	mux.Handle("POST /emails", mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4096")
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("X-Request-Id", "r1")
		_, _ = io.WriteString(w, big)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func() (*http.Response, []byte, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/emails", strings.NewReader(`{}`))
		must.NoError(t, err)
		req.Header.Set("Idempotency-Key", `"big"`)
		resp, err := srv.Client().Do(req)
		must.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	_, body, err := post()
	must.NoError(t, err)
	check.Equal(t, big, string(body))
	resp, body, err := post()
	must.NoError(t, err, "the replay's body must read cleanly")
	check.Empty(t, body)
	check.Equal(t, "true", resp.Header.Get(idemhttp.HeaderReplayed))
	check.Equal(t, "too large", resp.Header.Get(idemhttp.HeaderBodyOmitted))
	check.Equal(t, "r1", resp.Header.Get("X-Request-Id"), "headers about the response stay")
	check.Empty(t, resp.Header.Get("ETag"), "headers about the omitted body go")
	check.Empty(t, resp.Header.Get("Content-Type"))

	// API Gateway: hop-by-hop headers, the ones Connection names, and
	// Content-Length are never stored.
	v2 := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "hi", Headers: map[string]string{
			"Content-Length": "2", "Connection": "close, X-Hop", "X-Hop": "1", "Keep-Alive": "timeout=5",
			"Transfer-Encoding": "chunked", "Upgrade": "h2c", "Trailer": "X-T", "TE": "trailers",
			"Proxy-Authenticate": "Basic", "Proxy-Connection": "keep-alive", "Content-Type": "text/plain",
		}}, nil
	})
	for _, replayed := range []string{"", "true"} {
		out, err := v2(context.Background(), emailRequest("hop", `{}`))
		must.NoError(t, err)
		check.Equal(t, replayed, out.Headers[idemhttp.HeaderReplayed])
		check.Equal(t, map[string]string{"Content-Type": "text/plain"}, withoutReplayed(out.Headers))
	}
}

func withoutReplayed(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if k != idemhttp.HeaderReplayed {
			out[k] = v
		}
	}
	return out
}

// The API Gateway path caps the body like net/http: 413, the handler not
// run, and no copy or canonical form of a body over the limit is made.
func TestLambdaMiddlewareCapsTheBody(t *testing.T) {
	t.Parallel()
	mw := bareMiddleware(t, nil, idemhttp.WithAnonymous(), idemhttp.WithMaxBodyBytes(16))
	var runs atomic.Int64
	h := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		runs.Add(1)
		return events.APIGatewayV2HTTPResponse{StatusCode: 202}, nil
	})
	resp, err := h(context.Background(), emailRequest("k", `{"to":"ada@example.com"}`))
	must.NoError(t, err)
	check.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	check.Equal(t, "application/problem+json", resp.Headers["Content-Type"])
	check.Zero(t, runs.Load())

	// The limit is on the bytes, not on their base64 text.
	req := emailRequest("k2", "eyJ0byI6ImFkYSJ9") // {"to":"ada"}, 12 bytes
	req.IsBase64Encoded = true
	resp, err = h(context.Background(), req)
	must.NoError(t, err)
	check.Equal(t, http.StatusAccepted, resp.StatusCode)
	req = emailRequest("k3", "eyJ0byI6ImFkYUBleGFtcGxlLmNvbSJ9")
	req.IsBase64Encoded = true
	resp, err = h(context.Background(), req)
	must.NoError(t, err)
	check.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	check.EqualValues(t, 1, runs.Load())
}
