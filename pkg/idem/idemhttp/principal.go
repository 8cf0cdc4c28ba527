package idemhttp

import (
	"errors"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// ErrNoSubject reports an authenticated caller whose identity names no
// subject: keys are scoped to the caller, and such callers would otherwise
// share one scope. It is a 403.
var ErrNoSubject = errors.New("idemhttp: the authorizer names no caller")

// PrincipalV2 names the caller of an API Gateway HTTP API (payload 2.0)
// request from its authorizer, so that two callers never share an
// idempotency record:
//
//   - JWT authorizer: the issuer and the subject (sub, else client_id or
//     azp, as client-credentials tokens carry), spelled by JWTPrincipal;
//   - IAM authorizer: the caller's ARN (IAMPrincipal), else account and
//     caller id (IAMCallerPrincipal);
//   - Lambda authorizer: the principalId, else the sub, its context holds
//     (a simple-response authorizer must put one of them there),
//     spelled by LambdaPrincipal.
//
// An authorizer that is there but names none of these is ErrNoSubject:
// its callers would otherwise share one scope and see each other's
// responses. Without an authorizer the principal is "": no caller is
// named, and the Middleware's policy decides (AllowAnonymous). Parts are
// quoted or prefixed, so no claim value can make two principals collide.
func PrincipalV2(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
	a := rc.Authorizer
	switch {
	case a == nil:
		return "", nil
	case a.JWT != nil:
		return jwtPrincipal(func(claim string) string { return a.JWT.Claims[claim] })
	case a.IAM != nil:
		return iamPrincipal(a.IAM.UserARN, a.IAM.AccountID, a.IAM.CallerID)
	case a.Lambda != nil:
		return lambdaPrincipal(a.Lambda)
	}
	return "", nil
}

// PrincipalV1 names the caller of an API Gateway REST API (payload 1.0)
// request, as PrincipalV2 does an HTTP API's, in the same form, so that
// two callers never share an idempotency record:
//
//   - Cognito user pool authorizer: the token's issuer and subject (sub,
//     else client_id or azp), from the authorizer's claims (JWTPrincipal);
//   - Lambda authorizer: its principalId, else the sub its context holds
//     (LambdaPrincipal);
//   - IAM (AWS_IAM authorization): the Cognito identity when the
//     credentials are a Cognito identity pool's (whose callers share one
//     role ARN), else the caller's ARN (IAMPrincipal), else account and
//     caller id (IAMCallerPrincipal).
//
// An authorizer that is there but names none of these is ErrNoSubject;
// without one, and without IAM credentials, the principal is "": no
// caller is named, and the Middleware's policy decides (AllowAnonymous).
func PrincipalV1(rc events.APIGatewayProxyRequestContext) (string, error) {
	a := rc.Authorizer
	if claims, ok := a["claims"].(map[string]any); ok {
		return jwtPrincipal(func(claim string) string { s, _ := claims[claim].(string); return s })
	}
	if len(a) > 0 {
		return lambdaPrincipal(a)
	}
	id := rc.Identity
	if id.CognitoIdentityID != "" {
		return "cognito-identity:" + strconv.Quote(id.CognitoIdentityPoolID) + ":" + strconv.Quote(id.CognitoIdentityID), nil
	}
	if id.UserArn != "" || id.Caller != "" {
		return iamPrincipal(id.UserArn, id.AccountID, id.Caller)
	}
	return "", nil
}

// jwtPrincipal names a token's holder: its issuer and subject (sub, else
// client_id or azp, as client-credentials tokens carry).
func jwtPrincipal(claim func(string) string) (string, error) {
	for _, c := range []string{"sub", "client_id", "azp"} {
		if v := claim(c); v != "" {
			return JWTPrincipal(claim("iss"), c, v), nil
		}
	}
	return "", ErrNoSubject
}

// iamPrincipal names an IAM caller: its ARN, else account and caller id.
func iamPrincipal(userARN, accountID, callerID string) (string, error) {
	switch {
	case userARN != "":
		return IAMPrincipal(userARN), nil
	case callerID != "":
		return IAMCallerPrincipal(accountID, callerID), nil
	}
	return "", ErrNoSubject
}

// lambdaPrincipal names a Lambda authorizer's caller: the principalId,
// else the sub, its context holds.
func lambdaPrincipal(context map[string]any) (string, error) {
	for _, k := range []string{"principalId", "sub"} {
		if id, ok := context[k].(string); ok && id != "" {
			return LambdaPrincipal(k, id), nil
		}
	}
	return "", ErrNoSubject
}

// JWTPrincipal is PrincipalV2's principal for a JWT authorizer's caller
// (and PrincipalV1's for a Cognito user pool authorizer's): the token's
// issuer (its iss claim), and the claim that names the caller (sub,
// client_id or azp) with its value, as in
// jwt:"https://issuer.example.com/":sub="248289761001". An operator who
// knows the caller by issuer and subject spells it with this (idemctl
// -jwt-issuer and -jwt-sub).
func JWTPrincipal(issuer, claim, value string) string {
	return "jwt:" + strconv.Quote(issuer) + ":" + claim + "=" + strconv.Quote(value)
}

// IAMPrincipal is PrincipalV2's and PrincipalV1's principal for an IAM
// caller known by its ARN (the request context's userArn): "iam:" and
// the ARN.
func IAMPrincipal(userARN string) string { return "iam:" + userARN }

// IAMCallerPrincipal is PrincipalV2's and PrincipalV1's principal for an
// IAM caller without an ARN: its account and caller id.
func IAMCallerPrincipal(accountID, callerID string) string {
	return "iam-caller:" + accountID + ":" + callerID
}

// LambdaPrincipal is PrincipalV2's and PrincipalV1's principal for a
// Lambda authorizer's caller: the context key that names it (principalId
// or sub) and its value, as in lambda:principalId="user-42".
func LambdaPrincipal(key, value string) string {
	return "lambda:" + key + "=" + strconv.Quote(value)
}
