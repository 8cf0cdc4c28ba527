package idemhttp

import (
	"errors"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// ErrNoSubject reports an authenticated caller whose identity names no
// subject: keys are scoped to the caller, and such callers would otherwise
// share one scope. It is a 403.
var ErrNoSubject = errors.New("idemhttp: the caller's token names no subject (sub, client_id or azp)")

// Anonymous is the principal of a request without an authorizer.
const Anonymous = "anonymous"

// PrincipalV2 names the caller of an API Gateway HTTP API (payload 2.0)
// request from its authorizer, so that two callers never share an
// idempotency record:
//
//   - JWT authorizer: the issuer and the subject (sub, else client_id or
//     azp, as client-credentials tokens carry); a token with none of them
//     is ErrNoSubject;
//   - IAM authorizer: the caller's ARN (else account and caller id);
//   - Lambda authorizer: its principalId.
//
// Without an authorizer it is Anonymous. Parts are quoted, so no claim
// value can make two principals collide.
func PrincipalV2(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
	a := rc.Authorizer
	if a == nil {
		return Anonymous, nil
	}
	if jwt := a.JWT; jwt != nil {
		for _, claim := range []string{"sub", "client_id", "azp"} {
			if v := jwt.Claims[claim]; v != "" {
				return "jwt:" + strconv.Quote(jwt.Claims["iss"]) + ":" + claim + "=" + strconv.Quote(v), nil
			}
		}
		return "", ErrNoSubject
	}
	if iam := a.IAM; iam != nil {
		switch {
		case iam.UserARN != "":
			return "iam:" + iam.UserARN, nil
		case iam.CallerID != "":
			return "iam-caller:" + iam.AccountID + ":" + iam.CallerID, nil
		}
	}
	if id, ok := a.Lambda["principalId"].(string); ok && id != "" {
		return "lambda:" + id, nil
	}
	return Anonymous, nil
}
