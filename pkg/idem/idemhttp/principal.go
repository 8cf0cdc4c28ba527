package idemhttp

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
)

// PrincipalV2 names the caller of an API Gateway HTTP API (payload 2.0)
// request from its authorizer, spelled by pkg/idem/idemprincipal: a JWT
// authorizer's issuer and subject (FromClaims); an IAM caller's Cognito
// identity, else its ARN's identity (a role's sessions are the role:
// IdentityARN), else account and caller id (FromIAM); a Lambda
// authorizer's principalId or sub (FromLambdaContext). An authorizer
// that names none of these is idemprincipal.ErrNoSubject (403); without
// an authorizer the principal is "", and the middleware's policy decides
// (WithAnonymous).
func PrincipalV2(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
	a := rc.Authorizer
	switch {
	case a == nil:
		return "", nil
	case a.JWT != nil:
		return idemprincipal.FromClaims(func(claim string) string { return a.JWT.Claims[claim] })
	case a.IAM != nil:
		return idemprincipal.FromIAM(idemprincipal.IAMIdentity{
			UserARN: a.IAM.UserARN, AccountID: a.IAM.AccountID, CallerID: a.IAM.CallerID,
			CognitoIdentityPoolID: a.IAM.CognitoIdentity.IdentityPoolID, CognitoIdentityID: a.IAM.CognitoIdentity.IdentityID,
		})
	case a.Lambda != nil:
		return idemprincipal.FromLambdaContext(a.Lambda)
	}
	return "", nil
}

// PrincipalV1 names the caller of an API Gateway REST API (payload 1.0)
// request as PrincipalV2 does an HTTP API's, in the same spellings: a
// Cognito user pool authorizer's claims, a Lambda authorizer's context,
// or the IAM identity of a request signed with AWS credentials.
func PrincipalV1(rc events.APIGatewayProxyRequestContext) (string, error) {
	a := rc.Authorizer
	if claims, ok := a["claims"].(map[string]any); ok {
		return idemprincipal.FromClaims(func(claim string) string { s, _ := claims[claim].(string); return s })
	}
	if len(a) > 0 {
		return idemprincipal.FromLambdaContext(a)
	}
	id := rc.Identity
	if id.CognitoIdentityID == "" && id.UserArn == "" && id.Caller == "" {
		return "", nil
	}
	return idemprincipal.FromIAM(idemprincipal.IAMIdentity{
		UserARN: id.UserArn, AccountID: id.AccountID, CallerID: id.Caller,
		CognitoIdentityPoolID: id.CognitoIdentityPoolID, CognitoIdentityID: id.CognitoIdentityID,
	})
}
