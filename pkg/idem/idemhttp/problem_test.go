package idemhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// TestProblemFor is the error-to-status table, with no store behind it:
// every error pkg/idem and this package return, as a caller sees them
// (wrapped), and the answer a client gets.
func TestProblemFor(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("create: %w", err) }
	for _, tc := range []struct {
		err        error
		status     int
		kind       string
		retryAfter string
	}{
		{wrap(&idem.InFlightError{RetryAfter: 2500 * time.Millisecond}), 409, "in-flight", "3"},
		{wrap(&idem.InFlightError{RetryAfter: 2001 * time.Millisecond}), 409, "in-flight", "3"},
		{wrap(&idem.InFlightError{RetryAfter: 0}), 409, "in-flight", "1"},
		{wrap(idem.ErrLeaseLost), 409, "in-flight", "1"},
		{wrap(idem.ErrKeyReuse), 422, "key-reuse", ""},
		{wrap(fmt.Errorf("%w: empty", idem.ErrInvalidKey)), 400, "idempotency-key", ""},
		{idemprincipal.ErrNoSubject, 403, "forbidden", ""},
		{fmt.Errorf("%w: limit 1", idemhttp.ErrBodyTooLarge), 413, "too-large", ""},
		{wrap(idem.ErrInFlight), 409, "in-flight", "1"},
		{wrap(&types.ProvisionedThroughputExceededException{}), 503, "unavailable", "1"},
		{wrap(&types.InternalServerError{}), 503, "unavailable", "1"},
		{wrap(&retry.MaxAttemptsError{Attempt: 3, Err: errors.New("x")}), 503, "unavailable", "1"},
		{wrap(&net.OpError{Op: "dial", Err: errors.New("refused")}), 503, "unavailable", "1"},
		{wrap(context.DeadlineExceeded), 503, "unavailable", "1"},
		{wrap(errors.New("table products-x not found")), 500, "internal", ""},
		{wrap(&types.ResourceNotFoundException{Message: new(string)}), 500, "internal", ""},
	} {
		p := idemhttp.ProblemFor(tc.err, typeBase)
		check.Equal(t, tc.status, p.Status, "%v", tc.err)
		check.Equal(t, typeBase+tc.kind, p.Type, "%v", tc.err)
		blank := idemhttp.ProblemFor(tc.err, "")
		check.Equal(t, "about:blank", blank.Type, "no base: RFC 9457's default type")
		check.Equal(t, http.StatusText(tc.status), blank.Title, "about:blank's title is the status phrase")
		check.Equal(t, p.Detail, blank.Detail)
		check.Equal(t, tc.retryAfter, p.Headers["Retry-After"], "%v", tc.err)
		check.NotEmpty(t, p.Title)
		check.NotEmpty(t, p.Detail)
		if tc.status >= 500 {
			check.NotContains(t, p.Detail, "products-x", "no internal detail in a 5xx")
		}

		// Both renderings carry the same problem+json.
		v2 := p.APIGatewayV2()
		check.Equal(t, tc.status, v2.StatusCode)
		check.Equal(t, idemhttp.ContentTypeProblem, v2.Headers["Content-Type"])
		rec := httptest.NewRecorder()
		p.Write(rec)
		check.Equal(t, tc.status, rec.Code)
		check.Equal(t, idemhttp.ContentTypeProblem, rec.Header().Get("Content-Type"))
		check.Equal(t, tc.retryAfter, rec.Header().Get("Retry-After"))
		check.JSONEq(t, v2.Body, rec.Body.String())
		var body map[string]any
		must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		check.ElementsMatch(t, []string{"type", "title", "status", "detail"}, keys(body))
		check.EqualValues(t, tc.status, body["status"])
	}
}

const typeBase = "https://api.example.com/problems#"

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRequestFingerprint(t *testing.T) {
	t.Parallel()
	fp := idemhttp.RequestFingerprint
	a := fp("POST", "/emails", "", []byte(`{"to":"a","cc":["b"]}`))
	check.Equal(t, a, fp("POST", "/emails", "", []byte(` { "cc" : ["b"], "to":"a" } `)), "JSON counts by its canonical form")
	check.NotEqual(t, a, fp("POST", "/emails", "", []byte(`{"to":"a","cc":["c"]}`)))
	check.NotEqual(t, a, fp("PUT", "/emails", "", []byte(`{"to":"a","cc":["b"]}`)))
	check.NotEqual(t, a, fp("POST", "/emails/1", "", []byte(`{"to":"a","cc":["b"]}`)))
	check.NotEqual(t, a, fp("POST", "/emails", "x=1", []byte(`{"to":"a","cc":["b"]}`)))
	// Length prefixes: moving bytes between parts changes the fingerprint.
	check.NotEqual(t, fp("POST", "/a", "b", nil), fp("POST", "/ab", "", nil))
	check.Equal(t, fp("POST", "/f", "", []byte("not json  ")), fp("POST", "/f", "", []byte("not json  ")))
	check.NotEqual(t, fp("POST", "/f", "", []byte("not json")), fp("POST", "/f", "", []byte("not json  ")), "other bodies count byte for byte")
	check.Len(t, a, 64)
}

// TestRequestFingerprintIsStrict: bodies encoding/json reads as one value
// while they are different texts get different fingerprints.
func TestRequestFingerprintIsStrict(t *testing.T) {
	t.Parallel()
	fp := func(body string) string { return idemhttp.RequestFingerprint("POST", "/emails", "", []byte(body)) }
	for _, pair := range [][2]string{
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"a":1}]`, `{"a":1}`},
		{"\"\xff\"", `"\ufffd"`},
		{`"\ud800"`, `"\ufffd"`},
	} {
		check.NotEqual(t, fp(pair[0]), fp(pair[1]), "%q and %q", pair[0], pair[1])
	}
}
