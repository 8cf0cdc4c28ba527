package idemhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A handler whose effect happened but whose completion could not be
// recorded (every attempt throttled while the time lasted) still answers
// its client with the handler's own response, on the Lambda paths and on
// net/http: a problem would have the client retry after the lease, and
// the effect run again. In fake time, with the strict store in the
// bubble.
func TestAnEffectNotRecordedAnswersTheHandlersResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := idemtest.NewServer()
		defer server.Close()
		db := server.HandlerClient()
		must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
		store, err := idem.NewStore(db, "idempotency")
		must.NoError(t, err)
		mw, err := idemhttp.New(store, idemhttp.WithAnonymous())
		must.NoError(t, err)
		// The effect happens; then every completion attempt is throttled.
		refuse := func() { server.Inject(idemtest.OpUpdateItem, idemtest.Throttled, 1_000_000) }
		defer server.ClearFaults()

		lambda := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			refuse()
			return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusAccepted, Body: `{"sent":1}`}, nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // an invocation's deadline
		defer cancel()
		resp, err := lambda(ctx, emailRequest("lambda-key", `{"to":"ada@example.com"}`))
		must.NoError(t, err)
		check.Equal(t, http.StatusAccepted, resp.StatusCode, "the handler's own status: %s", resp.Body)
		check.Equal(t, `{"sent":1}`, resp.Body)

		server.ClearFaults()
		h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			refuse()
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"sent":2}`)
		}))
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/emails", strings.NewReader(`{"to":"ada@example.com"}`))
		req.Header.Set(idemhttp.HeaderKey, "handler-key")
		h.ServeHTTP(rec, req)
		check.Equal(t, http.StatusAccepted, rec.Code, "the handler's own status: %s", rec.Body)
		check.Equal(t, `{"sent":2}`, rec.Body.String())
	})
}
