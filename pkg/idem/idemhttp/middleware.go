package idemhttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// DefaultMaxBodyBytes is the largest request body Middleware reads by
// default, on net/http and API Gateway alike (API Gateway passes bodies
// up to 10 MB, more than a small function can afford to fingerprint).
const DefaultMaxBodyBytes = 1 << 20

// Middleware makes a handler idempotent: a request with an
// Idempotency-Key runs the handler at most once per caller, key and
// payload, and every retry gets the stored response byte for byte with
// Idempotent-Replayed: true. It is for handlers whose effect is outside
// DynamoDB (a call to another API, a message): it reserves the key, runs
// the handler, and completes the key with a fenced write (idem.Store.Run,
// whatever the store's mode). Its one window is Run's: an effect whose
// completion was lost can run again after the lease ends. For effects that
// are DynamoDB writes, use idem.Store.Execute instead, which closes it.
//
// Keys are scoped to the caller, so a Middleware must know how to name
// one: on net/http, set Principal; on API Gateway, the route's authorizer
// names the caller (see PrincipalV2 and PrincipalV1), or set PrincipalV2
// or PrincipalV1; behind a load balancer, set PrincipalALB. One that cannot
// name the caller (no Principal, or no authorizer on the route) answers
// every protected request with a 500 (errNoPrincipal's message is the
// error behind it), rather than put every caller in one scope, where
// one caller is served another's stored response, cookies included, and
// can use up another's key. Set AllowAnonymous to choose that one scope.
//
// The fingerprint that tells a retry from another request is the method,
// path, query, body (canonical JSON when it is strict JSON) and the
// FingerprintHeaders (Content-Type by default).
//
// Answers of its own, all RFC 9457 problem+json: 400 for a missing or
// malformed key, 403 for a caller without a subject, 409 with Retry-After
// while another request holds the key (with Wait, only once the wait for
// its response runs out or it dies), 413 for a body over MaxBodyBytes
// (on both paths), 422 for the key reused with another payload, 503 with
// Retry-After when the store is unavailable, 500 otherwise. A response
// that is not stored is sent as it is, and the key is released so the
// client's retry runs the handler again: a status of 500 or more, one that
// asks the client to try again (408, 409, 425, 429), and one about the
// request's headers, which the retry may correct (401, 403, 406, 412,
// 415). Hop-by-hop headers and Content-Length are never stored (the
// replay's connection computes its own). A response too large to store is
// recorded without its body (HeaderBodyOmitted), and its replays
// carry none of the headers that describe a body (Content-Type, ETag and
// the like): the handler still runs once. If the completion cannot be
// recorded (idem.ErrNotRecorded), the client still gets the handler's
// response, not stored, and the key stays held until its lease ends: a
// retry gets 409 until then and runs the handler again after
// (docs/library.md in the repository). Requests with a safe method (GET,
// HEAD, OPTIONS, TRACE) pass straight through, so one middleware can wrap a
// whole router. The handler finds the request's scope, its key included,
// with idem.ScopeFrom. Set Store; without one every request gets a 500.
type Middleware struct {
	// Store keeps the records.
	Store *idem.Store
	// Operation names the protected operation in each key's scope. Empty:
	// the API Gateway route key ("POST /emails"), or for net/http the
	// method and the ServeMux pattern (or the path).
	Operation string
	// Optional lets a request without an Idempotency-Key through to the
	// handler, unprotected. By default it gets a 400.
	Optional bool
	// Principal names the caller of a net/http request (the
	// authenticated user, the API client), so that callers never share a
	// key. Returning an error answers 403, and so does returning "" (no
	// session) unless AllowAnonymous is set. Without it, and without
	// AllowAnonymous, the net/http path refuses to serve.
	Principal func(*http.Request) (string, error)
	// PrincipalV2 names the caller of an API Gateway request; nil means
	// the package's PrincipalV2, which reads the route's authorizer (JWT,
	// IAM or Lambda). Returning an error answers 403, and so does
	// returning "" unless AllowAnonymous is set. With the default, a
	// request on a route without an authorizer is refused unless
	// AllowAnonymous is set.
	PrincipalV2 func(events.APIGatewayV2HTTPRequestContext) (string, error)
	// PrincipalV1 names the caller of an API Gateway REST API request
	// (APIGatewayV1); nil means the package's PrincipalV1, under the same
	// policy as PrincipalV2's.
	PrincipalV1 func(events.APIGatewayProxyRequestContext) (string, error)
	// PrincipalALB names the caller of a load balancer's request (ALB),
	// which nothing authenticates by itself: PrincipalALBOIDC for rules
	// that authenticate with OIDC, or a function of your own. As with
	// Principal, returning an error or "" answers 403 (unless
	// AllowAnonymous), and without it, and without AllowAnonymous, the
	// ALB path refuses to serve.
	PrincipalALB func(events.ALBTargetGroupRequest) (string, error)
	// AllowAnonymous puts every caller that the middleware has no way to
	// name (no Principal, no authorizer, or a principal function that
	// returns "") in one anonymous scope (idem.NewAnonymousScope). Choose
	// it only for an API with a single caller, or where callers may see
	// each other's responses: any caller who learns a key replays its
	// response, and can use it up. A caller the principal function names,
	// whatever the name ("anonymous" included), is never in it.
	AllowAnonymous bool
	// FingerprintHeaders are the request headers that, besides the
	// method, path, query and body, tell a retry from another request:
	// the same key with another value of one of them is a 422. nil means
	// Content-Type only; an empty slice means none. Name the headers that
	// change what the handler does (Content-Type, a version header);
	// never ones that change per attempt (a date, a trace id).
	FingerprintHeaders []string
	// MaxBodyBytes limits the request body read for the fingerprint, on
	// both paths (an API Gateway body by its decoded size); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ProblemTypeBase prefixes the type URI of every problem the
	// middleware answers with; see ProblemFor. Empty gives "about:blank".
	ProblemTypeBase string
	// Wait is idem.WithWait for this middleware's requests: how long a
	// request that finds its key held by a live request waits for that
	// request's response (replayed, with Idempotent-Replayed: true)
	// before it answers 409 with Retry-After. 0 leaves the store's
	// idem.WithWait in force; a negative Wait turns waiting off for this
	// middleware.
	Wait time.Duration
}

