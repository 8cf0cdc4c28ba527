package idemhttp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// mailer is a toy endpoint that is not a product: it "sends" an e-mail (an
// effect outside DynamoDB, counted) and answers 202 with a fresh message
// id, so a second execution would show as another id.
type mailer struct {
	sent    atomic.Int64
	gate    chan struct{} // when set, each send waits for it to close
	started chan struct{} // closed when the first send starts
	once    sync.Once
}

func newMailer() *mailer { return &mailer{started: make(chan struct{})} }

func (m *mailer) send(ctx context.Context, body []byte) (int, []byte) {
	m.once.Do(func() { close(m.started) })
	if m.gate != nil {
		<-m.gate
	}
	var req struct{ To string }
	if err := json.Unmarshal(body, &req); err != nil || req.To == "" {
		return http.StatusBadRequest, []byte(`{"error":"to is required"}`)
	}
	m.sent.Add(1)
	out, _ := json.Marshal(map[string]string{"message_id": uuid.NewString(), "to": req.To})
	return http.StatusAccepted, out
}

func (m *mailer) lambda(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	status, body := m.send(ctx, []byte(req.Body))
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Cookies:    []string{"a=1; Path=/", "b=2; Path=/"},
		Body:       string(body),
	}, nil
}

func (m *mailer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	status, body := m.send(r.Context(), b)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Add("Set-Cookie", "a=1; Path=/")
	w.Header().Add("Set-Cookie", "b=2; Path=/")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// newMiddleware is a middleware on a fresh table whose store's calls are
// counted in observed. Callers are told apart where a test is about
// that; elsewhere one scope is enough, and chosen explicitly
// (WithAnonymous).
func newMiddleware(t *testing.T, observed *outcomes, opts ...idemhttp.Option) *idemhttp.Middleware {
	t.Helper()
	return mustNew(t, observedStore(t, observed), append([]idemhttp.Option{idemhttp.WithAnonymous()}, opts...)...)
}

// observedStore is a store on a fresh table whose calls are counted in
// observed.
func observedStore(t *testing.T, observed *outcomes) *idem.Store {
	t.Helper()
	db := idemtest.New(t).Client()
	must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
	store, err := idem.NewStore(db, "idempotency", idem.WithTrace(&idemtrace.Trace{CallDone: observed.add}))
	must.NoError(t, err)
	return store
}

// mustNew is idemhttp.New, which must succeed.
func mustNew(t *testing.T, store *idem.Store, opts ...idemhttp.Option) *idemhttp.Middleware {
	t.Helper()
	mw, err := idemhttp.New(store, opts...)
	must.NoError(t, err)
	return mw
}

// outcomes counts the outcomes of the store's calls, as its trace's
// CallDone reports them; a request the middleware refuses before it calls
// the store is none of them.
type outcomes struct {
	mu sync.Mutex
	m  map[idem.Outcome]int
}

func (o *outcomes) add(_ context.Context, i idemtrace.CallDoneInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[idem.Outcome]int{}
	}
	o.m[idem.Outcome(i.Outcome)]++
}

func (o *outcomes) get() map[idem.Outcome]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m
}

func emailRequest(key, body string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json"}
	if key != "" {
		h["idempotency-key"] = key
	}
	return events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /emails", RawPath: "/emails", Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/emails"},
		},
	}
}

