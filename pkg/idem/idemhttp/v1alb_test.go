package idemhttp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The REST API (payload 1.0) and load balancer paths behave as the HTTP
// API's: one execution for concurrent duplicates, 409 with Retry-After
// meanwhile, the first answer replayed byte for byte with
// Idempotent-Replayed (cookies included), 422 for another payload, 400
// without a key.

func (m *mailer) lambdaV1(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	status, body := m.send(ctx, []byte(req.Body))
	return events.APIGatewayProxyResponse{
		StatusCode:        status,
		Headers:           map[string]string{"Content-Type": "application/json"},
		MultiValueHeaders: map[string][]string{"Set-Cookie": {"a=1; Path=/", "b=2; Path=/"}},
		Body:              string(body),
	}, nil
}

func emailRequestV1(key, body string) events.APIGatewayProxyRequest {
	h := map[string]string{"Content-Type": "application/json"}
	mh := map[string][]string{"Content-Type": {"application/json"}}
	if key != "" {
		h["Idempotency-Key"] = key
		mh["Idempotency-Key"] = []string{key}
	}
	return events.APIGatewayProxyRequest{
		Resource: "/emails", Path: "/emails", HTTPMethod: http.MethodPost, Headers: h, MultiValueHeaders: mh, Body: body,
		RequestContext: events.APIGatewayProxyRequestContext{
			Authorizer: map[string]any{"claims": map[string]any{"iss": "https://cognito-idp.eu-west-1.amazonaws.com/pool", "sub": "ada"}},
		},
	}
}

// call is one request through one of the paths, as a client sees it.
type call struct {
	status  int
	headers map[string]string
	cookies []string
	body    string
}

// duplicatesRunOnce drives a path through the HTTP API test's scenario.
func duplicatesRunOnce(t *testing.T, m *mailer, seen *outcomes, do func(key, body string) call) {
	t.Helper()
	m.gate = make(chan struct{})
	const dups = 8
	var first call
	var wg sync.WaitGroup
	wg.Go(func() { first = do(`"mail-1"`, `{"to":"ada@example.com"}`) })
	<-m.started
	var dwg sync.WaitGroup
	conflicts := make([]call, dups)
	for i := range dups {
		dwg.Go(func() { conflicts[i] = do(`"mail-1"`, `{"to":"ada@example.com"}`) })
	}
	dwg.Wait()
	for i, c := range conflicts {
		check.Equal(t, http.StatusConflict, c.status, "duplicate %d: %s", i, c.body)
		check.Equal(t, idemhttp.ContentTypeProblem, c.headers["Content-Type"])
		secs, err := strconv.Atoi(c.headers["Retry-After"])
		must.NoError(t, err, "Retry-After is whole seconds")
		check.GreaterOrEqual(t, secs, 1)
	}
	close(m.gate)
	wg.Wait()
	must.Equal(t, http.StatusAccepted, first.status, first.body)
	check.NotContains(t, first.headers, idemhttp.HeaderReplayed)
	check.Equal(t, []string{"a=1; Path=/", "b=2; Path=/"}, first.cookies)
	for range dups {
		r := do(`"mail-1"`, `{"to":"ada@example.com"}`)
		check.Equal(t, first.status, r.status)
		check.Equal(t, first.body, r.body, "byte for byte")
		check.Equal(t, first.cookies, r.cookies, "cookies replay in order")
		check.Equal(t, "true", r.headers[idemhttp.HeaderReplayed])
		check.Equal(t, "application/json", r.headers["Content-Type"])
	}
	check.EqualValues(t, 1, m.sent.Load())
	check.Equal(t, map[idem.Outcome]int{idem.OutcomeExecuted: 1, idem.OutcomeInFlight: dups, idem.OutcomeReplayed: dups}, seen.get())
	check.Equal(t, http.StatusUnprocessableEntity, do(`"mail-1"`, `{"to":"bob@example.com"}`).status)
	check.Equal(t, http.StatusBadRequest, do("", `{"to":"bob@example.com"}`).status)
	check.Equal(t, http.StatusBadRequest, do(`"bad key`, `{"to":"bob@example.com"}`).status)
	check.EqualValues(t, 1, m.sent.Load())
}

func TestAPIGatewayV1MiddlewareBehavesAsV2(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := mustNew(t, observedStore(t, &seen)) // the Cognito authorizer names the caller
	m := newMailer()
	h := mw.APIGatewayV1(m.lambdaV1)
	duplicatesRunOnce(t, m, &seen, func(key, body string) call {
		resp, err := h(context.Background(), emailRequestV1(key, body))
		must.NoError(t, err)
		return call{status: resp.StatusCode, headers: resp.Headers, cookies: resp.MultiValueHeaders["Set-Cookie"], body: resp.Body}
	})
}

func (m *mailer) alb(ctx context.Context, req events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	status, body := m.send(ctx, []byte(req.Body))
	return events.ALBTargetGroupResponse{
		StatusCode:        status,
		MultiValueHeaders: map[string][]string{"Content-Type": {"application/json"}, "Set-Cookie": {"a=1; Path=/", "b=2; Path=/"}},
		Body:              string(body),
	}, nil
}

