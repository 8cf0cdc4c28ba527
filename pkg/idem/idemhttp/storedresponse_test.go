package idemhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A response whose headers alone exceed the store's response limit is
// stored without its body and headers, but never without its status: a
// 400 must not replay as a 200 (a client would take a refused request
// for a done one). Before format 2 the status was a field of its own and
// survived the stand-in.
func TestAResponseWithHeadersOverTheLimitReplaysItsStatus(t *testing.T) {
	t.Parallel()
	mw := bareMiddleware(t, []idem.Option{idem.WithMaxResponseBytes(1 << 10)}, idemhttp.WithAnonymous())
	runs := 0
	h := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		runs++
		return events.APIGatewayV2HTTPResponse{
			StatusCode: 400,
			Headers:    map[string]string{"X-Reason": strings.Repeat("r", 2<<10)},
			Body:       `{"error":"bad address"}`,
		}, nil
	})
	ctx := context.Background()
	first, err := h(ctx, emailRequest(`"k-hdr"`, `{"to":"x"}`))
	must.NoError(t, err)
	check.Equal(t, 400, first.StatusCode)
	again, err := h(ctx, emailRequest(`"k-hdr"`, `{"to":"x"}`))
	must.NoError(t, err)
	check.Equal(t, 1, runs)
	check.Equal(t, "true", again.Headers["Idempotent-Replayed"])
	check.Equal(t, "too large", again.Headers["Idempotent-Body-Omitted"])
	check.Equal(t, 400, again.StatusCode, "the replay keeps the first response's status")
}

// A header whose name begins with ':' is no HTTP field name (net/http's
// server never sends one): it is left out of the stored response, as
// before format 2 it was never seen by the client, and the response is
// stored and answered whole, not as a stand-in without its body.
func TestAHeaderNamedLikeReservedMetadataIsNotStored(t *testing.T) {
	t.Parallel()
	mw := bareMiddleware(t, nil, idemhttp.WithAnonymous())
	runs := 0
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header()[":status"] = []string{"500"}
		w.Header()[":omitted"] = []string{"x"}
		w.Header().Set("X-Mail", "m-1")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "sent")
	}))
	for i, want := range []string{"", "true"} {
		rec := postWith(t, h, `"k-colon"`, nil, `{}`)
		check.Equal(t, http.StatusCreated, rec.Code, i)
		check.Equal(t, "sent", rec.Body.String(), i)
		check.Equal(t, "m-1", rec.Header().Get("X-Mail"), i)
		check.Equal(t, want, rec.Header().Get(idemhttp.HeaderReplayed), i)
		check.Empty(t, rec.Header().Get(idemhttp.HeaderBodyOmitted), i)
	}
	check.Equal(t, 1, runs)

	// On API Gateway too.
	v2 := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 202, Body: "ok", Headers: map[string]string{":status": "500", "X-A": "1"}}, nil
	})
	for _, replayed := range []bool{false, true} {
		out, err := v2(context.Background(), emailRequest(`"k-colon-v2"`, `{}`))
		must.NoError(t, err)
		want := map[string]string{"X-A": "1"}
		if replayed {
			want[idemhttp.HeaderReplayed] = "true"
		}
		check.Equal(t, events.APIGatewayV2HTTPResponse{StatusCode: 202, Body: "ok", Headers: want}, out)
	}
}