func TestLambdaMiddlewareConcurrentDuplicatesRunOnce(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := newMiddleware(t, &seen)
	m := newMailer()
	m.gate = make(chan struct{})
	h := mw.APIGatewayV2(m.lambda)
	ctx := context.Background()
	const dups = 32
	req := emailRequest(`"mail-1"`, `{"to":"ada@example.com"}`)

	// The first request runs and holds the key...
	var first events.APIGatewayV2HTTPResponse
	var wg sync.WaitGroup
	wg.Go(func() {
		var err error
		first, err = h(ctx, req)
		check.NoError(t, err)
	})
	<-m.started
	// ...while 31 duplicates arrive at once: each is told 409, retry later.
	responses := make([]events.APIGatewayV2HTTPResponse, dups-1)
	var dwg sync.WaitGroup
	for i := range dups - 1 {
		dwg.Go(func() {
			resp, err := h(ctx, req)
			check.NoError(t, err)
			responses[i] = resp
		})
	}
	dwg.Wait()
	for i, r := range responses {
		check.Equal(t, http.StatusConflict, r.StatusCode, "duplicate %d: %s", i, r.Body)
		check.Equal(t, idemhttp.ContentTypeProblem, r.Headers["Content-Type"])
		secs, err := strconv.Atoi(r.Headers["Retry-After"])
		must.NoError(t, err, "Retry-After is whole seconds")
		check.GreaterOrEqual(t, secs, 1)
	}
	close(m.gate)
	wg.Wait()
	must.Equal(t, http.StatusAccepted, first.StatusCode, first.Body)
	check.NotContains(t, first.Headers, idemhttp.HeaderReplayed)

	// Now every duplicate replays the first answer byte for byte.
	var rwg sync.WaitGroup
	replays := make([]events.APIGatewayV2HTTPResponse, dups)
	for i := range dups {
		rwg.Go(func() {
			resp, err := h(ctx, req)
			check.NoError(t, err)
			replays[i] = resp
		})
	}
	rwg.Wait()
	for _, r := range replays {
		check.Equal(t, first.StatusCode, r.StatusCode)
		check.Equal(t, first.Body, r.Body, "byte for byte")
		check.Equal(t, first.Cookies, r.Cookies, "cookies replay in order")
		check.Equal(t, "true", r.Headers[idemhttp.HeaderReplayed])
		check.Equal(t, "application/json", r.Headers["Content-Type"])
	}
	check.EqualValues(t, 1, m.sent.Load(), "one e-mail for 64 requests")
	got := seen.get()
	t.Logf("outcomes: %v", got)
	check.Equal(t, map[idem.Outcome]int{idem.OutcomeExecuted: 1, idem.OutcomeInFlight: dups - 1, idem.OutcomeReplayed: dups}, got)

	// Same key, another body: 422. No key: 400.
	resp, err := h(ctx, emailRequest(`"mail-1"`, `{"to":"bob@example.com"}`))
	must.NoError(t, err)
	check.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp, err = h(ctx, emailRequest("", `{"to":"bob@example.com"}`))
	must.NoError(t, err)
	check.Equal(t, http.StatusBadRequest, resp.StatusCode)
	check.EqualValues(t, 1, m.sent.Load())
}

