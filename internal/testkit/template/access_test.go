package template_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// routeScopes is each route's scope, as internal/access names them.
var routeScopes = map[string]string{
	"POST /products":     access.ScopeCreateProducts,
	"GET /products/{id}": access.ScopeReadProducts,
	"GET /sellers/{id}":  access.ScopeReadSellers,
}

// httpRoutes is every route a function serves: "METHOD /path".
func httpRoutes(tpl *template.Template) []string {
	var routes []string
	for _, id := range tpl.OfType("AWS::Serverless::Function") {
		events, _ := tpl.Resources[id].Properties["Events"].(map[string]any)
		for _, ev := range events {
			if template.Path(ev, "Type") == "HttpApi" {
				routes = append(routes, strings.ToUpper(fmt.Sprint(template.Path(ev, "Properties", "Method")))+" "+fmt.Sprint(template.Path(ev, "Properties", "Path")))
			}
		}
	}
	slices.Sort(routes)
	return routes
}

// Each route requires its own scope of a JWT, and IAM otherwise: with a
// JWT authorizer and no scopes, any token the issuer signed for the
// audience would call every route.
func TestRoutesRequireTheirScope(t *testing.T) {
	tpl := load(t)
	api := tpl.Resources[tpl.OfType("AWS::Serverless::HttpApi")[0]].Properties
	routes := httpRoutes(tpl)
	if len(routes) == 0 {
		t.Fatal("no HttpApi routes found; the walk is broken")
	}
	for _, route := range routes {
		scope, ok := routeScopes[route]
		if !ok {
			t.Errorf("%s has no scope in internal/access", route)
			continue
		}
		method, path, _ := strings.Cut(route, " ")
		sec := template.Path(api, "DefinitionBody", "paths", path, strings.ToLower(method), "security")
		want := map[string]any{"Fn::If": []any{
			"UseJwtAuthorizer",
			[]any{map[string]any{"JwtAuthorizer": []any{map[string]any{"Fn::Sub": "${JwtScopePrefix}" + scope}}}},
			[]any{map[string]any{"AWS_IAM": []any{}}},
		}}
		if fmt.Sprint(sec) != fmt.Sprint(want) {
			t.Errorf("%s security = %v\n  want %v (the scope %q after JwtScopePrefix with a JWT, AWS_IAM otherwise)", route, sec, want, scope)
		}
	}
	if _, ok := tpl.Parameters["JwtScopePrefix"]; !ok {
		t.Error("no JwtScopePrefix parameter")
	}
}

// With IAM, a managed policy per route is the route's permission, as a
// scope is with a JWT: Invoke on that route of this API, and nothing
// else; it exists only when the routes are IAM's.
func TestIAMRoutePolicies(t *testing.T) {
	tpl := load(t)
	arn := regexp.MustCompile(`^arn:\$\{AWS::Partition\}:execute-api:\$\{AWS::Region\}:\$\{AWS::AccountId\}:\$\{HttpApi\}/\$default/([A-Z]+)(/.*)$`)
	granted := map[string]string{}
	for _, id := range tpl.OfType("AWS::IAM::ManagedPolicy") {
		r := tpl.Resources[id]
		if r.Condition != "UseIamAuthorizer" {
			t.Errorf("%s has Condition %q, want UseIamAuthorizer (with a JWT, scopes are the permission)", id, r.Condition)
		}
		found := map[string][]map[string]any{}
		statements(r.Properties["PolicyDocument"], id, found)
		for where, list := range found {
			for _, s := range list {
				if a := actionsOf(s); !slices.Equal(a, []string{"execute-api:Invoke"}) {
					t.Errorf("%s: actions %v, want execute-api:Invoke only", where, a)
				}
				sub, _ := template.Path(s, "Resource", "Fn::Sub").(string)
				m := arn.FindStringSubmatch(sub)
				if m == nil {
					t.Errorf("%s: Resource %v is not a route of this stack's HttpApi", where, s["Resource"])
					continue
				}
				granted[m[1]+" "+m[2]] = id
			}
		}
	}
	for _, route := range httpRoutes(tpl) {
		method, path, _ := strings.Cut(route, " ")
		want := method + " " + regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "*")
		if granted[want] == "" {
			t.Errorf("no managed policy grants %s (as %s): %v", route, want, granted)
		}
		delete(granted, want)
	}
	if len(granted) > 0 {
		t.Errorf("managed policies grant what no route serves: %v", granted)
	}
}

