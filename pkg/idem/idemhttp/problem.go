package idemhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// TypeBase prefixes the type URI of every problem this package writes;
// each type is documented under its anchor there.
const TypeBase = "https://github.com/idemlambda/idemlambda/blob/main/docs/problems.md#"

// ContentTypeProblem is the media type of a problem body (RFC 9457).
const ContentTypeProblem = "application/problem+json"

// Problem is an RFC 9457 problem details object.
type Problem struct {
	// Type is a URI naming the kind of problem.
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

// NewProblem returns a problem whose type is TypeBase plus name.
func NewProblem(status int, name, title, detail string) Problem {
	return Problem{Type: TypeBase + name, Title: title, Status: status, Detail: detail}
}

// WithRetryAfter returns a copy of p with a Retry-After header of d
// rounded up to whole seconds, at least 1.
func (p Problem) WithRetryAfter(d time.Duration) Problem {
	h := make(map[string]string, len(p.Headers)+1)
	for k, v := range p.Headers {
		h[k] = v
	}
	h["Retry-After"] = strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
	p.Headers = h
	return p
}

// Body returns the problem as JSON.
func (p Problem) Body() []byte {
	b, err := json.Marshal(p)
	if err != nil { // a Problem always encodes; keep the status anyway
		return []byte(`{"title":"Internal server error","status":500}`)
	}
	return b
}

// APIGatewayV2 renders the problem as an API Gateway HTTP API response.
func (p Problem) APIGatewayV2() events.APIGatewayV2HTTPResponse {
	h := make(map[string]string, len(p.Headers)+1)
	for k, v := range p.Headers {
		h[k] = v
	}
	h["Content-Type"] = ContentTypeProblem
	return events.APIGatewayV2HTTPResponse{StatusCode: p.Status, Headers: h, Body: string(p.Body())}
}

// Write sends the problem on a net/http response.
func (p Problem) Write(w http.ResponseWriter) {
	for k, v := range p.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", ContentTypeProblem)
	w.WriteHeader(p.Status)
	_, _ = w.Write(p.Body())
}

// The problems of the idempotency layer, by the status they answer with.
var (
	probKey         = NewProblem(http.StatusBadRequest, "idempotency-key", "Invalid or missing idempotency key", "")
	probForbidden   = NewProblem(http.StatusForbidden, "forbidden", "Caller cannot be identified", "")
	probInFlight    = NewProblem(http.StatusConflict, "in-flight", "Request with this idempotency key is in progress", "")
	probTooLarge    = NewProblem(http.StatusRequestEntityTooLarge, "too-large", "Request body too large", "")
	probKeyReuse    = NewProblem(http.StatusUnprocessableEntity, "key-reuse", "Idempotency key reused with a different payload", "")
	probUnavailable = NewProblem(http.StatusServiceUnavailable, "unavailable", "Service temporarily unavailable", "")
	probInternal    = NewProblem(http.StatusInternalServerError, "internal", "Internal server error", "")
)

// ErrBodyTooLarge reports a request body over the middleware's limit: 413.
var ErrBodyTooLarge = errors.New("idemhttp: request body too large")

// ProblemFor maps an error from pkg/idem, or from this package, to the
// problem a client should get:
//
//	ErrInFlight (*idem.InFlightError)   409, Retry-After: until the holder's lease has ended
//	idem.ErrLeaseLost                   409, Retry-After: 1 (another request took the key over)
//	idem.ErrKeyReuse                    422
//	idem.ErrInvalidKey                  400
//	ErrNoSubject                        403
//	ErrBodyTooLarge                     413
//	idem.IsUnavailable                  503, Retry-After: 1
//	anything else                       500, with no internal detail
//
// The detail tells the client what to do; it never carries the error text
// of a 5xx, which belongs in the server's log.
func ProblemFor(err error) Problem {
	var inflight *idem.InFlightError
	switch {
	case errors.As(err, &inflight):
		secs := max(1, int(math.Ceil(inflight.RetryAfter.Seconds())))
		return probInFlight.with(fmt.Sprintf("an earlier request with this key holds it for up to %d more seconds; retry to get its response", secs)).
			WithRetryAfter(inflight.RetryAfter)
	case errors.Is(err, idem.ErrLeaseLost):
		return probInFlight.with("another request with this key took it over; retry to get its response").WithRetryAfter(time.Second)
	case errors.Is(err, idem.ErrKeyReuse):
		return probKeyReuse.with("this idempotency key was used with a different request body; use a new key for a new request")
	case errors.Is(err, idem.ErrInvalidKey):
		return probKey.with(err.Error())
	case errors.Is(err, ErrNoSubject):
		return probForbidden.with("the request's authorizer names no caller (a JWT sub, client_id or azp; an IAM caller; a Lambda authorizer's principalId or sub); idempotency keys are scoped to the caller")
	case errors.Is(err, ErrBodyTooLarge):
		return probTooLarge.with(err.Error())
	case idem.IsUnavailable(err):
		return probUnavailable.with("the data store is busy; retry with the same idempotency key").WithRetryAfter(time.Second)
	default:
		return probInternal.with("the request failed on the server; nothing was stored for this idempotency key, so a retry with it is safe, though it may fail the same way")
	}
}

// MissingKey is the problem of a request that needs a key and has none.
func MissingKey() Problem {
	return probKey.with("send an " + HeaderKey + " header with a unique value per operation")
}

// InvalidKey is the problem of a request whose key cannot be used; detail
// says why.
func InvalidKey(detail string) Problem { return probKey.with(detail) }

// WithDetail returns a copy of p with another detail.
func (p Problem) WithDetail(detail string) Problem { return p.with(detail) }

func (p Problem) with(detail string) Problem {
	p.Detail = detail
	return p
}
