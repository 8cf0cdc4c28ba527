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

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
)

// Handler wraps a net/http handler. The handler's response is buffered
// (it is stored before it is sent), so streaming and hijacking are not
// available to it.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		values := r.Header.Values(HeaderKey)
		if safeMethod(r.Method) || (len(values) == 0 && m.optional) {
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
		res, err := m.store.Run(ctx, scope, fp, func(ctx context.Context) (idem.Response, error) {
			rec := newRecorder()
			r2 := r.WithContext(ctx)
			r2.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(rec, r2)
			resp := rec.response()
			if !replayable(resp.status) {
				return idem.Response{}, &unstored{resp: resp}
			}
			return resp.stored(), nil
		}, m.call...)
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
		principal: func() (string, error) { return m.callerV2(req.RequestContext) },
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
		principal: func() (string, error) { return m.callerHTTP(r) },
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
	if m.store == nil && in.body != nil {
		return idem.Scope{}, "", &refused{err: errNoStore}
	}
	key, err := in.key, error(nil)
	switch {
	case key != "":
	case len(in.keys) == 0:
		return idem.Scope{}, "", rejected(probKey.problem(m.problemTypeBase, "send an "+HeaderKey+" header with a unique value per operation"), errMissingKey)
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
		return idem.Scope{}, "", rejected(probBadRequest.problem(m.problemTypeBase, "body is marked base64 but does not decode"), err)
	case err != nil:
		return idem.Scope{}, "", rejected(m.problemFor(err), err)
	}
	return scope, fingerprint(in.method, in.path, in.query, body, m.fingerprintHeaders, in.header), nil
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
	errNoStore    = errors.New("idemhttp: a Middleware not built with New has no store")
	errBadBase64  = errors.New("idemhttp: request body marked base64 does not decode")
	// errNoPrincipal is a Middleware with no way to name the caller: a
	// configuration error, answered 500.
	errNoPrincipal = errors.New("idemhttp: Middleware cannot name the caller, and keys are scoped to the caller")
)

// callerV2 names an API Gateway request's caller under the
// middleware's policy (fromAuthorizer; "" for the anonymous scope).
func (m *Middleware) callerV2(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
	var custom func() (string, error)
	if m.principalV2 != nil {
		custom = func() (string, error) { return m.principalV2(rc) }
	}
	return m.fromAuthorizer(custom, func() (string, error) { return PrincipalV2(rc) }, "WithPrincipalV2")
}

// fromAuthorizer names an API Gateway request's caller under the
// middleware's policy: custom, the adopter's principal function (set by
// the option named option), when set; else builtin, which reads the
// authorizer, where finding none ("") is a middleware that cannot name
// callers (500) unless anonymity was chosen.
func (m *Middleware) fromAuthorizer(custom, builtin func() (string, error), option string) (string, error) {
	if custom != nil {
		p, err := m.named(custom())
		return p, m.noSubject(err, m.problemFor(idemprincipal.ErrNoSubject))
	}
	p, err := builtin()
	switch {
	case err != nil:
		return "", m.noSubject(err, m.problemFor(idemprincipal.ErrNoSubject))
	case p == "" && !m.anonymous:
		return "", m.cannotName(fmt.Errorf("%w: the route has no authorizer; add one, or use %s, or WithAnonymous to put every caller in one scope", errNoPrincipal, option))
	}
	return p, nil
}

// callerHTTP names a net/http request's caller under the middleware's
// policy (fromFunc; "" for the anonymous scope).
func (m *Middleware) callerHTTP(r *http.Request) (string, error) {
	var custom func() (string, error)
	if m.principal != nil {
		custom = func() (string, error) { return m.principal(r) }
	}
	return m.fromFunc(custom, "WithPrincipal")
}

// fromFunc names a caller where nothing authenticates the request for
// the middleware (net/http, a load balancer): only custom, the adopter's
// principal function (set by the option named option), or anonymity
// chosen serves.
func (m *Middleware) fromFunc(custom func() (string, error), option string) (string, error) {
	switch {
	case custom != nil:
		p, err := m.named(custom())
		return p, m.noSubject(err, probForbidden.problem(m.problemTypeBase, "the caller cannot be identified; idempotency keys are scoped to the caller"))
	case m.anonymous:
		return "", nil // the anonymous scope
	}
	return "", m.cannotName(fmt.Errorf("%w: use %s, or WithAnonymous to put every caller in one scope", errNoPrincipal, option))
}

// cannotName is the 500 of a middleware that cannot name its callers:
// its detail says so (a deployment's mistake, which its first request
// shows), without err's advice, which is the server's.
func (m *Middleware) cannotName(err error) error {
	p := probInternal.problem(m.problemTypeBase, "the service cannot name its callers, and idempotency keys are scoped to the caller")
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

// named applies the one principal policy to what a principal function
// returned: an empty name (no session, no subject) is
// idemprincipal.ErrNoSubject, a 403, unless WithAnonymous puts such callers in the
// one anonymous scope (returned as ""); it never becomes that scope
// silently, and no name the function returns ("anonymous" included)
// ever does.
func (m *Middleware) named(principal string, err error) (string, error) {
	switch {
	case err != nil:
		return "", err
	case principal != "" || m.anonymous:
		return principal, nil
	}
	return "", fmt.Errorf("%w: the principal function named no caller", idemprincipal.ErrNoSubject)
}

// eventBody returns a Lambda event's body bytes (API Gateway, a load
// balancer), refusing one over the limit before it is decoded or copied.
func (m *Middleware) eventBody(raw string, isBase64 bool) ([]byte, error) {
	limit := m.maxBodyBytes
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
	case m.operation != "":
		return m.operation
	case req.RouteKey != "" && req.RouteKey != "$default":
		return req.RouteKey
	default:
		return req.RequestContext.HTTP.Method + " " + req.RawPath
	}
}

func (m *Middleware) operationHTTP(r *http.Request) string {
	switch {
	case m.operation != "":
		return m.operation
	case r.Pattern == "":
		return r.Method + " " + r.URL.Path
	case strings.Contains(r.Pattern, " "):
		return r.Pattern
	default:
		return r.Method + " " + r.Pattern
	}
}

func (m *Middleware) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	limit := m.maxBodyBytes
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
func (m *Middleware) problemFor(err error) Problem { return ProblemFor(err, m.problemTypeBase) }
