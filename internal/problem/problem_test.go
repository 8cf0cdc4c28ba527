package problem_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/problem"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// The API's problems, its own and the idempotency layer's, are typed
// under its documentation, not about:blank, and idemhttp renders them.
func TestProblemsAreTypedUnderTheAPIsDocs(t *testing.T) {
	t.Parallel()
	inflight := problem.For(fmt.Errorf("create: %w", &idem.InFlightError{RetryAfter: 1500 * time.Millisecond}))
	assert.Equal(t, problem.TypeBase+"in-flight", inflight.Type)
	assert.Equal(t, http.StatusConflict, inflight.Status)
	assert.Equal(t, "2", inflight.Headers["Retry-After"])
	assert.Equal(t, inflight.Problem.APIGatewayV2(), inflight.APIGatewayV2(), "idemhttp renders a problem without errors")

	v := problem.Kind{Status: http.StatusBadRequest, Name: "validation", Title: "Invalid product"}.WithDetail("see errors")
	v.Errors = []problem.FieldError{{Field: "name", Message: "required"}}
	resp := v.APIGatewayV2()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "application/problem+json", resp.Headers["Content-Type"])
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &body))
	assert.Equal(t, problem.TypeBase+"validation", body["type"])
	assert.Equal(t, "see errors", body["detail"])
	assert.Len(t, body["errors"], 1)
	assert.JSONEq(t, `{"type":"`+problem.TypeBase+`validation","title":"Invalid product","status":400,"detail":"see errors","errors":[{"field":"name","message":"required"}]}`, resp.Body)

	resp = inflight.APIGatewayV2()
	assert.Equal(t, "2", resp.Headers["Retry-After"], "headers travel with the rendering")
	assert.NotContains(t, resp.Body, "Retry-After", "headers are not in the body")

	m := problem.MethodNotAllowed(http.MethodGet)
	assert.Equal(t, http.StatusMethodNotAllowed, m.Status)
	assert.Equal(t, "GET", m.APIGatewayV2().Headers["Allow"])
}

// The kinds idemhttp answers with are idemhttp's, under the API's base.
func TestKindsOfIdemhttp(t *testing.T) {
	t.Parallel()
	assert.Equal(t, problem.Kind{Status: 400, Name: "idempotency-key", Title: "Invalid or missing idempotency key"}, problem.KindOf(idem.ErrInvalidKey))
	assert.Equal(t, problem.Kind{Status: 413, Name: "too-large", Title: "Request body too large"}, problem.KindOf(idemhttp.ErrBodyTooLarge))
}
