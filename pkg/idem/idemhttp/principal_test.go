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

// An IAM caller is the identity behind its credentials, not one set of
// them: every session of a role is the role (an SDK names its sessions
// anew at each start or refresh, and a retry must find its key), and
// every identity of a Cognito identity pool is itself, though all sign
// as one session of the pool's role. PrincipalV1 agrees.
func TestPrincipalOfAnIAMCallerIsItsIdentity(t *testing.T) {
	t.Parallel()
	v2 := func(d events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription) string {
		t.Helper()
		p, err := idemhttp.PrincipalV2(events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &d}})
		must.NoError(t, err)
		return p
	}
	v1 := func(id events.APIGatewayRequestIdentity) string {
		t.Helper()
		p, err := idemhttp.PrincipalV1(events.APIGatewayProxyRequestContext{Identity: id})
		must.NoError(t, err)
		return p
	}
	const role = "iam:arn:aws:iam::123456789012:role/Importer"
	for _, session := range []string{"aws-go-sdk-1700000000000000001", "botocore-session-1700000000", "i-0abc"} {
		arn := "arn:aws:sts::123456789012:assumed-role/Importer/" + session
		check.Equal(t, role, v2(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: arn, CallerID: "AROAX:" + session}), session)
		check.Equal(t, role, v1(events.APIGatewayRequestIdentity{UserArn: arn, Caller: "AROAX:" + session}), session)
		check.Equal(t, role, idemprincipal.IAM(arn), session)
	}
	check.Equal(t, "iam:arn:aws-us-gov:iam::123456789012:role/Importer", idemprincipal.IAM("arn:aws-us-gov:sts::123456789012:assumed-role/Importer/s"))
	for _, arn := range []string{"arn:aws:iam::123456789012:role/Importer", "arn:aws:iam::123456789012:role/service-role/Importer", "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/Importer"} {
		check.Equal(t, role, idemprincipal.IAM(arn), "a role's ARN, path or none, is its sessions' caller: %s", arn)
	}
	for _, arn := range []string{"arn:aws:iam::123456789012:user/ops/alice", "arn:aws:iam::123456789012:root", "arn:aws:sts::123456789012:federated-user/bob"} {
		check.Equal(t, "iam:"+arn, idemprincipal.IAM(arn), arn)
	}

	const pool, cognitoRole = "eu-west-1:pool", "arn:aws:sts::123456789012:assumed-role/Cognito_Auth/CognitoIdentityCredentials"
	cognito := func(id string) events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription {
		return events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: cognitoRole, CognitoIdentity: events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{IdentityPoolID: pool, IdentityID: id},
		}
	}
	ada, bob := v2(cognito("eu-west-1:ada")), v2(cognito("eu-west-1:bob"))
	check.Equal(t, `cognito-identity:"eu-west-1:pool":"eu-west-1:ada"`, ada)
	check.NotEqual(t, ada, bob)
	check.Equal(t, ada, v1(events.APIGatewayRequestIdentity{UserArn: cognitoRole, CognitoIdentityPoolID: pool, CognitoIdentityID: "eu-west-1:ada"}))
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
