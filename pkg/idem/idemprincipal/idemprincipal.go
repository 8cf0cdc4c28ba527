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
//	iam:<ARN>                             an IAM caller (a role's sessions: the role)
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
	"strings"
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

// IAM is the principal of an IAM caller known by its ARN: "iam:" and
// IdentityARN's ARN, so every session of a role is the role.
func IAM(userARN string) string { return "iam:" + IdentityARN(userARN) }

// IdentityARN is the ARN of the identity an IAM ARN names, as IAM and
// FromIAM name it: for an assumed role's session, its role
// (arn:aws:sts::123456789012:assumed-role/Importer/session becomes
// arn:aws:iam::123456789012:role/Importer); for a role, the role without
// its path (arn:aws:iam::123456789012:role/service-role/Importer becomes
// the same), since a session's ARN does not carry the path and a role's
// name is unique in its account whatever its path; any other ARN
// unchanged. A session's name is the client's to choose, and SDKs choose
// a new one at each start or credential refresh (aws-go-sdk-<time>,
// botocore-session-<time>): a client that retries with a new session is
// still the role, and must find its key.
func IdentityARN(arn string) string {
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

// FromIAM names an IAM caller by the identity behind its credentials: a
// Cognito identity pool's identity by its id (every identity of a pool
// signs as a session of the pool's one role, so its ARN names them all),
// else its ARN's identity (IAM: a role's sessions are the role), else the
// account and caller id.
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