func TestNetHTTPMiddlewareConcurrentDuplicatesRunOnce(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := newMiddleware(t, &seen, idemhttp.WithPrincipal(func(r *http.Request) (string, error) {
		if u := r.Header.Get("X-User"); u != "" {
			return "user:" + u, nil
		}
		return "", fmt.Errorf("no user")
	}))
	m := newMailer()
	m.gate = make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("POST /emails", mw.Handler(m))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(key, user, body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/emails", strings.NewReader(body))
		must.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(idemhttp.HeaderKey, key)
		}
		if user != "" {
			req.Header.Set("X-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		return resp
	}
	read := func(r *http.Response) string {
		defer r.Body.Close()
		b, err := io.ReadAll(r.Body)
		must.NoError(t, err)
		return string(b)
	}
	const dups = 32
	body := `{"to":"ada@example.com"}`

	var first *http.Response
	var firstBody string
	var wg sync.WaitGroup
	wg.Go(func() {
		first = post(`"mail-1"`, "ada", body)
		firstBody = read(first)
	})
	<-m.started
	var dwg sync.WaitGroup
	for range dups - 1 {
		dwg.Go(func() {
			r := post(`"mail-1"`, "ada", `{ "to" : "ada@example.com" }`) // same payload, other spacing
			check.Equal(t, http.StatusConflict, r.StatusCode)
			check.NotEmpty(t, r.Header.Get("Retry-After"))
			check.Equal(t, idemhttp.ContentTypeProblem, r.Header.Get("Content-Type"))
			_ = read(r)
		})
	}
	dwg.Wait()
	close(m.gate)
	wg.Wait()
	must.Equal(t, http.StatusAccepted, first.StatusCode, firstBody)
	check.Empty(t, first.Header.Get(idemhttp.HeaderReplayed))

	var rwg sync.WaitGroup
	for range dups {
		rwg.Go(func() {
			r := post(`"mail-1"`, "ada", body)
			check.Equal(t, http.StatusAccepted, r.StatusCode)
			check.Equal(t, "true", r.Header.Get(idemhttp.HeaderReplayed))
			check.Equal(t, first.Header.Values("Set-Cookie"), r.Header.Values("Set-Cookie"))
			check.Equal(t, firstBody, read(r), "byte for byte")
		})
	}
	rwg.Wait()
	check.EqualValues(t, 1, m.sent.Load())

	// Another caller's same key is another scope: it sends its own.
	other := post(`"mail-1"`, "bob", body)
	check.Equal(t, http.StatusAccepted, other.StatusCode)
	check.NotEqual(t, firstBody, read(other))
	check.EqualValues(t, 2, m.sent.Load())
	// A caller the Principal func cannot name: 403, nothing sent.
	anon := post(`"mail-2"`, "", body)
	check.Equal(t, http.StatusForbidden, anon.StatusCode)
	_ = read(anon)
	check.EqualValues(t, 2, m.sent.Load())
	t.Logf("outcomes: %v", seen.get())
	check.Zero(t, seen.get()[idem.OutcomeRejected], "refused before any call of the store")
}

// A response the middleware must not store (a 5xx, a 429) is sent as it
// is, and the key is released for the retry.
func TestMiddlewareReleasesOnServerErrors(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := newMiddleware(t, &seen)
	var calls atomic.Int64
	h := mw.APIGatewayV2(func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		switch calls.Add(1) {
		case 1:
			return events.APIGatewayV2HTTPResponse{StatusCode: 503, Body: "down"}, nil
		case 2:
			return events.APIGatewayV2HTTPResponse{StatusCode: 429, Body: "slow down"}, nil
		case 3:
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("handler crashed")
		default:
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "ok"}, nil
		}
	})
	ctx := context.Background()
	req := emailRequest("k", `{}`)
	r, err := h(ctx, req)
	must.NoError(t, err)
	check.Equal(t, 503, r.StatusCode)
	check.Equal(t, "down", r.Body)
	r, err = h(ctx, req)
	must.NoError(t, err)
	check.Equal(t, 429, r.StatusCode)
	_, err = h(ctx, req)
	must.EqualError(t, err, "handler crashed", "the handler's error goes back to Lambda unchanged")
	r, err = h(ctx, req)
	must.NoError(t, err)
	check.Equal(t, 200, r.StatusCode)
	r, err = h(ctx, req)
	must.NoError(t, err)
	check.Equal(t, "true", r.Headers[idemhttp.HeaderReplayed])
	check.EqualValues(t, 4, calls.Load())
	check.Equal(t, map[idem.Outcome]int{idem.OutcomeReleased: 3, idem.OutcomeExecuted: 1, idem.OutcomeReplayed: 1}, seen.get())
}

func TestMiddlewareBinaryBodyAndOptionalKey(t *testing.T) {
	t.Parallel()
	store := observedStore(t, &outcomes{})
	png := []byte{0x89, 'P', 'N', 'G', 0xff, 0xfe, 0x00}
	var calls atomic.Int64
	handler := func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		calls.Add(1)
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "image/png"},
			Body: base64.StdEncoding.EncodeToString(png), IsBase64Encoded: true}, nil
	}
	h := mustNew(t, store, idemhttp.WithAnonymous()).APIGatewayV2(handler)
	ctx := context.Background()
	first, err := h(ctx, emailRequest("img", ``))
	must.NoError(t, err)
	again, err := h(ctx, emailRequest("img", ``))
	must.NoError(t, err)
	check.Equal(t, first.Body, again.Body)
	check.True(t, again.IsBase64Encoded, "binary bytes go out base64 again")
	got, err := base64.StdEncoding.DecodeString(again.Body)
	must.NoError(t, err)
	check.Equal(t, png, got, "the client gets the same bytes")
	check.EqualValues(t, 1, calls.Load())

	h = mustNew(t, store, idemhttp.WithAnonymous(), idemhttp.WithOptionalKey()).APIGatewayV2(handler)
	_, err = h(ctx, emailRequest("", ``))
	must.NoError(t, err)
	_, err = h(ctx, emailRequest("", ``))
	must.NoError(t, err)
	check.EqualValues(t, 3, calls.Load(), "without a key, the handler runs unprotected")
}

