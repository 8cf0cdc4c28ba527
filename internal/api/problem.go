// Package api serves the products HTTP API as API Gateway HTTP API
// (payload format 2.0) handlers: request decoding and RFC 9457
// problem+json errors, with the idempotency side (keys, callers, replays,
// 409/422/503) from pkg/idem/idemhttp. The Lambda functions and the local
// runner serve the same handlers.
package api

import (
	"net/http"

	"github.com/idemlambda/idemlambda/internal/problem"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/product"
)

// The problems of the products API beyond the idempotency layer's;
// docs/problems.md documents every type.
var (
	probBadRequest = problem.New(http.StatusBadRequest, "bad-request", "Bad request")
	probValidation = problem.New(http.StatusBadRequest, "validation", "Invalid product")
	probNotFound   = problem.New(http.StatusNotFound, "not-found", "Product not found")
	probTooLarge   = problem.New(http.StatusRequestEntityTooLarge, "too-large", "Request body too large")
	probMediaType  = problem.New(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type")
	probMethod     = problem.New(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed")
	probKey        = problem.New(http.StatusBadRequest, "idempotency-key", "Invalid or missing idempotency key")
)

// methodNotAllowed is the 405 for a route that serves only allow.
func methodNotAllowed(allow string) problem.Problem {
	p := probMethod.WithDetail("use " + allow)
	p.Headers = map[string]string{"Allow": allow}
	return p
}

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
