package idemhttp

import (
	"errors"
	"strconv"
	"strings"

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
//   - IAM authorizer: the Cognito identity when the credentials are a
//     Cognito identity pool's (whose identities all sign as one session
//     of the pool's role), else the caller's ARN (IAMPrincipal: a role's
//     sessions are the role), else account and caller id
//     (IAMCallerPrincipal);
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
		if c := a.IAM.CognitoIdentity; c.IdentityID != "" {
			return cognitoPrincipal(c.IdentityPoolID, c.IdentityID), nil
		}
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
//     role ARN), else the caller's ARN (IAMPrincipal: a role's sessions
//     are the role), else account and caller id (IAMCallerPrincipal).
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
		return cognitoPrincipal(id.CognitoIdentityPoolID, id.CognitoIdentityID), nil
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

// cognitoPrincipal names a Cognito identity pool's identity.
func cognitoPrincipal(poolID, identityID string) string {
	return "cognito-identity:" + strconv.Quote(poolID) + ":" + strconv.Quote(identityID)
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
// IAMIdentity's ARN, so every session of a role is the role.
func IAMPrincipal(userARN string) string { return "iam:" + IAMIdentity(userARN) }

// IAMIdentity is the identity an IAM ARN names, as the principals of
// PrincipalV2 and PrincipalV1 name it: for an assumed role's session, its
// role (arn:aws:sts::123456789012:assumed-role/Importer/session becomes
// arn:aws:iam::123456789012:role/Importer); for a role, the role without
// its path (arn:aws:iam::123456789012:role/service-role/Importer becomes
// the same), since a session's ARN does not carry the path and a role's
// name is unique in its account whatever its path; any other ARN
// unchanged. A session's name is the client's to choose, and SDKs
// choose a new one at each start or credential refresh
// (aws-go-sdk-<time>, botocore-session-<time>): a client that retries
// with a new session is still the role, and must find its key.
func IAMIdentity(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return arn
	}
	var name string
	switch service, resource := parts[2], parts[5]; {
	case service == "sts" && strings.HasPrefix(resource, "assumed-role/"):
		rest := strings.TrimPrefix(resource, "assumed-role/")
		n, _, ok := strings.Cut(rest, "/")
		if !ok {
			return arn
		}
		name = n
	case service == "iam" && strings.HasPrefix(resource, "role/"):
		name = resource[strings.LastIndexByte(resource, '/')+1:]
	}
	if name == "" {
		return arn
	}
	return "arn:" + parts[1] + ":iam::" + parts[4] + ":role/" + name
}

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