// APIGatewayV2Handler is an aws-lambda-go handler of API Gateway HTTP API
// (payload 2.0) requests.
type APIGatewayV2Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// APIGatewayV2 wraps next, for lambda.Start. An error returned by next
// releases the key and goes back to the Lambda runtime unchanged.
func (m *Middleware) APIGatewayV2(next APIGatewayV2Handler) APIGatewayV2Handler {
	return serve(m, apiGatewayV2, next)
}

// ScopeV2 is the middleware's prologue for one API Gateway request, for
// a handler that calls the store itself: Store.Execute or Store.Transact,
// whose DynamoDB writes commit with the key's completion. It reads the
// key (key itself when the handler took it from elsewhere, such as a
// field of the body; else the Idempotency-Key header, parsed by
// ParseKey), names the caller under the middleware's principal policy
// (PrincipalV2, AllowAnonymous), and returns the scope of its Operation
// (or the route). Pass its error to AnswerV2, which answers it: 400 for
// a missing or malformed key, 403 for a caller without a subject, 500
// for a middleware that cannot name callers at all.
func (m *Middleware) ScopeV2(req events.APIGatewayV2HTTPRequest, key string) (idem.Scope, error) {
	r := m.requestV2(req, key)
	r.body = nil // the handler's fingerprint is its own
	scope, _, err := m.admit(r)
	return scope, err
}

// AnswerV2 is the API Gateway response to a request the middleware
// admitted (ScopeV2) and the store answered:
// the stored response, with Idempotent-Replayed: true on a replay; or,
// for an error, its problem (ProblemFor under ProblemTypeBase: 409 with
// Retry-After, 422, 503 with Retry-After, 500 without detail, or ScopeV2's
// own answers).
func (m *Middleware) AnswerV2(ctx context.Context, res idem.Result, err error) events.APIGatewayV2HTTPResponse {
	return apiGatewayV2.answer(m, events.APIGatewayV2HTTPRequest{}, res, err)
}

