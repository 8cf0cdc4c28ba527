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
)

// DefaultMaxBodyBytes is the largest net/http request body Middleware
// reads by default (API Gateway requests are bounded by API Gateway).
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
// Answers of its own, all RFC 9457 problem+json: 400 for a missing or
// malformed key, 403 for a caller without a subject, 409 with Retry-After
// while another request holds the key, 413 for a body over the limit, 422
// for the key reused with another payload, 503 with Retry-After when the
// store is unavailable, 500 otherwise. A response with a status of 500 or
// more, or one of 408, 409, 425 and 429, is not stored: the key is
// released and the client's retry runs the handler again. A response too
// large to store is recorded without its body (idem.HeaderBodyOmitted):
// the handler still runs once. Requests with a safe method (GET, HEAD,
// OPTIONS, TRACE) pass straight through, so one middleware can wrap a
// whole router. The handler finds the request's scope, its key included,
// with ScopeFrom. Set Store; without one every request gets a 500.
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
	// Principal names the caller of a net/http request, so that callers
	// never share a key. nil puts every caller in one "anonymous" scope:
	// set it for any API with more than one caller. Returning an error
	// answers 403.
	Principal func(*http.Request) (string, error)
	// PrincipalV2 names the caller of an API Gateway request; nil means
	// the package's PrincipalV2. Returning an error answers 403.
	PrincipalV2 func(events.APIGatewayV2HTTPRequestContext) (string, error)
	// MaxBodyBytes limits the net/http request body read for the
	// fingerprint; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Observe, when set, is called once per request after its answer is
	// decided, with the outcome and the error behind it (nil on success):
	// the place for logs and metrics. It must not block.
	Observe func(ctx context.Context, outcome idem.Outcome, err error)
}