// Every function has reserved concurrency, from a parameter: createproduct
// cannot take the account's concurrency from the relay and the consumer,
// and each is sure of its own. With the defaults, the account keeps the
// 100 unreserved executions Lambda requires of its default quota (1,000).
func TestEveryFunctionReservesConcurrency(t *testing.T) {
	tpl := load(t)
	sum := 0
	for fn, id := range functionIDs(t, tpl) {
		v := tpl.Resources[id].Properties["ReservedConcurrentExecutions"]
		param, ok := template.RefTarget(v)
		if !ok {
			t.Errorf("%s: ReservedConcurrentExecutions = %v, want !Ref of a parameter", id, v)
			continue
		}
		p, _ := tpl.Parameters[param].(map[string]any)
		def, _ := p["Default"].(int)
		if p["Type"] != "Number" || minValue(tpl, v) < 1 || def < minValue(tpl, v) {
			t.Errorf("%s (%s): parameter %s = %v, want a Number with MinValue 1 or more and a Default at least that", id, fn, param, p)
		}
		sum += def
	}
	if sum > 900 {
		t.Errorf("the functions reserve %d executions by default; an account's default quota of 1,000 keeps 100 unreserved, so at most 900", sum)
	}
}

// A mapping never invokes more environments than its function reserved:
// the queue mapping's MaximumConcurrency is at most the consumer's
// reserved concurrency, whatever the parameters say, and the stream
// mapping's parallelization (1 per shard) fits the relay's.
func TestMappingsFitTheirReservedConcurrency(t *testing.T) {
	tpl := load(t)
	ids := functionIDs(t, tpl)
	for _, fn := range []string{"sellerstats", "outboxrelay"} {
		id := ids[fn]
		reserved := tpl.Resources[id].Properties["ReservedConcurrentExecutions"]
		events, _ := tpl.Resources[id].Properties["Events"].(map[string]any)
		seen := 0
		for name, ev := range events {
			var most any
			switch template.Path(ev, "Type") {
			case "SQS":
				most = template.Path(ev, "Properties", "ScalingConfig", "MaximumConcurrency")
			case "DynamoDB":
				most = template.Path(ev, "Properties", "ParallelizationFactor")
				if most == nil {
					most = 1 // the default: one invocation per shard
				}
			default:
				continue
			}
			seen++
			r1, ok1 := template.RefTarget(most)
			r2, ok2 := template.RefTarget(reserved)
			if ok1 && ok2 && r1 == r2 {
				continue // one parameter: equal whatever it is
			}
			if n, ok := most.(int); !ok || n > minValue(tpl, reserved) {
				t.Errorf("%s event %s: at most %v environments at once, but only %v reserved (at least %d): the mapping would be throttled",
					id, name, most, reserved, minValue(tpl, reserved))
			}
		}
		if seen == 0 {
			t.Errorf("%s: no queue or stream mapping found; the walk is broken", id)
		}
	}
}

// createproduct may only check grants and count windows in the callers
// table: a bug in it cannot write a grant, and no other function touches
// the table but the sweeper, which reads it and deletes expired window
// counters only.
func TestCallersTableConfined(t *testing.T) {
	want := map[string][]string{
		"dynamodb:ConditionCheckItem": {access.GrantPrefix + "*"},
		"dynamodb:UpdateItem":         {access.WindowPrefix + "*"},
	}
	tpl := load(t)
	seen := map[string]bool{}
	for fn, id := range functionIDs(t, tpl) {
		role, _, _ := template.GetAttTarget(tpl.Resources[id].Properties["Role"])
		found := map[string][]map[string]any{}
		statements(tpl.Resources[role].Properties["Policies"], role, found)
		for where, list := range found {
			for _, s := range list {
				on := false
				for _, r := range asList(s["Resource"]) {
					if res, _ := tableResource(r); strings.HasPrefix(res, "CallersTable.") {
						on = true
					}
				}
				if res, _ := tableResource(s["Resource"]); strings.HasPrefix(res, "CallersTable.") {
					on = true
				}
				if !on {
					continue
				}
				if fn == config.NameSweeper {
					// It finds expired window counters (a Scan, which
					// no key confines: it reads) and deletes them,
					// never a grant.
					for _, a := range actionsOf(s) {
						if got := leadingKeys(s["Condition"]); !(a == "dynamodb:Scan" && got == nil) && !(a == "dynamodb:DeleteItem" && slices.Equal(got, []string{access.WindowPrefix + "*"})) {
							t.Errorf("%s: the sweeper's %s on the callers table confined to %v, want a Scan, or a DeleteItem of %s* only", where, a, got, access.WindowPrefix)
						}
					}
					continue
				}
				if fn != "createproduct" {
					t.Errorf("%s: %s may use the callers table", fn, where)
					continue
				}
				for _, a := range actionsOf(s) {
					seen[a] = true
					if got := leadingKeys(s["Condition"]); !slices.Equal(got, want[a]) {
						t.Errorf("%s: %s on the callers table confined to %v, want %v", where, a, got, want[a])
					}
				}
			}
		}
	}
	for a := range want {
		if !seen[a] {
			t.Errorf("createproduct has no %s on the callers table", a)
		}
	}
}
