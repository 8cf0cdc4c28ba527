package idemhttp_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

func TestPrincipalV2(t *testing.T) {
	t.Parallel()
	jwt := func(claims map[string]string) events.APIGatewayV2HTTPRequestContext {
		return events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}}
	}
	iam := func(d events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription) events.APIGatewayV2HTTPRequestContext {
		return events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &d}}
	}
	for name, tc := range map[string]struct {
		rc   events.APIGatewayV2HTTPRequestContext
		want string
	}{
		"no authorizer":   {events.APIGatewayV2HTTPRequestContext{}, "anonymous"},
		"jwt sub":         {jwt(map[string]string{"iss": "https://i", "sub": "alice"}), `jwt:"https://i":sub="alice"`},
		"jwt client_id":   {jwt(map[string]string{"iss": "i", "client_id": "svc"}), `jwt:"i":client_id="svc"`},
		"jwt azp":         {jwt(map[string]string{"iss": "i", "azp": "app"}), `jwt:"i":azp="app"`},
		"jwt quoting":     {jwt(map[string]string{"iss": `a":sub="b`, "sub": "c"}), `jwt:"a\":sub=\"b":sub="c"`},
		"iam user":        {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/a"}), "iam:arn:aws:iam::1:user/a"},
		"iam caller":      {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "1", CallerID: "AIDA"}), "iam-caller:1:AIDA"},
		"lambda":          {events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"principalId": "u1"}}}, "lambda:u1"},
		"empty authorize": {events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{}}, "anonymous"},
	} {
		got, err := idemhttp.PrincipalV2(tc.rc)
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, got, name)
	}
	_, err := idemhttp.PrincipalV2(jwt(map[string]string{"iss": "i"}))
	assert.ErrorIs(t, err, idemhttp.ErrNoSubject, "a JWT without a subject is refused, not anonymous")
	// Two issuers with the same subject are two callers.
	a, _ := idemhttp.PrincipalV2(jwt(map[string]string{"iss": "a", "sub": "x"}))
	b, _ := idemhttp.PrincipalV2(jwt(map[string]string{"iss": "b", "sub": "x"}))
	assert.NotEqual(t, a, b)
}