// APIGatewayV2Handler is an aws-lambda-go handler of API Gateway HTTP API
// (payload 2.0) requests.
type APIGatewayV2Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// APIGatewayV2 wraps next, for lambda.Start. An error returned by next
// releases the key and goes back to the Lambda runtime unchanged.
func (m *Middleware) APIGatewayV2(next APIGatewayV2Handler) APIGatewayV2Handler {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		raw, ok := HeaderV2(req.Headers, HeaderKey)
		if safeMethod(req.RequestContext.HTTP.Method) || (!ok && m.Optional) {
			return next(ctx, req)
		}
		reject := func(p Problem, err error) (events.APIGatewayV2HTTPResponse, error) {
			m.observe(ctx, idem.OutcomeRejected, err)
			return p.APIGatewayV2(), nil
		}
		if m.Store == nil {
			m.observe(ctx, idem.OutcomeError, errNoStore)
			return ProblemFor(errNoStore).APIGatewayV2(), nil
		}
		if !ok {
			return reject(MissingKey(), errMissingKey)
		}
		key, err := ParseKey(raw)
		if err != nil {
			return reject(ProblemFor(err), err)
		}
		principalOf := PrincipalV2
		if m.PrincipalV2 != nil {
			principalOf = m.PrincipalV2
		}
		principal, err := principalOf(req.RequestContext)
		if err != nil {
			return reject(probForbidden.with(ProblemFor(ErrNoSubject).Detail), err)
		}
		scope, err := idem.NewScope(m.operationV2(req), principal, key)
		if err != nil {
			return reject(ProblemFor(err), err)
		}
		body := []byte(req.Body)
		if req.IsBase64Encoded {
			if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
				return reject(NewProblem(http.StatusBadRequest, "bad-request", "Bad request", "body is marked base64 but does not decode"), err)
			}
		}
		fp := RequestFingerprint(req.RequestContext.HTTP.Method, req.RawPath, req.RawQueryString, body)

		var handlerErr error
		res, err := m.Store.Run(ctx, scope, fp, func(ctx context.Context) (idem.Response, error) {
			out, err := next(withScope(ctx, scope), req)
			if err != nil {
				handlerErr = err
				return idem.Response{}, err
			}
			resp, err := FromAPIGatewayV2(out)
			if err != nil {
				return idem.Response{}, err
			}
			if !replayable(resp.Status) {
				return idem.Response{}, &unstored{out: out}
			}
			return resp, nil
		})
		m.observe(ctx, res.Outcome, err)
		var us *unstored
		switch {
		case err == nil:
			return ToAPIGatewayV2(res.Response, res.Outcome == idem.OutcomeReplayed), nil
		case handlerErr != nil:
			return events.APIGatewayV2HTTPResponse{}, handlerErr
		case errors.As(err, &us):
			return us.out, nil
		case errors.Is(err, idem.ErrNotRecorded) && res.Response.Status != 0:
			return ToAPIGatewayV2(res.Response, false), nil // the effect happened: say so
		default:
			return ProblemFor(err).APIGatewayV2(), nil
		}
	}
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
		reject := func(p Problem, err error) {
			m.observe(ctx, idem.OutcomeRejected, err)
			p.Write(w)
		}
		if m.Store == nil {
			m.observe(ctx, idem.OutcomeError, errNoStore)
			ProblemFor(errNoStore).Write(w)
			return
		}
		switch len(values) {
		case 0:
			reject(MissingKey(), errMissingKey)
			return
		case 1:
		default:
			err := fmt.Errorf("%w: %d %s headers; send one", idem.ErrInvalidKey, len(values), HeaderKey)
			reject(ProblemFor(err), err)
			return
		}
		key, err := ParseKey(values[0])
		if err != nil {
			reject(ProblemFor(err), err)
			return
		}
		principal := Anonymous
		if m.Principal != nil {
			if principal, err = m.Principal(r); err != nil {
				reject(probForbidden.with("the caller cannot be identified; idempotency keys are scoped to the caller"), err)
				return
			}
		}
		scope, err := idem.NewScope(m.operationHTTP(r), principal, key)
		if err != nil {
			reject(ProblemFor(err), err)
			return
		}
		body, err := m.readBody(r)
		if err != nil {
			reject(ProblemFor(err), err)
			return
		}
		fp := RequestFingerprint(r.Method, r.URL.Path, r.URL.RawQuery, body)

		res, err := m.Store.Run(ctx, scope, fp, func(ctx context.Context) (idem.Response, error) {
			rec := newRecorder()
			r2 := r.WithContext(withScope(ctx, scope))
			r2.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(rec, r2)
			resp := rec.response()
			if !replayable(resp.Status) {
				return idem.Response{}, &unstored{resp: resp}
			}
			return resp, nil
		})
		m.observe(ctx, res.Outcome, err)
		var us *unstored
		switch {
		case err == nil:
			write(w, res.Response, res.Outcome == idem.OutcomeReplayed)
		case errors.As(err, &us):
			write(w, us.resp, false)
		case errors.Is(err, idem.ErrNotRecorded) && res.Response.Status != 0:
			write(w, res.Response, false) // the effect happened: say so
		default:
			ProblemFor(err).Write(w)
		}
	})
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

type scopeKey struct{}

func withScope(ctx context.Context, s idem.Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFrom returns the scope of the request a Middleware is running the
// handler for: its key is the one to pass to a downstream API that takes
// idempotency keys of its own, which closes Run's window.
func ScopeFrom(ctx context.Context) (idem.Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(idem.Scope)
	return s, ok
}

// replayable says whether a response is stored for replay: not a server
// error, and not a status that asks the client to try again.
func replayable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return status < 500
}

// unstored carries a handler's response that is sent but not stored; the
// key is released so the client's retry runs the handler again.
type unstored struct {
	out  events.APIGatewayV2HTTPResponse
	resp idem.Response
}

func (u *unstored) Error() string { return "idemhttp: response not stored for replay" }

var (
	errMissingKey = fmt.Errorf("%w: no %s header", idem.ErrInvalidKey, HeaderKey)
	errNoStore    = errors.New("idemhttp: Middleware has no Store")
)

func (m *Middleware) observe(ctx context.Context, o idem.Outcome, err error) {
	if m.Observe != nil {
		m.Observe(ctx, o, err)
	}
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

func (m *Middleware) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	limit := m.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
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
