// Package idemprincipal spells the principal of an AWS caller (the second
// part of every idempotency scope) the one way the library's adapters
// spell it, whatever event the caller came in: an API Gateway request
// (pkg/idem/idemhttp), an AppSync resolver's, or an adapter of your own.
// One caller then has one principal on every way in, and an operator
// names it as the adapters did (pkg/cmd/idemctl).
//
// The spellings quote or prefix each part, so no claim's value can make
// two callers' principals equal:
//
//	jwt:"<iss>":sub="<sub>"               a token's holder (JWT)
//	iam:<ARN>                             an IAM caller
//	iam-caller:<account>:<caller id>      an IAM caller without an ARN
//	cognito-identity:"<pool>":"<id>"      a Cognito identity pool's identity
//	lambda:principalId="<id>"             a Lambda authorizer's caller
//
// The From functions read them from what a request carries, and return
// ErrNoSubject for an identity that names nobody.
package idemprincipal

import (
	"errors"
	"strconv"
)

// ErrNoSubject reports an identity that names no caller (a token without
// a sub, client_id or azp; an authorizer's context without a
// principalId or sub): keys are scoped to the caller, and such callers
// would otherwise share one scope.
var ErrNoSubject = errors.New("idemprincipal: the identity names no caller")

// JWT is the principal of a token's holder: the token's issuer (its iss
// claim) and the claim that names the holder (sub, client_id or azp)
// with its value, as in jwt:"https://issuer.example.com/":sub="248289761001".
func JWT(issuer, claim, value string) string {
	return "jwt:" + strconv.Quote(issuer) + ":" + claim + "=" + strconv.Quote(value)
}

// IAM is the principal of an IAM caller known by its ARN: "iam:" and the
// ARN.
func IAM(userARN string) string { return "iam:" + userARN }

// IAMCaller is the principal of an IAM caller without an ARN: its
// account and caller id.
func IAMCaller(accountID, callerID string) string {
	return "iam-caller:" + accountID + ":" + callerID
}

// CognitoIdentity is the principal of a Cognito identity pool's identity,
// whose IAM credentials it shares with the pool's every other identity.
func CognitoIdentity(poolID, identityID string) string {
	return "cognito-identity:" + strconv.Quote(poolID) + ":" + strconv.Quote(identityID)
}

// Lambda is the principal of a Lambda authorizer's caller: the context
// key that names it (principalId or sub) and its value, as in
// lambda:principalId="user-42".
func Lambda(key, value string) string {
	return "lambda:" + key + "=" + strconv.Quote(value)
}

// FromClaims names a token's holder from its claims (claim returns a
// claim's value, "" when absent): JWT of the issuer and the sub, else the
// client_id or azp that client-credentials tokens carry.
func FromClaims(claim func(name string) string) (string, error) {
	for _, c := range []string{"sub", "client_id", "azp"} {
		if v := claim(c); v != "" {
			return JWT(claim("iss"), c, v), nil
		}
	}
	return "", ErrNoSubject
}

// IAMIdentity is what a request signed with IAM credentials says of its
// caller.
type IAMIdentity struct {
	UserARN, AccountID, CallerID string
	// CognitoIdentityPoolID and CognitoIdentityID are set when the
	// credentials are a Cognito identity pool's.
	CognitoIdentityPoolID, CognitoIdentityID string
}

// FromIAM names an IAM caller: a Cognito identity pool's identity by its
// id (every identity of a pool signs with the pool's one role, so its
// ARN names them all), else the ARN, else the account and caller id.
func FromIAM(id IAMIdentity) (string, error) {
	switch {
	case id.CognitoIdentityID != "":
		return CognitoIdentity(id.CognitoIdentityPoolID, id.CognitoIdentityID), nil
	case id.UserARN != "":
		return IAM(id.UserARN), nil
	case id.CallerID != "":
		return IAMCaller(id.AccountID, id.CallerID), nil
	}
	return "", ErrNoSubject
}

// FromLambdaContext names a Lambda authorizer's caller from the context
// the authorizer returned: its principalId, else its sub.
func FromLambdaContext(context map[string]any) (string, error) {
	for _, k := range []string{"principalId", "sub"} {
		if id, ok := context[k].(string); ok && id != "" {
			return Lambda(k, id), nil
		}
	}
	return "", ErrNoSubject
}