func TestNetHTTPMiddlewareRejectsLargeBodiesAndTwoKeys(t *testing.T) {
	t.Parallel()
	mw := newMiddleware(t, &outcomes{}, idemhttp.WithMaxBodyBytes(16))
	m := newMailer()
	h := mw.Handler(m)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/emails", bytes.NewReader(bytes.Repeat([]byte("x"), 17))))
	check.Equal(t, http.StatusBadRequest, rec.Code, "no key first")

	req := httptest.NewRequest(http.MethodPost, "/emails", bytes.NewReader(bytes.Repeat([]byte("x"), 17)))
	req.Header.Set(idemhttp.HeaderKey, "k")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	check.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)

	req = httptest.NewRequest(http.MethodPost, "/emails", strings.NewReader(`{}`))
	req.Header.Add(idemhttp.HeaderKey, "a")
	req.Header.Add(idemhttp.HeaderKey, "b")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	check.Equal(t, http.StatusBadRequest, rec.Code)
	check.Contains(t, rec.Body.String(), "send one")
	check.Zero(t, m.sent.Load())
}

func TestLambdaMiddlewareLeaseFollowsTheInvocationDeadline(t *testing.T) {
	t.Parallel()
	mw := newMiddleware(t, &outcomes{})
	m := newMailer()
	m.gate = make(chan struct{})
	h := mw.APIGatewayV2(m.lambda)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = h(ctx, emailRequest("dl", `{"to":"a@b"}`)) })
	<-m.started
	resp, err := h(context.Background(), emailRequest("dl", `{"to":"a@b"}`))
	must.NoError(t, err)
	secs, err := strconv.Atoi(resp.Headers["Retry-After"])
	must.NoError(t, err)
	// The holder's lease is its 5 s deadline plus the 2 s margin; the key
	// is free 1 ms after it, which a duplicate arriving within that
	// millisecond rounds up to 8 s.
	check.True(t, secs >= 5 && secs <= 8, "Retry-After %d", secs)
	close(m.gate)
	wg.Wait()
}

func TestMiddlewareLetsSafeMethodsThroughAndGivesTheHandlerItsScope(t *testing.T) {
	t.Parallel()
	mw := newMiddleware(t, &outcomes{})
	var gets atomic.Int64
	var seen idem.Scope
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
			return
		}
		seen, _ = idem.ScopeFrom(r.Context())
		w.WriteHeader(http.StatusEarlyHints) // informational: not the response
		w.WriteHeader(http.StatusCreated)
	}))
	for range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/emails", nil))
		check.Equal(t, http.StatusOK, rec.Code, "a GET needs no key")
	}
	check.EqualValues(t, 2, gets.Load())

	req := httptest.NewRequest(http.MethodPost, "/emails", strings.NewReader(`{}`))
	req.Header.Set(idemhttp.HeaderKey, `"k-7"`)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	check.Equal(t, http.StatusCreated, rec.Code, "103 then 201: the 201 is the response")
	check.Equal(t, "k-7", seen.Key, "the handler can pass the key downstream")
	req = httptest.NewRequest(http.MethodPost, "/emails", strings.NewReader(`{}`))
	req.Header.Set(idemhttp.HeaderKey, `"k-7"`)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	check.Equal(t, http.StatusCreated, rec.Code)
	check.Equal(t, "true", rec.Header().Get(idemhttp.HeaderReplayed))

	var none idemhttp.Middleware
	rec = httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodPost, "/emails", nil)
	req.Header.Set(idemhttp.HeaderKey, "k")
	none.Handler(http.NotFoundHandler()).ServeHTTP(rec, req)
	check.Equal(t, http.StatusInternalServerError, rec.Code, "a Middleware without a Store answers 500, never panics")
}