// Handler wraps a net/http handler. The handler's response is buffered
// (it is stored before it is sent), so streaming and hijacking are not
// available to it.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		values := r.Header.Values(HeaderKey)
		if safeMethod(r.Method) || (len(values) == 0 && m.Optional) {
			next.ServeHTTP(w, r)
			return
		}
		var body []byte
		in := m.requestHTTP(r, values, &body)
		scope, fp, err := m.admit(in)
		if err != nil {
			m.problemOf(err).Write(w)
			return
		}
		res, err := m.Store.Run(ctx, scope, fp, func(ctx context.Context) (idem.Response, error) {
			rec := newRecorder()
			r2 := r.WithContext(ctx)
			r2.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(rec, r2)
			resp := rec.response()
			if !replayable(resp.status) {
				return idem.Response{}, &unstored{resp: resp}
			}
			return resp.stored(), nil
		}, m.callOptions()...)
		var us *unstored
		switch {
		case err == nil:
			write(w, replayOf(res.Response), res.Outcome == idem.OutcomeReplayed)
		case errors.As(err, &us):
			write(w, us.resp, false)
		case errors.Is(err, idem.ErrNotRecorded) && res.Response.Status != 0:
			write(w, replayOf(res.Response), false) // the effect happened: say so
		default:
			m.problemFor(err).Write(w)
		}
	})
}

// request is what the middleware reads of a request, on either path,
// before the store is called.
type request struct {
	keys      []string // the Idempotency-Key header's values
	key       string   // a key the handler found elsewhere, used as it is
	operation string
	// principal names the caller under the middleware's policy: ""
	// when it chose the anonymous scope.
	principal func() (string, error)
	// body returns the request's body; nil when the fingerprint is the
	// handler's own (ScopeV2).
	body                func() ([]byte, error)
	method, path, query string
	header              func(name string) (string, bool)
}

// requestV2 reads an API Gateway request; a key the handler found
// elsewhere stands in for the header.
func (m *Middleware) requestV2(req events.APIGatewayV2HTTPRequest, key string) request {
	var keys []string
	if raw, ok := HeaderV2(req.Headers, HeaderKey); ok {
		keys = []string{raw}
	}
	return request{
		keys: keys, key: key, operation: m.operationV2(req),
		principal: func() (string, error) { return m.principalV2(req.RequestContext) },
		body:      func() ([]byte, error) { return m.eventBody(req.Body, req.IsBase64Encoded) },
		method:    req.RequestContext.HTTP.Method, path: req.RawPath, query: req.RawQueryString,
		header: func(name string) (string, bool) { return HeaderV2(req.Headers, name) },
	}
}

// requestHTTP reads a net/http request; its body, once read, is kept in
// *body for the handler.
func (m *Middleware) requestHTTP(r *http.Request, keys []string, body *[]byte) request {
	return request{
		keys: keys, operation: m.operationHTTP(r),
		principal: func() (string, error) { return m.principalHTTP(r) },
		body: func() ([]byte, error) {
			b, err := m.readBody(r)
			*body = b
			return b, err
		},
		method: r.Method, path: r.URL.Path, query: r.URL.RawQuery,
		header: func(name string) (string, bool) {
			vs := r.Header.Values(name)
			return strings.Join(vs, ", "), len(vs) > 0
		},
	}
}

// admit is the middleware's prologue, the same on both paths and for
// ScopeV2: the key, the caller, the scope, the body and the fingerprint.
// Its errors are *refused, which say how to answer.
func (m *Middleware) admit(in request) (idem.Scope, string, error) {
	if m.Store == nil && in.body != nil {
		return idem.Scope{}, "", &refused{err: errNoStore}
	}
	key, err := in.key, error(nil)
	switch {
	case key != "":
	case len(in.keys) == 0:
		return idem.Scope{}, "", rejected(probKey.problem(m.ProblemTypeBase, "send an "+HeaderKey+" header with a unique value per operation"), errMissingKey)
	case len(in.keys) > 1:
		err := fmt.Errorf("%w: %d %s headers; send one", idem.ErrInvalidKey, len(in.keys), HeaderKey)
		return idem.Scope{}, "", rejected(m.problemFor(err), err)
	default:
		if key, err = ParseKey(in.keys[0]); err != nil {
			return idem.Scope{}, "", rejected(m.problemFor(err), err)
		}
	}
	principal, err := in.principal()
	if err != nil {
		return idem.Scope{}, "", err
	}
	var scope idem.Scope
	if principal == "" { // the policy chose the anonymous scope
		scope, err = idem.NewAnonymousScope(in.operation, key)
	} else {
		scope, err = idem.NewScope(in.operation, principal, key)
	}
	if err != nil || in.body == nil {
		return scope, "", rejectedFor(m, err)
	}
	body, err := in.body()
	switch {
	case errors.Is(err, errBadBase64):
		return idem.Scope{}, "", rejected(probBadRequest.problem(m.ProblemTypeBase, "body is marked base64 but does not decode"), err)
	case err != nil:
		return idem.Scope{}, "", rejected(m.problemFor(err), err)
	}
	return scope, fingerprint(in.method, in.path, in.query, body, m.fingerprintHeaders(), in.header), nil
}

