// Package api serves the products HTTP API as API Gateway HTTP API
// (payload format 2.0) handlers: request decoding, the idempotency headers,
// and RFC 9457 problem+json errors. The Lambda functions and the local
// runner serve the same handlers.
package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/product"
)

// ProblemTypeBase prefixes every problem type URI; docs/problems.md
// documents each type under its anchor.
const ProblemTypeBase = "https://github.com/idemlambda/idemlambda/blob/main/docs/problems.md#"

// Problem is an RFC 9457 problem details object.
type Problem struct {
	Type   string               `json:"type"`
	Title  string               `json:"title"`
	Status int                  `json:"status"`
	Detail string               `json:"detail"`
	Errors []product.FieldError `json:"errors,omitempty"`
	// headers are sent with the problem (Retry-After).
	headers map[string]string
}

// Problem types, each with its status and title.
var (
	probBadRequest  = Problem{Type: "bad-request", Title: "Bad request", Status: http.StatusBadRequest}
	probValidation  = Problem{Type: "validation", Title: "Invalid product", Status: http.StatusBadRequest}
	probKey         = Problem{Type: "idempotency-key", Title: "Invalid or missing idempotency key", Status: http.StatusBadRequest}
	probForbidden   = Problem{Type: "forbidden", Title: "Caller cannot be identified", Status: http.StatusForbidden}
	probNotFound    = Problem{Type: "not-found", Title: "Product not found", Status: http.StatusNotFound}
	probInFlight    = Problem{Type: "in-flight", Title: "Request with this idempotency key is in progress", Status: http.StatusConflict}
	probTooLarge    = Problem{Type: "too-large", Title: "Request body too large", Status: http.StatusRequestEntityTooLarge}
	probMediaType   = Problem{Type: "unsupported-media-type", Title: "Unsupported media type", Status: http.StatusUnsupportedMediaType}
	probKeyReuse    = Problem{Type: "key-reuse", Title: "Idempotency key reused with a different payload", Status: http.StatusUnprocessableEntity}
	probUnavailable = Problem{Type: "unavailable", Title: "Service temporarily unavailable", Status: http.StatusServiceUnavailable}
	probInternal    = Problem{Type: "internal", Title: "Internal server error", Status: http.StatusInternalServerError}
	probMethod      = Problem{Type: "method-not-allowed", Title: "Method not allowed", Status: http.StatusMethodNotAllowed}
)

// with returns a copy of p with a detail.
func (p Problem) with(detail string) Problem {
	p.Detail = detail
	return p
}

// retryAfter returns a copy of p with a Retry-After header of at least one
// second.
func (p Problem) retryAfter(seconds int) Problem {
	p.headers = map[string]string{"Retry-After": strconv.Itoa(max(1, seconds))}
	return p
}

// response renders the problem as an API Gateway response.
func (p Problem) response() events.APIGatewayV2HTTPResponse {
	p.Type = ProblemTypeBase + p.Type
	body, err := json.Marshal(p)
	if err != nil { // a Problem always encodes; keep the status anyway
		body = []byte(`{"title":"Internal server error","status":500}`)
	}
	h := map[string]string{"Content-Type": "application/problem+json"}
	for k, v := range p.headers {
		h[k] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: p.Status, Headers: h, Body: string(body)}
}
