// Package problem writes the products API's RFC 9457 problem+json answers.
// Every problem's type is a URI under TypeBase, documented in
// docs/problems.md; the idempotency answers come from pkg/idem/idemhttp
// under the same base.
package problem

import (
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// TypeBase prefixes the type URI of every problem the API answers with;
// each type is documented under its anchor there.
const TypeBase = "https://github.com/idemlambda/idemlambda/blob/main/docs/problems.md#"

// Problem is an RFC 9457 problem details object.
type Problem struct {
	// Type is a URI naming the kind of problem: TypeBase plus its name.
	Type string `json:"type"`
	// Title is a short summary of the kind.
	Title string `json:"title"`
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence to the client.
	Detail string `json:"detail"`
	// Errors lists the invalid fields of a validation problem.
	Errors []FieldError `json:"errors,omitempty"`
	// Headers are sent with the problem (Retry-After, Allow).
	Headers map[string]string `json:"-"`
}

// FieldError is one rule broken by one field of a request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// New returns a problem of the kind name (its anchor in docs/problems.md).
func New(status int, name, title string) Problem {
	return Problem{Type: TypeBase + name, Title: title, Status: status}
}

// For maps an error from pkg/idem (or idemhttp) to its problem: 409, 422,
// 400, 403, 413, 503 or, for anything else, a 500 without internal detail
// (idemhttp.ProblemFor).
func For(err error) Problem {
	p := idemhttp.ProblemFor(err, TypeBase)
	return Problem{Type: p.Type, Title: p.Title, Status: p.Status, Detail: p.Detail, Headers: p.Headers}
}

// WithDetail returns a copy of p with another detail.
func (p Problem) WithDetail(detail string) Problem {
	p.Detail = detail
	return p
}

// APIGatewayV2 renders the problem as an API Gateway HTTP API response.
func (p Problem) APIGatewayV2() events.APIGatewayV2HTTPResponse {
	h := make(map[string]string, len(p.Headers)+1)
	for k, v := range p.Headers {
		h[k] = v
	}
	h["Content-Type"] = idemhttp.ContentTypeProblem
	body, err := json.Marshal(p)
	if err != nil { // a Problem always encodes; keep the status anyway
		body = []byte(`{"title":"Internal server error","status":500}`)
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: p.Status, Headers: h, Body: string(body)}
}