func emailRequestALB(multi bool, key, body string) events.ALBTargetGroupRequest {
	req := events.ALBTargetGroupRequest{HTTPMethod: http.MethodPost, Path: "/emails", Body: body}
	h := map[string]string{"content-type": "application/json", "x-user": "ada"}
	if key != "" {
		h["idempotency-key"] = key
	}
	if !multi {
		req.Headers = h
		return req
	}
	req.MultiValueHeaders = map[string][]string{}
	for k, v := range h {
		req.MultiValueHeaders[k] = []string{v}
	}
	return req
}

func TestALBMiddlewareBehavesAsV2InMultiValueMode(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := mustNew(t, observedStore(t, &seen),
		idemhttp.WithPrincipalALB(func(req events.ALBTargetGroupRequest) (string, error) { return req.MultiValueHeaders["x-user"][0], nil }))
	m := newMailer()
	h := mw.ALB(m.alb)
	duplicatesRunOnce(t, m, &seen, func(key, body string) call {
		resp, err := h(context.Background(), emailRequestALB(true, key, body))
		must.NoError(t, err)
		check.Empty(t, resp.Headers, "multi-value mode answers in MultiValueHeaders")
		check.Equal(t, strconv.Itoa(resp.StatusCode)+" "+http.StatusText(resp.StatusCode), resp.StatusDescription)
		headers := map[string]string{}
		for k, vs := range resp.MultiValueHeaders {
			if k != "Set-Cookie" {
				must.Len(t, vs, 1, k)
				headers[k] = vs[0]
			}
		}
		return call{status: resp.StatusCode, headers: headers, cookies: resp.MultiValueHeaders["Set-Cookie"], body: resp.Body}
	})
}

// Without multi-value headers, a load balancer passes one value a header:
// the answer carries the response's last cookie, and no multi-value map.
func TestALBMiddlewareSingleValueMode(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := newMiddleware(t, &seen)
	m := newMailer()
	h := mw.ALB(m.alb)
	first, err := h(context.Background(), emailRequestALB(false, `"k"`, `{"to":"ada@example.com"}`))
	must.NoError(t, err)
	again, err := h(context.Background(), emailRequestALB(false, `"k"`, `{"to":"ada@example.com"}`))
	must.NoError(t, err)
	check.Nil(t, first.MultiValueHeaders)
	check.Equal(t, http.StatusAccepted, first.StatusCode)
	check.Equal(t, "b=2; Path=/", first.Headers["Set-Cookie"])
	check.Equal(t, first.Body, again.Body)
	check.Equal(t, "b=2; Path=/", again.Headers["Set-Cookie"])
	check.Equal(t, "true", again.Headers[idemhttp.HeaderReplayed])
	check.EqualValues(t, 1, m.sent.Load())
}

// A load balancer authenticates nobody by itself: without PrincipalALB or
// WithAnonymous the middleware refuses to serve (500) rather than put
// every caller in one scope; a principal function naming nobody is 403.
func TestALBMiddlewareNeedsAPrincipal(t *testing.T) {
	t.Parallel()
	var seen outcomes
	store := observedStore(t, &seen)
	m := newMailer()
	h := mustNew(t, store).ALB(m.alb)
	resp, err := h(context.Background(), emailRequestALB(false, `"k"`, `{"to":"ada@example.com"}`))
	must.NoError(t, err)
	check.Equal(t, http.StatusInternalServerError, resp.StatusCode, resp.Body)
	h = mustNew(t, store, idemhttp.WithPrincipalALB(idemhttp.PrincipalALBOIDC)).ALB(m.alb)
	resp, err = h(context.Background(), emailRequestALB(false, `"k"`, `{"to":"ada@example.com"}`))
	must.NoError(t, err)
	check.Equal(t, http.StatusForbidden, resp.StatusCode, resp.Body)
	check.EqualValues(t, 0, m.sent.Load())
}

// Without an authorizer a REST API route is refused (500) unless
// WithAnonymous; an authorizer that names nobody is 403.
func TestAPIGatewayV1MiddlewareNeedsAnAuthorizer(t *testing.T) {
	t.Parallel()
	var seen outcomes
	mw := mustNew(t, observedStore(t, &seen))
	m := newMailer()
	h := mw.APIGatewayV1(m.lambdaV1)
	req := emailRequestV1(`"k"`, `{"to":"ada@example.com"}`)
	req.RequestContext.Authorizer = nil
	resp, err := h(context.Background(), req)
	must.NoError(t, err)
	check.Equal(t, http.StatusInternalServerError, resp.StatusCode, resp.Body)
	req.RequestContext.Authorizer = map[string]any{"integrationLatency": 3}
	resp, err = h(context.Background(), req)
	must.NoError(t, err)
	check.Equal(t, http.StatusForbidden, resp.StatusCode, resp.Body)
	check.EqualValues(t, 0, m.sent.Load())
}

