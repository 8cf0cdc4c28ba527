package idemhttp_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
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
	lambda := func(ctx map[string]any) events.APIGatewayV2HTTPRequestContext {
		return events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: ctx}}
	}
	for name, tc := range map[string]struct {
		rc   events.APIGatewayV2HTTPRequestContext
		want string
	}{
		"no authorizer": {events.APIGatewayV2HTTPRequestContext{}, ""}, // no caller named: the policy decides
		"jwt sub":       {jwt(map[string]string{"iss": "https://i", "sub": "alice"}), `jwt:"https://i":sub="alice"`},
		"jwt client_id": {jwt(map[string]string{"iss": "i", "client_id": "svc"}), `jwt:"i":client_id="svc"`},
		"jwt azp":       {jwt(map[string]string{"iss": "i", "azp": "app"}), `jwt:"i":azp="app"`},
		"jwt quoting":   {jwt(map[string]string{"iss": `a":sub="b`, "sub": "c"}), `jwt:"a\":sub=\"b":sub="c"`},
		"iam user":      {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/a"}), "iam:arn:aws:iam::1:user/a"},
		"iam caller":    {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "1", CallerID: "AIDA"}), "iam-caller:1:AIDA"},
		// Every identity of a Cognito identity pool signs with the pool's
		// one role: its identity id names the caller, as PrincipalV1's.
		"iam identity pool": {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws:sts::1:assumed-role/pool-auth/CognitoIdentityCredentials", AccountID: "1", CallerID: "AROA:CognitoIdentityCredentials",
			CognitoIdentity: events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{IdentityPoolID: "eu-west-1:pool", IdentityID: "eu-west-1:ada"},
		}), `cognito-identity:"eu-west-1:pool":"eu-west-1:ada"`},
		"lambda":          {lambda(map[string]any{"principalId": "u1"}), `lambda:principalId="u1"`},
		"lambda sub":      {lambda(map[string]any{"sub": "u2", "role": "admin"}), `lambda:sub="u2"`},
		"empty authorize": {events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{}}, ""},
	} {
		got, err := idemhttp.PrincipalV2(tc.rc)
		must.NoError(t, err, name)
		check.Equal(t, tc.want, got, name)
	}
	// An authorizer that names no caller is refused, never anonymous:
	// its callers would share one scope.
	for name, rc := range map[string]events.APIGatewayV2HTTPRequestContext{
		"jwt without subject":     jwt(map[string]string{"iss": "i"}),
		"iam with only account":   iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "1"}),
		"lambda without identity": lambda(map[string]any{"role": "admin"}),
		"lambda, id not a string": lambda(map[string]any{"principalId": 42}),
	} {
		_, err := idemhttp.PrincipalV2(rc)
		check.ErrorIs(t, err, idemprincipal.ErrNoSubject, name)
	}
	// Two issuers with the same subject are two callers.
	a, _ := idemhttp.PrincipalV2(jwt(map[string]string{"iss": "a", "sub": "x"}))
	b, _ := idemhttp.PrincipalV2(jwt(map[string]string{"iss": "b", "sub": "x"}))
	check.NotEqual(t, a, b)
}

// The spellings an operator uses to name a caller (idemctl's flags,
// pkg/idem/idemprincipal) are the ones PrincipalV2 gives the same caller.
func TestPrincipalSpellingsAreThoseOfPrincipalV2(t *testing.T) {
	t.Parallel()
	lambdaRC := func(ctx map[string]any) events.APIGatewayV2HTTPRequestContext {
		return events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: ctx}}
	}
	iamRC := func(d events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription) events.APIGatewayV2HTTPRequestContext {
		return events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &d}}
	}
	jwtRC := func(claims map[string]string) events.APIGatewayV2HTTPRequestContext {
		return events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}}
	}
	for spelled, rc := range map[string]events.APIGatewayV2HTTPRequestContext{
		idemprincipal.JWT("https://i.example/", "sub", `a"b`): jwtRC(map[string]string{"iss": "https://i.example/", "sub": `a"b`}),
		idemprincipal.JWT("i", "client_id", "svc"):            jwtRC(map[string]string{"iss": "i", "client_id": "svc"}),
		idemprincipal.IAM("arn:aws:iam::1:user/a"):            iamRC(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/a"}),
		idemprincipal.IAMCaller("1", "AIDA"):                  iamRC(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "1", CallerID: "AIDA"}),
		idemprincipal.Lambda("principalId", "u1"):             lambdaRC(map[string]any{"principalId": "u1"}),
		idemprincipal.Lambda("sub", "u2"):                     lambdaRC(map[string]any{"sub": "u2"}),
	} {
		got, err := idemhttp.PrincipalV2(rc)
		must.NoError(t, err)
		check.Equal(t, spelled, got)
	}
}