// A response too large to store still runs once: the replays get its
// status and a header that says the body was not kept.
func TestMiddlewareRecordsATooLargeResponseWithoutItsBody(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := newMiddleware(t, &seen)
	var runs atomic.Int64
	h := mw.APIGatewayV2(func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		runs.Add(1)
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: strings.Repeat("x", 70<<10)}, nil
	})
	first, err := h(context.Background(), emailRequest("big", `{}`))
	must.NoError(t, err)
	check.Len(t, first.Body, 70<<10)
	again, err := h(context.Background(), emailRequest("big", `{}`))
	must.NoError(t, err)
	check.Equal(t, 200, again.StatusCode)
	check.Equal(t, "too large", again.Headers[idemhttp.HeaderBodyOmitted])
	check.Equal(t, "true", again.Headers[idemhttp.HeaderReplayed])
	check.EqualValues(t, 1, runs.Load())
}

func TestMiddlewareCustomPrincipalV2(t *testing.T) {
	t.Parallel()
	mw := newMiddleware(t, &outcomes{}, idemhttp.WithPrincipalV2(func(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
		if tenant, ok := rc.Authorizer.Lambda["tenant"].(string); ok {
			return "tenant:" + tenant, nil
		}
		return "", idemprincipal.ErrNoSubject
	}))
	var calls atomic.Int64
	h := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		calls.Add(1)
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: fmt.Sprint(calls.Load())}, nil
	})
	as := func(tenant string) events.APIGatewayV2HTTPResponse {
		req := emailRequest("k", `{}`)
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"tenant": tenant}}
		if tenant == "" {
			req.RequestContext.Authorizer.Lambda = map[string]any{}
		}
		resp, err := h(context.Background(), req)
		must.NoError(t, err)
		return resp
	}
	check.Equal(t, "1", as("a").Body)
	check.Equal(t, "2", as("b").Body, "another tenant, another scope")
	check.Equal(t, "1", as("a").Body)
	check.Equal(t, http.StatusForbidden, as("").StatusCode)
}

// TestMiddlewareWaitReplaysTheFirstResponse: with WithWait, a duplicate
// that arrives during a slow first request gets the first's response
// with Idempotent-Replayed: true, not 409; WithWait(0) turns the store's
// wait off again.
func TestMiddlewareWaitReplaysTheFirstResponse(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := newMiddleware(t, &seen, idemhttp.WithWait(3*time.Second))
	m := newMailer()
	m.gate = make(chan struct{})
	h := mw.APIGatewayV2(m.lambda)
	ctx := context.Background()
	req := emailRequest(`"mail-wait"`, `{"to":"ada@example.com"}`)

	var first events.APIGatewayV2HTTPResponse
	var wg sync.WaitGroup
	wg.Go(func() {
		var err error
		first, err = h(ctx, req)
		check.NoError(t, err)
	})
	<-m.started
	time.AfterFunc(300*time.Millisecond, func() { close(m.gate) })
	dup, err := h(ctx, req)
	must.NoError(t, err)
	wg.Wait()
	must.Equal(t, http.StatusAccepted, first.StatusCode, first.Body)
	check.Equal(t, http.StatusAccepted, dup.StatusCode, "not 409: %s", dup.Body)
	check.Equal(t, "true", dup.Headers[idemhttp.HeaderReplayed])
	check.Equal(t, first.Body, dup.Body, "byte for byte")
	check.Equal(t, first.Cookies, dup.Cookies)
	check.EqualValues(t, 1, m.sent.Load())
	check.Equal(t, map[idem.Outcome]int{idem.OutcomeExecuted: 1, idem.OutcomeReplayed: 1}, seen.get())

	// net/http, on a store that waits, with the middleware's Wait off.
	waitSrv := idemtest.New(t)
	db := waitSrv.Client()
	must.NoError(t, idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}))
	store, err := idem.NewStore(db, "idempotency", idem.WithWait(5*time.Second))
	must.NoError(t, err)
	off := mustNew(t, store, idemhttp.WithAnonymous(), idemhttp.WithWait(0))
	m2 := newMailer()
	m2.gate = make(chan struct{})
	srv := httptest.NewServer(off.Handler(m2))
	defer srv.Close()
	post := func() *http.Response {
		r, err := http.NewRequest(http.MethodPost, srv.URL+"/emails", strings.NewReader(`{"to":"ada@example.com"}`))
		must.NoError(t, err)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(idemhttp.HeaderKey, `"mail-wait"`)
		resp, err := http.DefaultClient.Do(r)
		must.NoError(t, err)
		return resp
	}
	var firstHTTP *http.Response
	wg.Go(func() { firstHTTP = post() })
	<-m2.started
	polls := waitSrv.Calls(idemtest.OpGetItem)
	busy := post()
	_ = busy.Body.Close()
	check.Equal(t, http.StatusConflict, busy.StatusCode, "WithWait(0): 409 at once")
	check.Equal(t, polls, waitSrv.Calls(idemtest.OpGetItem), "no poll: the store's wait is off for the call")
	close(m2.gate)
	wg.Wait()
	_ = firstHTTP.Body.Close()
	check.Equal(t, http.StatusAccepted, firstHTTP.StatusCode)

	// The same middleware with Wait: a duplicate during a slow first
	// request replays it.
	on := mustNew(t, store, idemhttp.WithAnonymous(), idemhttp.WithWait(3*time.Second))
	m3 := newMailer()
	m3.gate = make(chan struct{})
	srv3 := httptest.NewServer(on.Handler(m3))
	defer srv3.Close()
	post3 := func() (*http.Response, string) {
		r, err := http.NewRequest(http.MethodPost, srv3.URL+"/emails", strings.NewReader(`{"to":"bob@example.com"}`))
		must.NoError(t, err)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(idemhttp.HeaderKey, `"mail-wait-3"`)
		resp, err := http.DefaultClient.Do(r)
		must.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		must.NoError(t, err)
		return resp, string(b)
	}
	var r1 *http.Response
	var b1 string
	wg.Go(func() { r1, b1 = post3() })
	<-m3.started
	time.AfterFunc(300*time.Millisecond, func() { close(m3.gate) })
	r2, b2 := post3()
	wg.Wait()
	check.Equal(t, http.StatusAccepted, r1.StatusCode)
	check.Equal(t, http.StatusAccepted, r2.StatusCode, "not 409: %s", b2)
	check.Equal(t, "true", r2.Header.Get(idemhttp.HeaderReplayed))
	check.Equal(t, b1, b2, "byte for byte")
	check.EqualValues(t, 1, m3.sent.Load())
}

