package template_test

import (
	"encoding/json"
	"testing"

	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// The API's access log names the caller of every request, whichever
// authorizer let it in: the IAM caller (its ARN, its account and caller
// id, as SigV4 signed it) and the JWT's issuer and subject (or client_id,
// for client-credentials tokens), the parts of the principal the function
// log names and the idempotency scope uses. Each line stays one JSON
// object whatever the values are.
func TestTheAccessLogNamesTheCaller(t *testing.T) {
	t.Parallel()
	tpl := load(t)
	format, ok := template.Path(tpl.Resources["HttpApi"].Properties, "AccessLogSettings", "Format").(string)
	if !ok {
		t.Fatalf("HttpApi AccessLogSettings.Format is not a string")
	}
	// Each member is one $context variable in quotes, so a line is JSON
	// whatever API Gateway puts there.
	var members map[string]string
	if err := json.Unmarshal([]byte(format), &members); err != nil {
		t.Fatalf("the access log format is not one JSON object of strings: %v\n%s", err, format)
	}
	vars := map[string]bool{}
	for _, v := range members {
		vars[v] = true
	}
	for _, v := range []string{
		"$context.identity.userArn", "$context.identity.accountId", "$context.identity.caller",
		"$context.authorizer.claims.iss", "$context.authorizer.claims.sub", "$context.authorizer.claims.client_id",
		"$context.requestId", "$context.routeKey", "$context.status",
	} {
		if !vars[v] {
			t.Errorf("the access log does not log %s", v)
		}
	}
}
