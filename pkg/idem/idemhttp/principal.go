package idemhttp

import (
	"errors"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// ErrNoSubject reports an authenticated caller whose identity names no
// subject: keys are scoped to the caller, and such callers would otherwise
// share one scope. It is a 403.
var ErrNoSubject = errors.New("idemhttp: the authorizer names no caller")

// Anonymous is the principal of a request without an authorizer:
// idem.Anonymous, the one scope callers share only by choice
// (Middleware.AllowAnonymous).
const Anonymous = idem.Anonymous

// PrincipalV2 names the caller of an API Gateway HTTP API (payload 2.0)
// request from its authorizer, so that two callers never share an
// idempotency record:
//
//   - JWT authorizer: the issuer and the subject (sub, else client_id or
//     azp, as client-credentials tokens carry);
//   - IAM authorizer: the caller's ARN, else account and caller id;
//   - Lambda authorizer: the principalId, else the sub, its context holds
//     (a simple-response authorizer must put one of them there).
//
// An authorizer that is there but names none of these is ErrNoSubject:
// its callers would otherwise share one scope and see each other's
// responses. Without an authorizer the principal is Anonymous. Parts are
// quoted or prefixed, so no claim value can make two principals collide.
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
		return "", ErrNoSubject
	}
	if a.Lambda != nil {
		for _, k := range []string{"principalId", "sub"} {
			if id, ok := a.Lambda[k].(string); ok && id != "" {
				return "lambda:" + k + "=" + strconv.Quote(id), nil
			}
		}
		return "", ErrNoSubject
	}
	return Anonymous, nil
}