// refused is a request the middleware answers itself: the problem (none:
// ProblemFor's for err) and the error behind it.
type refused struct {
	problem *Problem
	err     error
}

func (r *refused) Error() string { return r.err.Error() }
func (r *refused) Unwrap() error { return r.err }

// rejected is a request refused with p.
func rejected(p Problem, err error) error {
	return &refused{problem: &p, err: err}
}

// rejectedFor is err (when not nil) as a request refused with its problem.
func rejectedFor(m *Middleware, err error) error {
	if err == nil {
		return nil
	}
	return rejected(m.problemFor(err), err)
}

// problemOf is the problem for err: a refusal's own, or the problem for
// a store error.
func (m *Middleware) problemOf(err error) Problem {
	var r *refused
	if errors.As(err, &r) && r.problem != nil {
		return *r.problem
	}
	return m.problemFor(err)
}

// callOptions passes the middleware's Wait, when set, to the store's call.
func (m *Middleware) callOptions() []idem.CallOption {
	if m.Wait == 0 {
		return nil
	}
	return []idem.CallOption{idem.CallWait(m.Wait)}
}

// safeMethod reports whether a method is safe (RFC 9110 section 9.2.1):
// such requests change nothing and need no key.
func safeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// replayable says whether a response is stored for replay: not a server
// error, not a status that asks the client to try again, and not one
// about the request's headers (credentials, Accept, preconditions,
// Content-Type), which the client's retry corrects without a new key.
func replayable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusUnauthorized, http.StatusForbidden, http.StatusNotAcceptable,
		http.StatusPreconditionFailed, http.StatusUnsupportedMediaType:
		return false
	}
	return status < 500
}

// unstored carries a handler's response that is sent but not stored; the
// key is released so the client's retry runs the handler again.
type unstored struct {
	out  any // a Lambda event's response, as the handler returned it
	resp response
}

func (u *unstored) Error() string { return "idemhttp: response not stored for replay" }

var (
	errMissingKey = fmt.Errorf("%w: no %s header", idem.ErrInvalidKey, HeaderKey)
	errNoStore    = errors.New("idemhttp: Middleware has no Store")
	errBadBase64  = errors.New("idemhttp: request body marked base64 does not decode")
	// errNoPrincipal is a Middleware with no way to name the caller: a
	// configuration error, answered 500.
	errNoPrincipal = errors.New("idemhttp: Middleware cannot name the caller, and keys are scoped to the caller")
)

// defaultFingerprintHeaders are FingerprintHeaders when it is nil.
var defaultFingerprintHeaders = []string{"Content-Type"}

func (m *Middleware) fingerprintHeaders() []string {
	if m.FingerprintHeaders == nil {
		return defaultFingerprintHeaders
	}
	return m.FingerprintHeaders
}

// principalV2 names an API Gateway request's caller under the
// middleware's policy (fromAuthorizer; "" for the anonymous scope).
func (m *Middleware) principalV2(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
	var custom func() (string, error)
	if m.PrincipalV2 != nil {
		custom = func() (string, error) { return m.PrincipalV2(rc) }
	}
	return m.fromAuthorizer(custom, func() (string, error) { return PrincipalV2(rc) }, "PrincipalV2")
}

// fromAuthorizer names an API Gateway request's caller under the
// middleware's policy: custom, the adopter's principal function (its
// field's name is field), when set; else builtin, which reads the
// authorizer, where finding none ("") is a middleware that cannot name
// callers (500) unless anonymity was chosen.
func (m *Middleware) fromAuthorizer(custom, builtin func() (string, error), field string) (string, error) {
	if custom != nil {
		p, err := m.named(custom())
		return p, m.noSubject(err, m.problemFor(ErrNoSubject))
	}
	p, err := builtin()
	switch {
	case err != nil:
		return "", m.noSubject(err, m.problemFor(ErrNoSubject))
	case p == "" && !m.AllowAnonymous:
		return "", m.cannotName(fmt.Errorf("%w: the route has no authorizer; add one, set %s, or AllowAnonymous to put every caller in one scope", errNoPrincipal, field))
	}
	return p, nil
}

// principalHTTP names a net/http request's caller under the middleware's
// policy (fromFunc; "" for the anonymous scope).
func (m *Middleware) principalHTTP(r *http.Request) (string, error) {
	var custom func() (string, error)
	if m.Principal != nil {
		custom = func() (string, error) { return m.Principal(r) }
	}
	return m.fromFunc(custom, "Principal")
}

