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
	if a == nil {
		return "", nil
	}
	if jwt := a.JWT; jwt != nil {
		for _, claim := range []string{"sub", "client_id", "azp"} {
			if v := jwt.Claims[claim]; v != "" {
				return JWTPrincipal(jwt.Claims["iss"], claim, v), nil
			}
		}
		return "", ErrNoSubject
	}
	if iam := a.IAM; iam != nil {
		switch {
		case iam.UserARN != "":
			return IAMPrincipal(iam.UserARN), nil
		case iam.CallerID != "":
			return IAMCallerPrincipal(iam.AccountID, iam.CallerID), nil
		}
		return "", ErrNoSubject
	}
	if a.Lambda != nil {
		for _, k := range []string{"principalId", "sub"} {
			if id, ok := a.Lambda[k].(string); ok && id != "" {
				return LambdaPrincipal(k, id), nil
			}
		}
		return "", ErrNoSubject
	}
	return "", nil
}

// JWTPrincipal is PrincipalV2's principal for a JWT authorizer's caller:
// the token's issuer (its iss claim), and the claim that names the caller
// (sub, client_id or azp) with its value, as in
// jwt:"https://issuer.example.com/":sub="248289761001". An operator who
// knows the caller by issuer and subject spells it with this (idemctl
// -jwt-issuer and -jwt-sub).
func JWTPrincipal(issuer, claim, value string) string {
	return "jwt:" + strconv.Quote(issuer) + ":" + claim + "=" + strconv.Quote(value)
}

// IAMPrincipal is PrincipalV2's principal for an IAM authorizer's caller
// known by its ARN (the request context's userArn): "iam:" and the ARN.
func IAMPrincipal(userARN string) string { return "iam:" + userARN }

// IAMCallerPrincipal is PrincipalV2's principal for an IAM caller without
// an ARN: its account and caller id.
func IAMCallerPrincipal(accountID, callerID string) string {
	return "iam-caller:" + accountID + ":" + callerID
}

// LambdaPrincipal is PrincipalV2's principal for a Lambda authorizer's
// caller: the context key that names it (principalId or sub) and its
// value, as in lambda:principalId="user-42".
func LambdaPrincipal(key, value string) string {
	return "lambda:" + key + "=" + strconv.Quote(value)
}
