package api

import (
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// Principal names the authenticated caller from the API Gateway request
// context, so two callers never share an idempotency record: a JWT's
// issuer and subject (sub, else client_id or azp for client-credentials
// tokens), or the IAM caller's ARN. Without an authorizer it is
// "anonymous". ok is false for a JWT that names no subject at all: such
// callers would otherwise share one scope. Quoting keeps parts unambiguous.
func Principal(rc events.APIGatewayV2HTTPRequestContext) (principal string, ok bool) {
	if rc.Authorizer == nil {
		return "anonymous", true
	}
	if jwt := rc.Authorizer.JWT; jwt != nil {
		for _, claim := range []string{"sub", "client_id", "azp"} {
			if v := jwt.Claims[claim]; v != "" {
				return "jwt:" + strconv.Quote(jwt.Claims["iss"]) + ":" + claim + "=" + strconv.Quote(v), true
			}
		}
		return "", false
	}
	if iam := rc.Authorizer.IAM; iam != nil {
		switch {
		case iam.UserARN != "":
			return "iam:" + iam.UserARN, true
		case iam.CallerID != "":
			return "iam-caller:" + iam.AccountID + ":" + iam.CallerID, true
		}
	}
	if id, ok := rc.Authorizer.Lambda["principalId"].(string); ok && id != "" {
		return "lambda:" + id, true
	}
	return "anonymous", true
}