// fromFunc names a caller where nothing authenticates the request for
// the middleware (net/http, a load balancer): only custom, the adopter's
// principal function (its field's name is field), or anonymity chosen
// serves.
func (m *Middleware) fromFunc(custom func() (string, error), field string) (string, error) {
	switch {
	case custom != nil:
		p, err := m.named(custom())
		return p, m.noSubject(err, probForbidden.problem(m.ProblemTypeBase, "the caller cannot be identified; idempotency keys are scoped to the caller"))
	case m.AllowAnonymous:
		return "", nil // the anonymous scope
	}
	return "", m.cannotName(fmt.Errorf("%w: set %s, or AllowAnonymous to put every caller in one scope", errNoPrincipal, field))
}

// cannotName is the 500 of a middleware that cannot name its callers:
// its detail says so (a deployment's mistake, which its first request
// shows), without err's advice, which is the server's.
func (m *Middleware) cannotName(err error) error {
	p := probInternal.problem(m.ProblemTypeBase, "the service cannot name its callers, and idempotency keys are scoped to the caller")
	return &refused{problem: &p, err: err}
}

// noSubject is a principal function's error (when not nil) as a request
// refused with p, a 403.
func (m *Middleware) noSubject(err error, p Problem) error {
	if err == nil {
		return nil
	}
	return rejected(p, err)
}

// named applies the one principal policy to what a Principal or
// PrincipalV2 function returned: an empty name (no session, no subject)
// is ErrNoSubject, a 403, unless AllowAnonymous puts such callers in the
// one anonymous scope (returned as ""); it never becomes that scope
// silently, and no name the function returns ("anonymous" included)
// ever does.
func (m *Middleware) named(principal string, err error) (string, error) {
	switch {
	case err != nil:
		return "", err
	case principal != "" || m.AllowAnonymous:
		return principal, nil
	}
	return "", fmt.Errorf("%w: the principal function named no caller", ErrNoSubject)
}

// eventBody returns a Lambda event's body bytes (API Gateway, a load
// balancer), refusing one over the limit before it is decoded or copied.
func (m *Middleware) eventBody(raw string, isBase64 bool) ([]byte, error) {
	limit := m.maxBodyBytes()
	tooLarge := fmt.Errorf("%w: the limit is %d bytes", ErrBodyTooLarge, limit)
	if !isBase64 {
		if int64(len(raw)) > limit {
			return nil, tooLarge
		}
		return []byte(raw), nil
	}
	// Padding makes the decoded size up to 2 bytes less than DecodedLen.
	if int64(base64.StdEncoding.DecodedLen(len(raw)))-2 > limit {
		return nil, tooLarge
	}
	body, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadBase64, err)
	}
	if int64(len(body)) > limit {
		return nil, tooLarge
	}
	return body, nil
}

func (m *Middleware) operationV2(req events.APIGatewayV2HTTPRequest) string {
	switch {
	case m.Operation != "":
		return m.Operation
	case req.RouteKey != "" && req.RouteKey != "$default":
		return req.RouteKey
	default:
		return req.RequestContext.HTTP.Method + " " + req.RawPath
	}
}

func (m *Middleware) operationHTTP(r *http.Request) string {
	switch {
	case m.Operation != "":
		return m.Operation
	case r.Pattern == "":
		return r.Method + " " + r.URL.Path
	case strings.Contains(r.Pattern, " "):
		return r.Pattern
	default:
		return r.Method + " " + r.Pattern
	}
}

func (m *Middleware) maxBodyBytes() int64 {
	if m.MaxBodyBytes <= 0 {
		return DefaultMaxBodyBytes
	}
	return m.MaxBodyBytes
}

func (m *Middleware) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	limit := m.maxBodyBytes()
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("idemhttp: read request body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: the limit is %d bytes", ErrBodyTooLarge, limit)
	}
	return b, nil
}

// HeaderV2 returns a header of an API Gateway v2 request by
// case-insensitive name. API Gateway sends lower-case names; other
// sources (tests, sam local) may not.
func HeaderV2(h map[string]string, name string) (string, bool) {
	if v, ok := h[strings.ToLower(name)]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// problemFor is ProblemFor under the middleware's type base.
func (m *Middleware) problemFor(err error) Problem { return ProblemFor(err, m.ProblemTypeBase) }
