// Package problem names the HTTP API's problems on pkg/idem/idemhttp's
// problem+json type, which renders every one: the documentation every
// type is under (TypeBase, docs/problems.md), the kinds the API answers
// with beyond idemhttp's, and the one extension member a validation
// problem adds (errors). The idempotency answers, and the kinds idemhttp
// has too, come from idemhttp itself (For, KindOf).
package problem

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// TypeBase prefixes the type URI of every problem the API answers with;
// each type is documented under its anchor there.
const TypeBase = "https://github.com/idemlambda/idemlambda/blob/main/docs/problems.md#"

// Problem is an RFC 9457 problem: idemhttp's, which renders it (status,
// headers, Content-Type, body), with the errors member of a validation
// problem beside it.
type Problem struct {
	idemhttp.Problem
	// Errors lists the invalid fields of a validation problem.
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError is one rule broken by one field of a request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// APIGatewayV2 renders the problem as an API Gateway HTTP API response,
// by idemhttp; only a problem with errors has its body encoded here, with
// that member (idemhttp's Problem has no extension members).
func (p Problem) APIGatewayV2() events.APIGatewayV2HTTPResponse {
	resp := p.Problem.APIGatewayV2()
	if len(p.Errors) > 0 {
		if body, err := json.Marshal(p); err == nil {
			resp.Body = string(body)
		}
	}
	return resp
}

// Kind is one kind of problem: its status, its name (the anchor under
// TypeBase) and its title.
type Kind struct {
	Status      int
	Name, Title string
}

// WithDetail is a problem of the kind, explaining this occurrence.
func (k Kind) WithDetail(detail string) Problem {
	return Problem{Problem: idemhttp.Problem{Type: TypeBase + k.Name, Title: k.Title, Status: k.Status, Detail: detail}}
}

// KindOf is the kind idemhttp answers err with (idemhttp.ProblemFor): the
// API's idempotency-key and too-large are idemhttp's, not copies.
func KindOf(err error) Kind {
	p := idemhttp.ProblemFor(err, TypeBase)
	return Kind{Status: p.Status, Name: strings.TrimPrefix(p.Type, TypeBase), Title: p.Title}
}

// For maps an error from pkg/idem (or idemhttp) to its problem: 409, 422,
// 400, 403, 413, 503 or, for anything else, a 500 without internal detail
// (idemhttp.ProblemFor).
func For(err error) Problem { return Problem{Problem: idemhttp.ProblemFor(err, TypeBase)} }

// The API's own kinds that every route may answer with.
var (
	// BadRequest: a request that is not what the route reads (a body that
	// is no JSON object, an id that is no UUID).
	BadRequest = Kind{http.StatusBadRequest, "bad-request", "Bad request"}
	// methodNotAllowed: see MethodNotAllowed.
	methodNotAllowed = Kind{http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed"}
)

// MethodNotAllowed is the 405 for a route that serves only allow.
func MethodNotAllowed(allow string) Problem {
	p := methodNotAllowed.WithDetail("use " + allow)
	p.Headers = map[string]string{"Allow": allow}
	return p
}
