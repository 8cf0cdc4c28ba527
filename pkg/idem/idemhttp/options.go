package idemhttp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// DefaultMaxBodyBytes is the largest request body a Middleware reads
// unless WithMaxBodyBytes says otherwise (API Gateway passes bodies up to
// 10 MB, more than a small function can afford to fingerprint).
const DefaultMaxBodyBytes = 1 << 20

// Middleware makes the handlers it wraps idempotent on its store: per
// caller, Idempotency-Key and payload, a handler runs at most once and
// every retry gets its response back, as the package documentation
// says. Build one with New; it is safe for concurrent use.
type Middleware struct {
	store              *idem.Store
	operation          string
	optional           bool
	anonymous          bool
	principal          func(*http.Request) (string, error)
	principalV2        func(events.APIGatewayV2HTTPRequestContext) (string, error)
	principalV1        func(events.APIGatewayProxyRequestContext) (string, error)
	principalALB       func(events.ALBTargetGroupRequest) (string, error)
	fingerprintHeaders []string
	maxBodyBytes       int64
	problemTypeBase    string
	call               []idem.CallOption // WithWait, WithRetention
}

// Option configures a Middleware.
type Option struct{ apply func(*Middleware) error }

// New returns a middleware on store, configured by opts; it refuses a
// missing store and an option New cannot honour.
func New(store *idem.Store, opts ...Option) (*Middleware, error) {
	if store == nil {
		return nil, errors.New("idemhttp: nil store")
	}
	m := &Middleware{store: store, fingerprintHeaders: []string{"Content-Type"}, maxBodyBytes: DefaultMaxBodyBytes}
	for _, o := range opts {
		if o.apply == nil {
			continue
		}
		if err := o.apply(m); err != nil {
			return nil, fmt.Errorf("idemhttp: %w", err)
		}
	}
	if err := store.ValidateCall(m.call...); err != nil {
		return nil, fmt.Errorf("idemhttp: %w", err)
	}
	return m, nil
}

func option(f func(*Middleware) error) Option { return Option{f} }

// principalOption is the option named name that sets a principal
// function, refused when it is nil.
func principalOption(name string, isNil bool, set func(*Middleware)) Option {
	return option(func(m *Middleware) error {
		if isNil {
			return fmt.Errorf("%s: nil function", name)
		}
		set(m)
		return nil
	})
}

// WithOperation names the operation of every scope the middleware makes.
// By default it is the request's route: API Gateway's route key ("POST
// /emails"), a REST API's method and resource, a load balancer's or
// net/http's method and path (the ServeMux pattern when there is one),
// so one middleware can serve a whole router.
func WithOperation(operation string) Option {
	return option(func(m *Middleware) error {
		if operation == "" {
			return errors.New("WithOperation: empty operation")
		}
		m.operation = operation
		return nil
	})
}

// WithOptionalKey lets a request without an Idempotency-Key through to
// the handler, unprotected; by default it is a 400.
func WithOptionalKey() Option {
	return option(func(m *Middleware) error { m.optional = true; return nil })
}

// WithAnonymous puts the callers the middleware cannot name (no
// principal function, no authorizer, or a principal function that
// returns "") in the one anonymous scope (idem.NewAnonymousScope), where
// they replay each other's responses, cookies included: only for an API
// with one caller, or whose callers may see each other's responses. A
// caller a principal function names is never in it. By default such
// callers are refused.
func WithAnonymous() Option {
	return option(func(m *Middleware) error { m.anonymous = true; return nil })
}

// WithPrincipal names the caller of a net/http request (Handler): the
// authenticated user or API client, never a header the client chooses
// freely. An error, or "" without WithAnonymous, answers 403.
func WithPrincipal(fn func(*http.Request) (string, error)) Option {
	return principalOption("WithPrincipal", fn == nil, func(m *Middleware) { m.principal = fn })
}

// WithPrincipalV2 names the caller of an API Gateway HTTP API request
// (APIGatewayV2, ScopeV2) in place of PrincipalV2, the default.
func WithPrincipalV2(fn func(events.APIGatewayV2HTTPRequestContext) (string, error)) Option {
	return principalOption("WithPrincipalV2", fn == nil, func(m *Middleware) { m.principalV2 = fn })
}

// WithPrincipalV1 names the caller of an API Gateway REST API request
// (APIGatewayV1, ScopeV1) in place of PrincipalV1, the default.
func WithPrincipalV1(fn func(events.APIGatewayProxyRequestContext) (string, error)) Option {
	return principalOption("WithPrincipalV1", fn == nil, func(m *Middleware) { m.principalV1 = fn })
}

// WithPrincipalALB names the caller of a load balancer's request (ALB,
// ScopeALB), which nothing authenticates by itself: PrincipalALBOIDC
// for listener rules that authenticate with OIDC, or a function of your
// own.
func WithPrincipalALB(fn func(events.ALBTargetGroupRequest) (string, error)) Option {
	return principalOption("WithPrincipalALB", fn == nil, func(m *Middleware) { m.principalALB = fn })
}

// WithFingerprintHeaders names the request headers that, besides the
// method, path, query and body, tell a retry from another request (the
// same key with another value of one is a 422): Content-Type by default;
// none when called without names. Name the headers that change what the
// handler does, never ones that change per attempt (a date, a trace id).
func WithFingerprintHeaders(names ...string) Option {
	return option(func(m *Middleware) error {
		for _, n := range names {
			if n == "" {
				return errors.New("WithFingerprintHeaders: empty header name")
			}
		}
		m.fingerprintHeaders = append([]string{}, names...)
		return nil
	})
}

// WithMaxBodyBytes limits the request body read for the fingerprint
// (DefaultMaxBodyBytes by default; an API Gateway body by its decoded
// size): a larger one is a 413.
func WithMaxBodyBytes(n int64) Option {
	return option(func(m *Middleware) error {
		if n <= 0 {
			return fmt.Errorf("WithMaxBodyBytes: %d is not positive", n)
		}
		m.maxBodyBytes = n
		return nil
	})
}

// WithProblemTypeBase prefixes the type URI of every problem the
// middleware answers with (see ProblemFor); without it, "about:blank".
func WithProblemTypeBase(base string) Option {
	return option(func(m *Middleware) error { m.problemTypeBase = base; return nil })
}

// WithWait is idem.WithWait for the middleware's requests
// (idem.CallWait): a request that finds its key held by a live request
// waits up to d for that request's response, replayed, before it
// answers 409; 0 turns waiting off for them. Without it, the store's
// wait holds.
func WithWait(d time.Duration) Option {
	return option(func(m *Middleware) error {
		if d < 0 {
			return fmt.Errorf("WithWait: %v is negative", d)
		}
		m.call = append(m.call, idem.CallWait(d))
		return nil
	})
}

// WithRetention is idem.WithRetention for the middleware's requests
// (idem.CallRetention): how long a response replays. New refuses one
// under the store's lease.
func WithRetention(d time.Duration) Option {
	return option(func(m *Middleware) error {
		m.call = append(m.call, idem.CallRetention(d))
		return nil
	})
}
