// Package api serves the products HTTP API as API Gateway HTTP API
// (payload format 2.0) handlers: request decoding and RFC 9457
// problem+json errors (internal/problem, on idemhttp's problem type),
// with the idempotency side (keys, callers, replays, 409/422/503) from
// pkg/idem/idemhttp, and the plumbing every route shares (Reply, Handler,
// the logging and metrics decorators, Function). The Lambda functions and
// the local runner serve the same handlers.
package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/problem"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
)

// The problems of the products API beyond the idempotency layer's;
// docs/problems.md documents every type. Those idemhttp has too are
// idemhttp's (problem.KindOf).
var (
	probBadRequest = problem.BadRequest
	probValidation = problem.Kind{Status: http.StatusBadRequest, Name: "validation", Title: "Invalid product"}
	probNotFound   = problem.Kind{Status: http.StatusNotFound, Name: "not-found", Title: "Product not found"}
	probTooLarge   = problem.KindOf(idemhttp.ErrBodyTooLarge)
	probMediaType  = problem.Kind{Status: http.StatusUnsupportedMediaType, Name: "unsupported-media-type", Title: "Unsupported media type"}
	probKey        = problem.KindOf(idem.ErrInvalidKey)
)

// The refusals of internal/access (docs/problems.md): forbidden is
// idemhttp's (idemprincipal.ErrNoSubject's), for a caller the authorizer
// does not name.
var (
	probForbidden       = problem.KindOf(idemprincipal.ErrNoSubject)
	probSellerForbidden = problem.Kind{Status: http.StatusForbidden, Name: "seller-forbidden", Title: "Not authorized for this seller"}
	probTooMany         = problem.Kind{Status: http.StatusTooManyRequests, Name: "too-many-requests", Title: "Too many requests"}
)

// Refusal is the problem a refusal of internal/access is answered with:
// 403 forbidden for a request whose authorizer names no caller, 403
// seller-forbidden for a caller that may not act for the seller, 429
// too-many-requests with Retry-After for one over its limit. ok is false
// for any other error. Neither is stored as a key's response: a retry
// with the same key, once granted or once the window has passed, runs.
func Refusal(err error) (p problem.Problem, ok bool) {
	var seller *access.SellerError
	var limited *access.LimitedError
	switch {
	case errors.As(err, &limited):
		p = probTooMany.WithDetail("this caller has created as many products as its limit allows in this window; retry after Retry-After seconds")
		p.Headers = map[string]string{"Retry-After": access.RetryAfterSeconds(limited.RetryAfter)}
	case errors.As(err, &seller):
		p = probSellerForbidden.WithDetail(fmt.Sprintf("this caller may not act for seller %s: %s", seller.Seller, seller.Reason))
	case errors.Is(err, access.ErrNoCaller):
		p = probForbidden.WithDetail("the request's authorizer names no caller; a request acts for a seller only as an authorized caller")
	default:
		return problem.Problem{}, false
	}
	return p, true
}

// methodNotAllowed is the 405 for a route that serves only allow.
func methodNotAllowed(allow string) problem.Problem { return problem.MethodNotAllowed(allow) }

// validation is the 400 listing every broken rule.
func validation(errs []product.FieldError) problem.Problem {
	p := probValidation.WithDetail("the request body breaks the rules listed in errors")
	p.Errors = make([]problem.FieldError, len(errs))
	for i, e := range errs {
		p.Errors[i] = problem.FieldError{Field: e.Field, Message: e.Message}
	}
	return p
}

// respond renders a problem.
func respond(p problem.Problem) events.APIGatewayV2HTTPResponse { return p.APIGatewayV2() }
