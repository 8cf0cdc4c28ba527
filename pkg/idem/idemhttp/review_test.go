package idemhttp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
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
	mw := bareMiddleware(t, idem.WithMaxResponseBytes(1<<10))
	mw.AllowAnonymous = true
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
