package api

import (
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// Principal names the authenticated caller from the API Gateway request
// context, so two callers never share an idempotency record: a JWT's
// issuer and subject, or the IAM caller's ARN. Without an authorizer it is
// "anonymous". Quoting keeps the parts unambiguous.
func Principal(rc events.APIGatewayV2HTTPRequestContext) string {
	if rc.Authorizer == nil {
		return "anonymous"
	}
	if jwt := rc.Authorizer.JWT; jwt != nil {
		if sub := jwt.Claims["sub"]; sub != "" {
			return "jwt:" + strconv.Quote(jwt.Claims["iss"]) + ":" + strconv.Quote(sub)
		}
	}
	if iam := rc.Authorizer.IAM; iam != nil {
		switch {
		case iam.UserARN != "":
			return "iam:" + iam.UserARN
		case iam.CallerID != "":
			return "iam-caller:" + iam.AccountID + ":" + iam.CallerID
		}
	}
	if id, ok := rc.Authorizer.Lambda["principalId"].(string); ok && id != "" {
		return "lambda:" + id
	}
	return "anonymous"
}
