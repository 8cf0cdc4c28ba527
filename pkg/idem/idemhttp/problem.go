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
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
)

// ContentTypeProblem is the media type of a problem body (RFC 9457).
const ContentTypeProblem = "application/problem+json"

// Problem is an RFC 9457 problem details object.
type Problem struct {
	// Type is a URI naming the kind of problem: the type base given to
	// ProblemFor (or WithProblemTypeBase) plus the kind's name, or
	// "about:blank" without a base.
	Type string `json:"type"`
	// Title is a short summary of the kind: with "about:blank", the
	// status's reason phrase, as RFC 9457 asks.
	Title string `json:"title"`
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence to the client.
	Detail string `json:"detail"`
	// Headers are sent with the problem (Retry-After).
	Headers map[string]string `json:"-"`
}

// kind is one problem this package answers with; its type is a base plus
// name.
type kind struct {
	status      int
	name, title string
}

// problem is the kind's problem under typeBase, with detail.
func (k kind) problem(typeBase, detail string) Problem {
	if typeBase == "" {
		return Problem{Type: "about:blank", Title: http.StatusText(k.status), Status: k.status, Detail: detail}
	}
	return Problem{Type: typeBase + k.name, Title: k.title, Status: k.status, Detail: detail}
}

// withRetryAfter returns a copy of p with a Retry-After header of d
// rounded up to whole seconds, at least 1.
func (p Problem) withRetryAfter(d time.Duration) Problem {
	h := make(map[string]string, len(p.Headers)+1)
	for k, v := range p.Headers {
		h[k] = v
	}
	h["Retry-After"] = strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
	p.Headers = h
	return p
}

// body returns the problem as JSON.
func (p Problem) body() []byte {
	b, err := json.Marshal(p)
	if err != nil { // a Problem always encodes; keep the status anyway
		return []byte(`{"title":"Internal Server Error","status":500}`)
	}
	return b
}

// APIGatewayV2 renders the problem as an API Gateway HTTP API response.
func (p Problem) APIGatewayV2() events.APIGatewayV2HTTPResponse {
	return toAPIGatewayV2(p.response(), false)
}

// response is the problem as a response: its headers, Content-Type
// application/problem+json, and its JSON.
func (p Problem) response() response {
	h := make(map[string]string, len(p.Headers)+1)
	for k, v := range p.Headers {
		h[k] = v
	}
	h["Content-Type"] = ContentTypeProblem
	return response{status: p.Status, headers: h, body: p.body()}
}

// Write sends the problem on a net/http response.
func (p Problem) Write(w http.ResponseWriter) {
	for k, v := range p.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", ContentTypeProblem)
	w.WriteHeader(p.Status)
	_, _ = w.Write(p.body())
}

// The problems of the idempotency layer, by the status they answer with;
// a type base names each by its anchor (idempotency-key, forbidden, ...).
var (
	probKey         = kind{http.StatusBadRequest, "idempotency-key", "Invalid or missing idempotency key"}
	probBadRequest  = kind{http.StatusBadRequest, "bad-request", "Bad request"}
	probForbidden   = kind{http.StatusForbidden, "forbidden", "Caller cannot be identified"}
	probInFlight    = kind{http.StatusConflict, "in-flight", "Request with this idempotency key is in progress"}
	probTooLarge    = kind{http.StatusRequestEntityTooLarge, "too-large", "Request body too large"}
	probKeyReuse    = kind{http.StatusUnprocessableEntity, "key-reuse", "Idempotency key reused with a different payload"}
	probUnavailable = kind{http.StatusServiceUnavailable, "unavailable", "Service temporarily unavailable"}
	probInternal    = kind{http.StatusInternalServerError, "internal", "Internal server error"}
)

// ErrBodyTooLarge reports a request body over the middleware's limit: 413.
var ErrBodyTooLarge = errors.New("idemhttp: request body too large")

// ProblemFor maps an error from pkg/idem, or from this package, to the
// problem a client should get:
//
//	idem.ErrInFlight                    409, Retry-After: idem.RetryAfter (until the holder's lease has ended)
//	idem.ErrLeaseLost                   409, Retry-After: 1 (another request took the key over)
//	idem.ErrKeyReuse                    422
//	idem.ErrInvalidKey                  400
//	idemprincipal.ErrNoSubject          403
//	ErrBodyTooLarge                     413
//	idem.IsUnavailable                  503, Retry-After: 1
//	anything else                       500, with no internal detail
//
// Each problem's type is typeBase plus its name (in-flight, key-reuse,
// idempotency-key, forbidden, too-large, unavailable, internal): point
// typeBase at your API's documentation of them, such as
// "https://api.example.com/problems#". An empty typeBase gives
// "about:blank" and the status's reason phrase as the title. The detail
// tells the client what to do; it never carries the error text of a 5xx,
// which belongs in the server's log.
func ProblemFor(err error, typeBase string) Problem {
	retryAfter := idem.RetryAfter(err)
	switch {
	case errors.Is(err, idem.ErrInFlight):
		secs := int(math.Ceil(retryAfter.Seconds()))
		return probInFlight.problem(typeBase, fmt.Sprintf("an earlier request with this key holds it for up to %d more seconds; retry to get its response", secs)).
			withRetryAfter(retryAfter)
	case errors.Is(err, idem.ErrLeaseLost):
		return probInFlight.problem(typeBase, "another request with this key took it over; retry to get its response").withRetryAfter(retryAfter)
	case errors.Is(err, idem.ErrKeyReuse):
		return probKeyReuse.problem(typeBase, "this idempotency key was used with a different request body; use a new key for a new request")
	case errors.Is(err, idem.ErrInvalidKey):
		return probKey.problem(typeBase, err.Error())
	case errors.Is(err, idemprincipal.ErrNoSubject):
		return probForbidden.problem(typeBase, "the request's authorizer names no caller (a JWT sub, client_id or azp; an IAM caller; a Lambda authorizer's principalId or sub); idempotency keys are scoped to the caller")
	case errors.Is(err, ErrBodyTooLarge):
		return probTooLarge.problem(typeBase, err.Error())
	case idem.IsUnavailable(err):
		return probUnavailable.problem(typeBase, "the data store is busy; retry with the same idempotency key").withRetryAfter(retryAfter)
	default:
		return probInternal.problem(typeBase, "the request failed on the server; nothing was stored for this idempotency key, so a retry with it is safe, though it may fail the same way")
	}
}
