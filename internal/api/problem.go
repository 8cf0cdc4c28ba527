// Package api serves the products HTTP API as API Gateway HTTP API
// (payload format 2.0) handlers: request decoding and RFC 9457
// problem+json errors, with the idempotency side (keys, callers, replays,
// 409/422/503) from pkg/idem/idemhttp. The Lambda functions and the local
// runner serve the same handlers.
package api

import (
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// The problems of the products API beyond idemhttp's; docs/problems.md
// documents every type.
var (
	probBadRequest = idemhttp.NewProblem(http.StatusBadRequest, "bad-request", "Bad request", "")
	probValidation = idemhttp.NewProblem(http.StatusBadRequest, "validation", "Invalid product", "")
	probNotFound   = idemhttp.NewProblem(http.StatusNotFound, "not-found", "Product not found", "")
	probTooLarge   = idemhttp.NewProblem(http.StatusRequestEntityTooLarge, "too-large", "Request body too large", "")
	probMediaType  = idemhttp.NewProblem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type", "")
	probMethod     = idemhttp.NewProblem(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed", "")
)

// methodNotAllowed is the 405 for a route that serves only allow.
func methodNotAllowed(allow string) idemhttp.Problem {
	p := probMethod.WithDetail("use " + allow)
	p.Headers = map[string]string{"Allow": allow}
	return p
}

// validation is the 400 listing every broken rule.
func validation(errs []product.FieldError) idemhttp.Problem {
	p := probValidation.WithDetail("the request body breaks the rules listed in errors")
	p.Errors = make([]idemhttp.FieldError, len(errs))
	for i, e := range errs {
		p.Errors[i] = idemhttp.FieldError{Field: e.Field, Message: e.Message}
	}
	return p
}

// respond renders a problem.
func respond(p idemhttp.Problem) events.APIGatewayV2HTTPResponse { return p.APIGatewayV2() }
