package access_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
)

const (
	sellerA = "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"
	sellerB = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"
)

func ctx(a *events.APIGatewayV2HTTPRequestContextAuthorizerDescription) events.APIGatewayV2HTTPRequestContext {
	return events.APIGatewayV2HTTPRequestContext{Authorizer: a}
}

func jwt(claims map[string]string) events.APIGatewayV2HTTPRequestContext {
	return ctx(&events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
	})
}

func iam(d events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription) events.APIGatewayV2HTTPRequestContext {
	return ctx(&events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &d})
}

// Every session of a role is one caller; the token's callers are its
// issuer and subject; a request no authorizer vouches for is no caller.
func TestFromRequestV2NamesTheCaller(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		rc      events.APIGatewayV2HTTPRequestContext
		id      string
		vouched bool
	}{
		"jwt":                     {jwt(map[string]string{"iss": "https://idp", "sub": "u1", "seller_ids": sellerA}), `jwt:"https://idp":sub="u1"`, true},
		"jwt, client credentials": {jwt(map[string]string{"iss": "https://idp", "client_id": "svc"}), `jwt:"https://idp":client_id="svc"`, true},
		"assumed role, a session": {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws:sts::123456789012:assumed-role/Importer/i-0abc", CallerID: "AROAX:i-0abc", AccountID: "123456789012",
		}), "arn:aws:iam::123456789012:role/Importer", false},
		"assumed role, another session": {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws:sts::123456789012:assumed-role/Importer/botocore-session-17",
		}), "arn:aws:iam::123456789012:role/Importer", false},
		"another partition": {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws-cn:sts::123456789012:assumed-role/Importer/s",
		}), "arn:aws-cn:iam::123456789012:role/Importer", false},
		"user": {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws:iam::123456789012:user/ops/alice",
		}), "arn:aws:iam::123456789012:user/ops/alice", false},
		"root": {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws:iam::123456789012:root",
		}), "arn:aws:iam::123456789012:root", false},
		"cognito identity": {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN:         "arn:aws:sts::123456789012:assumed-role/Cognito_Auth/CognitoIdentityCredentials",
			CognitoIdentity: events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{IdentityPoolID: "eu-central-1:pool", IdentityID: "eu-central-1:id-1"},
		}), "cognito-identity:eu-central-1:pool:eu-central-1:id-1", false},
		"caller id only": {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			AccountID: "123456789012", CallerID: "AIDAX",
		}), "iam-caller:123456789012:AIDAX", false},
		"lambda": {ctx(&events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			Lambda: map[string]any{"principalId": "p1", "seller_ids": sellerA},
		}), `lambda:principalId="p1"`, true},
	} {
		c, err := access.FromRequestV2(tc.rc)
		require.NoError(t, err, name)
		assert.Equal(t, tc.id, c.ID(), name)
		assert.Equal(t, tc.vouched, c.Vouched(), name)
	}
	for name, rc := range map[string]events.APIGatewayV2HTTPRequestContext{
		"no authorizer":  {},
		"jwt, no sub":    jwt(map[string]string{"iss": "https://idp"}),
		"iam, no caller": iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "123456789012"}),
		"lambda, no id":  ctx(&events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"seller_ids": "*"}}),
		"empty":          ctx(&events.APIGatewayV2HTTPRequestContextAuthorizerDescription{}),
	} {
		_, err := access.FromRequestV2(rc)
		assert.ErrorIs(t, err, access.ErrNoCaller, name)
	}
}

// A token acts for the sellers it lists; an IAM caller's token lists
// none, so VouchesFor leaves the decision to its grant.
func TestVouchesFor(t *testing.T) {
	t.Parallel()
	a, b := uuid.MustParse(sellerA), uuid.MustParse(sellerB)
	for name, tc := range map[string]struct {
		rc            events.APIGatewayV2HTTPRequestContext
		forA, forB    bool
		reasonPattern string
	}{
		"lists A":          {jwt(map[string]string{"sub": "u", "seller_ids": sellerA}), true, false, "does not list it"},
		"lists both":       {jwt(map[string]string{"sub": "u", "seller_ids": sellerB + " " + sellerA}), true, true, ""},
		"array rendering":  {jwt(map[string]string{"sub": "u", "seller_ids": "[" + sellerA + " " + sellerB + "]"}), true, true, ""},
		"every seller":     {jwt(map[string]string{"sub": "u", "seller_ids": "*"}), true, true, ""},
		"no claim":         {jwt(map[string]string{"sub": "u"}), false, false, "cannot be read"},
		"malformed":        {jwt(map[string]string{"sub": "u", "seller_ids": sellerA + ",x"}), false, false, "cannot be read"},
		"lambda, not text": {ctx(&events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"sub": "u", "seller_ids": []any{sellerA}}}), false, false, "no seller_ids string"},
		"iam":              {iam(events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/u"}), true, true, ""},
	} {
		c, err := access.FromRequestV2(tc.rc)
		require.NoError(t, err, name)
		errA, errB := c.VouchesFor(a), c.VouchesFor(b)
		assert.Equal(t, tc.forA, errA == nil, name)
		assert.Equal(t, tc.forB, errB == nil, name)
		for _, err := range []error{errA, errB} {
			if err == nil {
				continue
			}
			assert.ErrorIs(t, err, access.ErrSellerForbidden, name)
			var se *access.SellerError
			require.True(t, errors.As(err, &se), name)
			assert.Contains(t, se.Reason, tc.reasonPattern, name)
		}
	}
}

func TestIAMCaller(t *testing.T) {
	t.Parallel()
	c, err := access.IAMCaller("arn:aws:sts::000000000000:assumed-role/Local/me")
	require.NoError(t, err)
	assert.Equal(t, "arn:aws:iam::000000000000:role/Local", c.ID())
	assert.False(t, c.Vouched(), "an IAM caller's sellers are its grant")
	_, err = access.IAMCaller("")
	assert.ErrorIs(t, err, access.ErrNoCaller)
}
