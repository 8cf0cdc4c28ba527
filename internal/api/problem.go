// Package api serves the products HTTP API as API Gateway HTTP API
// (payload format 2.0) handlers: request decoding and RFC 9457
// problem+json errors (internal/problem, on idemhttp's problem type),
// with the idempotency side (keys, callers, replays, 409/422/503) from
// pkg/idem/idemhttp, and the plumbing every route shares (Reply, Handler,
// the logging and metrics decorators, Function). The Lambda functions and
// the local runner serve the same handlers.
package api

import (
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/problem"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
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