func TestPrincipalV1(t *testing.T) {
	for _, tc := range []struct {
		name string
		rc   events.APIGatewayProxyRequestContext
		want string
		err  error
	}{
		{"cognito user pool", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"claims": map[string]any{"iss": "https://issuer", "sub": "u-1"}}}, `jwt:"https://issuer":sub="u-1"`, nil},
		{"client credentials", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"claims": map[string]any{"iss": "https://issuer", "client_id": "app"}}}, `jwt:"https://issuer":client_id="app"`, nil},
		{"claims without a subject", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"claims": map[string]any{"iss": "https://issuer"}}}, "", idemprincipal.ErrNoSubject},
		{"lambda authorizer", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"principalId": "tenant-7", "integrationLatency": 2}}, `lambda:principalId="tenant-7"`, nil},
		{"lambda authorizer's sub", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"sub": "u-2"}}, `lambda:sub="u-2"`, nil},
		{"iam", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: "arn:aws:iam::123456789012:user/ci", AccountID: "123456789012", Caller: "AIDA"}}, "iam:arn:aws:iam::123456789012:user/ci", nil},
		{"iam caller", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "123456789012", Caller: "AIDA"}}, "iam-caller:123456789012:AIDA", nil},
		{"cognito identity pool", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{
			UserArn: "arn:aws:sts::123456789012:assumed-role/Cognito_Auth/CognitoIdentityCredentials", CognitoIdentityPoolID: "eu-west-1:pool", CognitoIdentityID: "eu-west-1:id-1"}},
			`cognito-identity:"eu-west-1:pool":"eu-west-1:id-1"`, nil},
		{"none", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{SourceIP: "192.0.2.1"}}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := idemhttp.PrincipalV1(tc.rc)
			check.Equal(t, tc.want, got)
			check.True(t, errors.Is(err, tc.err) && (err == nil) == (tc.err == nil), "error %v, want %v", err, tc.err)
		})
	}
}

// oidcData is a load balancer's user claims token (its signature is not
// checked).
func oidcData(claims map[string]string) string {
	b, _ := json.Marshal(claims)
	return "eyJhbGciOiJFUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(b) + ".c2ln"
}

func TestPrincipalALBOIDC(t *testing.T) {
	req := func(h map[string]string) events.ALBTargetGroupRequest {
		return events.ALBTargetGroupRequest{Headers: h}
	}
	p, err := idemhttp.PrincipalALBOIDC(req(map[string]string{"x-amzn-oidc-identity": "u-1", "x-amzn-oidc-data": oidcData(map[string]string{"iss": "https://issuer", "sub": "u-1"})}))
	must.NoError(t, err)
	check.Equal(t, `jwt:"https://issuer":sub="u-1"`, p, "the same principal as an API Gateway JWT authorizer's")
	for name, h := range map[string]map[string]string{
		"no headers":        {},
		"identity only":     {"x-amzn-oidc-identity": "u-1"},
		"not a token":       {"x-amzn-oidc-identity": "u-1", "x-amzn-oidc-data": "nope"},
		"two subjects":      {"x-amzn-oidc-identity": "u-1", "x-amzn-oidc-data": oidcData(map[string]string{"iss": "https://issuer", "sub": "u-2"})},
		"claims not base64": {"x-amzn-oidc-identity": "u-1", "x-amzn-oidc-data": "a.!!!.c"},
	} {
		_, err := idemhttp.PrincipalALBOIDC(req(h))
		check.True(t, errors.Is(err, idemprincipal.ErrNoSubject), "%s: %v, want ErrNoSubject", name, err)
	}
}

// FuzzPrincipalALBOIDC: whatever the headers hold, the principal is an
// error wrapping ErrNoSubject or a quoted jwt principal.
func FuzzPrincipalALBOIDC(f *testing.F) {
	f.Add("u-1", oidcData(map[string]string{"iss": "https://issuer", "sub": "u-1"}))
	f.Add("", "a.b.c")
	f.Add("x", "a.eyJzdWIiOjF9.c")
	f.Fuzz(func(t *testing.T, identity, data string) {
		p, err := idemhttp.PrincipalALBOIDC(events.ALBTargetGroupRequest{Headers: map[string]string{"x-amzn-oidc-identity": identity, "x-amzn-oidc-data": data}})
		if err != nil {
			if !errors.Is(err, idemprincipal.ErrNoSubject) {
				t.Fatalf("error %v does not wrap ErrNoSubject", err)
			}
			return
		}
		iss, ok := strings.CutPrefix(p, "jwt:")
		iss, ok2 := strings.CutSuffix(iss, ":sub="+strconv.Quote(identity))
		if _, err := strconv.Unquote(iss); !ok || !ok2 || identity == "" || err != nil {
			t.Fatalf("principal %q for identity %q: want jwt:<quoted issuer>:sub=<quoted identity>", p, identity)
		}
	})
}