// A principal function that names no caller (no session: "") answers 403
// on both paths, rather than put the caller in the scope every such
// caller shares, where the next one would be served this one's stored
// response, Set-Cookie included. WithAnonymous chooses that scope
// explicitly.
func TestMiddlewareRefusesAnEmptyPrincipal(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("WithAnonymous=%v", allow), func(t *testing.T) {
			t.Parallel()
			observed := &outcomes{}
			opts := []idemhttp.Option{
				idemhttp.WithPrincipalV2(func(events.APIGatewayV2HTTPRequestContext) (string, error) { return "", nil }),
				idemhttp.WithPrincipal(func(*http.Request) (string, error) { return "", nil }),
			}
			if allow {
				opts = append(opts, idemhttp.WithAnonymous())
			}
			mw := mustNew(t, observedStore(t, observed), opts...)
			m := newMailer()
			lambda := mw.APIGatewayV2(m.lambda)
			netHTTP := mw.Handler(m)

			var bodies []string
			for range 2 { // two sessionless callers, one key
				resp, err := lambda(context.Background(), emailRequest(`"k-1"`, `{"to":"a@example.com"}`))
				must.NoError(t, err)
				rec := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodPost, "/emails", strings.NewReader(`{"to":"b@example.com"}`))
				r.Header.Set("Idempotency-Key", `"k-2"`)
				netHTTP.ServeHTTP(rec, r)
				if !allow {
					check.Equal(t, http.StatusForbidden, resp.StatusCode, "API Gateway")
					check.Equal(t, "application/problem+json", resp.Headers["Content-Type"])
					check.Equal(t, http.StatusForbidden, rec.Code, "net/http")
					check.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
					continue
				}
				bodies = append(bodies, resp.Body, rec.Body.String())
			}
			if !allow {
				check.Zero(t, m.sent.Load(), "nothing ran")
				check.Empty(t, observed.get(), "refused before any call of the store")
				return
			}
			// Chosen explicitly: one shared scope, so the second caller
			// replays the first's response.
			check.Equal(t, bodies[0], bodies[2])
			check.Equal(t, bodies[1], bodies[3])
			check.EqualValues(t, 2, m.sent.Load())
		})
	}
}
