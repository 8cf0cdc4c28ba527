package emulator_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/testkit/emulator"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// repoTemplate is the repository's template.yaml in its long JSON form,
// as `sam build` leaves it for Adjust.
func repoTemplate(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "template.yaml"))
	require.NoError(t, err)
	tpl, err := template.Document(b)
	require.NoError(t, err)
	return tpl
}

// The repository's template: Adjust drops its metric-math alarms and
// nothing else, and what it drops is what the rule finds, not a list.
func TestAdjustDropsTheMetricMathAlarmsOfTheTemplate(t *testing.T) {
	t.Parallel()
	tpl := repoTemplate(t)
	before := maps.Clone(tpl["Resources"].(map[string]any))

	dropped, err := emulator.Adjust(tpl)
	require.NoError(t, err)
	after := tpl["Resources"].(map[string]any)

	var ids []string
	for _, d := range dropped {
		if d.Change != "dropped" {
			continue
		}
		ids = append(ids, d.Resource)
		assert.Equal(t, "AWS::CloudWatch::Alarm", d.Type)
		assert.Contains(t, d.String(), "metric math")
		assert.NotContains(t, after, d.Resource)
	}
	assert.Contains(t, ids, "CreateProductTakeoverRateAlarm", "the template's takeover-rate alarm is metric math")
	assert.Len(t, after, len(before)-len(ids), "only the dropped resources are gone")
	for id, r := range after {
		props, _ := r.(map[string]any)["Properties"].(map[string]any)
		assert.NotContains(t, props, "Metrics", "%s is metric math and was kept", id)
	}
	// The result is still a template: JSON that CloudFormation reads.
	_, err = json.Marshal(tpl)
	require.NoError(t, err)
}

// The repository's template: the relay's PutEvents grant is conditioned
// on events:source, a key MiniStack never supplies, so Adjust removes that
// condition (and nothing else of the statement), says so, and leaves every
// Deny and every other key alone.
func TestAdjustRemovesTheEventBridgeConditionsOfTheTemplatesGrants(t *testing.T) {
	t.Parallel()
	tpl := repoTemplate(t)

	adjusted, err := emulator.Adjust(tpl)
	require.NoError(t, err)
	var removed []string
	for _, a := range adjusted {
		if strings.Contains(a.Change, "condition") {
			removed = append(removed, a.String())
		}
	}
	require.Len(t, removed, 1, "one grant is conditioned on an EventBridge key: %v", removed)
	assert.Contains(t, removed[0], "events:source")
	assert.Contains(t, removed[0], "PublishEvents")
	assert.Contains(t, removed[0], "OutboxRelayRole (AWS::IAM::Role)")

	resources := tpl["Resources"].(map[string]any)
	role := resources["OutboxRelayRole"].(map[string]any)["Properties"].(map[string]any)
	var publish map[string]any
	for _, p := range role["Policies"].([]any) {
		for _, s := range p.(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			if s.(map[string]any)["Sid"] == "PublishEvents" {
				publish = s.(map[string]any)
			}
		}
	}
	require.NotNil(t, publish, "the relay's PutEvents statement is still there")
	assert.NotContains(t, publish, "Condition", "its only condition was on events:source")
	assert.Equal(t, "events:PutEvents", publish["Action"].([]any)[0])
	assert.NotNil(t, publish["Resource"], "still the stack's bus only")

	// The bus's Deny keeps its condition: MiniStack does not evaluate a
	// bus's policy, and removing a key from a Deny would widen it.
	bus := resources["EventBus"].(map[string]any)["Properties"].(map[string]any)["Policy"].(map[string]any)
	deny := bus["Statement"].([]any)[0].(map[string]any)
	assert.Contains(t, deny["Condition"].(map[string]any)["StringEquals"], "events:source")
}

func TestAdjustRemovesOnlyUnsupportedKeysOfAllows(t *testing.T) {
	t.Parallel()
	statement := func(effect string, condition map[string]any) map[string]any {
		return map[string]any{"Effect": effect, "Action": "events:PutEvents", "Resource": "*", "Condition": condition}
	}
	allowBoth := statement("Allow", map[string]any{
		"StringEquals": map[string]any{"events:source": "s", "aws:PrincipalAccount": "1"},
		"StringLike":   map[string]any{"Events:Detail-Type": "x*"},
	})
	allowOther := statement("Allow", map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": "1"}})
	deny := statement("Deny", map[string]any{"StringEquals": map[string]any{"events:source": "s"}})
	tpl := map[string]any{"Resources": map[string]any{
		"P": map[string]any{"Type": "AWS::IAM::Policy", "Properties": map[string]any{
			"PolicyDocument": map[string]any{"Statement": []any{allowBoth, allowOther, deny}},
		}},
		"Q": map[string]any{"Type": "AWS::IAM::ManagedPolicy", "Properties": map[string]any{
			"PolicyDocument": map[string]any{"Statement": statement("Allow", map[string]any{"StringEquals": map[string]any{"events:source": "s"}})},
		}},
	}}
	adjusted, err := emulator.Adjust(tpl)
	require.NoError(t, err)
	var got []string
	for _, a := range adjusted {
		got = append(got, a.Resource+" "+a.Change)
	}
	assert.Equal(t, []string{
		"P removed the Events:Detail-Type condition of statement 0 from",
		"P removed the events:source condition of statement 0 from",
		"Q removed the events:source condition of statement 0 from",
	}, got)
	assert.Equal(t, map[string]any{"StringEquals": map[string]any{"aws:PrincipalAccount": "1"}}, allowBoth["Condition"])
	assert.Equal(t, map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": "1"}}, allowOther["Condition"])
	assert.Equal(t, map[string]any{"StringEquals": map[string]any{"events:source": "s"}}, deny["Condition"])
	q := tpl["Resources"].(map[string]any)["Q"].(map[string]any)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].(map[string]any)
	assert.NotContains(t, q, "Condition", "a condition left empty goes")
}

// The repository's template: the consumer's queue mapping takes its
// MaximumConcurrency from a Number parameter (its function's reserved
// concurrency), which MiniStack stores as the string a parameter is and
// its SQS poller then compares with integers, failing every poll. Adjust
// writes the parameter's default in its place, as the number
// CloudFormation would have made of it, and says so; what it changes is
// what the rule finds, not a list.
func TestAdjustGivesTheTemplatesMaximumConcurrencyAsANumber(t *testing.T) {
	t.Parallel()
	tpl := repoTemplate(t)

	adjusted, err := emulator.Adjust(tpl)
	require.NoError(t, err)
	var changed []string
	for _, a := range adjusted {
		if strings.Contains(a.Change, "MaximumConcurrency") {
			changed = append(changed, a.Resource)
			assert.Contains(t, a.String(), "SellerStatsConcurrency")
			assert.Contains(t, a.Why, "string")
		}
	}
	assert.Equal(t, []string{"SellerStatsFunction"}, changed)
	fn := tpl["Resources"].(map[string]any)["SellerStatsFunction"].(map[string]any)["Properties"].(map[string]any)
	var found bool
	for _, ev := range fn["Events"].(map[string]any) {
		scaling, ok := template.Path(ev, "Properties", "ScalingConfig").(map[string]any)
		if !ok {
			continue
		}
		found = true
		def := template.Path(tpl, "Parameters", "SellerStatsConcurrency", "Default")
		assert.EqualValues(t, def, scaling["MaximumConcurrency"], "the parameter's default")
		assert.IsType(t, 0, scaling["MaximumConcurrency"], "a number, not a Ref nor a string")
	}
	assert.True(t, found, "the consumer's SQS event has a ScalingConfig")
}

// Only a Ref to a parameter with a default is replaced; a literal stays,
// and a parameter without a default (which only the deployment names)
// fails rather than guessing.
func TestAdjustReplacesOnlyAParametersMaximumConcurrency(t *testing.T) {
	t.Parallel()
	mapping := func(v any) map[string]any {
		return map[string]any{"Type": "AWS::Lambda::EventSourceMapping", "Properties": map[string]any{
			"EventSourceArn": "arn:aws:sqs:us-east-1:000000000000:q", "ScalingConfig": map[string]any{"MaximumConcurrency": v},
		}}
	}
	tpl := map[string]any{
		"Parameters": map[string]any{"N": map[string]any{"Type": "Number", "Default": "5"}},
		"Resources":  map[string]any{"A": mapping(map[string]any{"Ref": "N"}), "B": mapping(3)},
	}
	adjusted, err := emulator.Adjust(tpl)
	require.NoError(t, err)
	require.Len(t, adjusted, 1)
	assert.Equal(t, "A", adjusted[0].Resource)
	assert.Equal(t, 5, template.Path(tpl, "Resources", "A", "Properties", "ScalingConfig", "MaximumConcurrency"))
	assert.Equal(t, 3, template.Path(tpl, "Resources", "B", "Properties", "ScalingConfig", "MaximumConcurrency"))

	noDefault := map[string]any{
		"Parameters": map[string]any{"N": map[string]any{"Type": "Number"}},
		"Resources":  map[string]any{"A": mapping(map[string]any{"Ref": "N"})},
	}
	_, err = emulator.Adjust(noDefault)
	require.ErrorContains(t, err, "MaximumConcurrency")
}

func TestAdjustRefusesToDropWhatIsReferenced(t *testing.T) {
	t.Parallel()
	mathAlarm := map[string]any{"Type": "AWS::CloudWatch::Alarm", "Properties": map[string]any{"Metrics": []any{}}}
	for name, other := range map[string]map[string]any{
		"Ref":       {"Resources": map[string]any{"T": map[string]any{"Type": "X", "Properties": map[string]any{"A": map[string]any{"Ref": "M"}}}}},
		"GetAtt":    {"Resources": map[string]any{"T": map[string]any{"Type": "X", "Properties": map[string]any{"A": map[string]any{"Fn::GetAtt": []any{"M", "Arn"}}}}}},
		"GetAtt.":   {"Resources": map[string]any{"T": map[string]any{"Type": "X", "Properties": map[string]any{"A": map[string]any{"Fn::GetAtt": "M.Arn"}}}}},
		"Sub":       {"Resources": map[string]any{"T": map[string]any{"Type": "X", "Properties": map[string]any{"A": map[string]any{"Fn::Sub": "x-${M.Arn}"}}}}},
		"Sub list":  {"Resources": map[string]any{"T": map[string]any{"Type": "X", "Properties": map[string]any{"A": map[string]any{"Fn::Sub": []any{"${M}", map[string]any{}}}}}}},
		"DependsOn": {"Resources": map[string]any{"T": map[string]any{"Type": "X", "DependsOn": []any{"M"}}}},
		"Output":    {"Resources": map[string]any{}, "Outputs": map[string]any{"O": map[string]any{"Value": map[string]any{"Ref": "M"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			tpl := other
			tpl["Resources"].(map[string]any)["M"] = mathAlarm
			_, err := emulator.Adjust(tpl)
			require.ErrorContains(t, err, "cannot drop M")
			assert.Contains(t, tpl["Resources"], "M", "nothing dropped")
		})
	}
	// A literal ${!M} is no reference.
	tpl := map[string]any{"Resources": map[string]any{
		"M": mathAlarm,
		"T": map[string]any{"Type": "X", "Properties": map[string]any{"A": map[string]any{"Fn::Sub": "${!M}"}}},
	}}
	dropped, err := emulator.Adjust(tpl)
	require.NoError(t, err)
	require.Len(t, dropped, 1)
	assert.Equal(t, "M", dropped[0].Resource)
}

// fixture is what MiniStack's GetTemplate (TemplateStage Processed) gave
// for a stack of this template: the Conditions and the HTTP API's Body
// SAM generated.
func fixture(t *testing.T) (conditions, body map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "httpapi.json"))
	require.NoError(t, err)
	var f struct{ Conditions, Body map[string]any }
	require.NoError(t, json.Unmarshal(b, &f))
	return f.Conditions, f.Body
}

func stack(conditions map[string]any, params map[string]string) *emulator.Stack {
	return &emulator.Stack{
		Parameters: params, Region: "us-east-1", AccountID: "000000000000", Partition: "aws", Name: "s", URLSuffix: "amazonaws.com",
		Conditions: conditions,
		Resources: map[string]emulator.Resource{
			"CreateProductFunction": {Type: "AWS::Lambda::Function", PhysicalID: "s-createproduct"},
			"GetProductFunction":    {Type: "AWS::Lambda::Function", PhysicalID: "s-getproduct"},
			"GetSellerFunction":     {Type: "AWS::Lambda::Function", PhysicalID: "s-getseller"},
			"ProductsTable":         {Type: "AWS::DynamoDB::Table", PhysicalID: "s-products"},
		},
	}
}

func invocationURI(fn string) string {
	return "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:aws:lambda:us-east-1:000000000000:function:" + fn + "/invocations"
}

func resolvedAPI(t *testing.T, params map[string]string) emulator.API {
	t.Helper()
	conditions, body := fixture(t)
	resolved, err := stack(conditions, params).Resolve(body)
	require.NoError(t, err)
	api, err := emulator.HTTPAPI(resolved.(map[string]any))
	require.NoError(t, err)
	return api
}

func TestHTTPAPIRoutesWithIAM(t *testing.T) {
	t.Parallel()
	api := resolvedAPI(t, map[string]string{"JwtIssuer": "", "JwtAudience": ""})
	assert.Empty(t, api.Authorizers, "no JWT parameters: no authorizer")
	want := map[string]string{
		"GET /products/{id}": "s-getproduct",
		"GET /sellers/{id}":  "s-getseller",
		"POST /products":     "s-createproduct",
	}
	require.Len(t, api.Routes, len(want))
	for _, r := range api.Routes {
		assert.Equal(t, "AWS_IAM", r.AuthorizationType, r.Key)
		assert.Empty(t, r.Authorizer, r.Key)
		assert.Equal(t, emulator.Integration{URI: invocationURI(want[r.Key]), Method: "POST", PayloadFormatVersion: "2.0"}, r.Integration, r.Key)
	}
	assert.True(t, slices.IsSortedFunc(api.Routes, func(a, b emulator.Route) int { return strings.Compare(a.Key, b.Key) }))
}

func TestHTTPAPIRoutesWithJWT(t *testing.T) {
	t.Parallel()
	api := resolvedAPI(t, map[string]string{"JwtIssuer": "https://issuer.example", "JwtAudience": "client-1"})
	require.Equal(t, []emulator.Authorizer{{
		Name: "JwtAuthorizer", Type: "JWT", IdentitySource: []string{"$request.header.Authorization"},
		Issuer: "https://issuer.example", Audience: []string{"client-1"},
	}}, api.Authorizers)
	require.Len(t, api.Routes, 3)
	for _, r := range api.Routes {
		assert.Equal(t, "JWT", r.AuthorizationType, r.Key)
		assert.Equal(t, "JwtAuthorizer", r.Authorizer, r.Key)
	}
}

func TestHTTPAPIRefusesWhatItCannotCreate(t *testing.T) {
	t.Parallel()
	op := func(extra map[string]any) map[string]any {
		o := map[string]any{
			"x-amazon-apigateway-integration": map[string]any{"type": "aws_proxy", "httpMethod": "POST", "uri": "u", "payloadFormatVersion": "2.0"},
		}
		maps.Copy(o, extra)
		return o
	}
	body := func(o map[string]any, top map[string]any) map[string]any {
		b := map[string]any{"openapi": "3.0.1", "paths": map[string]any{"/p": map[string]any{"get": o}}}
		maps.Copy(b, top)
		return b
	}
	ok, err := emulator.HTTPAPI(body(op(nil), nil))
	require.NoError(t, err)
	assert.Equal(t, "NONE", ok.Routes[0].AuthorizationType, "no security: an open route")
	for name, b := range map[string]map[string]any{
		"CORS":              body(op(nil), map[string]any{"x-amazon-apigateway-cors": map[string]any{}}),
		"HTTP integration":  body(map[string]any{"x-amazon-apigateway-integration": map[string]any{"type": "http_proxy", "httpMethod": "GET", "uri": "https://x"}}, nil),
		"request parameter": body(map[string]any{"x-amazon-apigateway-integration": map[string]any{"type": "aws_proxy", "httpMethod": "POST", "uri": "u", "requestParameters": map[string]any{}}}, nil),
		"unknown scheme":    body(op(map[string]any{"security": []any{map[string]any{"Other": []any{}}}}), nil),
		"two requirements":  body(op(map[string]any{"security": []any{map[string]any{"A": []any{}}, map[string]any{"B": []any{}}}}), nil),
		"no integration":    body(map[string]any{"responses": map[string]any{}}, nil),
	} {
		_, err := emulator.HTTPAPI(b)
		assert.Error(t, err, name)
	}
	// A Lambda authorizer becomes a REQUEST authorizer on a CUSTOM route.
	lambda := body(op(map[string]any{"security": []any{map[string]any{"L": []any{}}}}), map[string]any{
		"components": map[string]any{"securitySchemes": map[string]any{"L": map[string]any{
			"type": "apiKey", "name": "Unused", "in": "header",
			"x-amazon-apigateway-authorizer": map[string]any{
				"type": "request", "identitySource": "$request.header.Authorization, $context.routeKey",
				"authorizerUri": "arn:aws:apigateway:us-east-1:lambda:path/x", "authorizerPayloadFormatVersion": "2.0",
				"enableSimpleResponses": true, "authorizerResultTtlInSeconds": float64(300),
			},
		}}},
	})
	api, err := emulator.HTTPAPI(lambda)
	require.NoError(t, err)
	assert.Equal(t, "CUSTOM", api.Routes[0].AuthorizationType)
	assert.Equal(t, []emulator.Authorizer{{
		Name: "L", Type: "REQUEST", IdentitySource: []string{"$request.header.Authorization", "$context.routeKey"},
		URI: "arn:aws:apigateway:us-east-1:lambda:path/x", PayloadFormatVersion: "2.0", SimpleResponses: true, ResultTTLSeconds: 300,
	}}, api.Authorizers)
}

func TestResolve(t *testing.T) {
	t.Parallel()
	s := stack(map[string]any{
		"On":   map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "Mode"}, "on"}},
		"Both": map[string]any{"Fn::And": []any{map[string]any{"Condition": "On"}, map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{"a", "b"}}}}}},
		"Any":  map[string]any{"Fn::Or": []any{map[string]any{"Fn::Equals": []any{"a", "b"}}, map[string]any{"Condition": "On"}}},
	}, map[string]string{"Mode": "on", "Name": "n"})
	in := map[string]any{
		"ref":    map[string]any{"Ref": "ProductsTable"},
		"param":  map[string]any{"Ref": "Name"},
		"sub":    map[string]any{"Fn::Sub": "arn:${AWS::Partition}:x:${AWS::Region}:${AWS::AccountId}:${CreateProductFunction.Arn}/${Name}/${!Literal}"},
		"subvar": map[string]any{"Fn::Sub": []any{"${A}-${AWS::StackName}", map[string]any{"A": map[string]any{"Ref": "Name"}}}},
		"join":   map[string]any{"Fn::Join": []any{",", []any{"a", map[string]any{"Ref": "Name"}, map[string]any{"Ref": "AWS::NoValue"}}}},
		"select": map[string]any{"Fn::Select": []any{"1", []any{"a", "b"}}},
		"if":     map[string]any{"Fn::If": []any{"Both", "yes", "no"}},
		"or":     map[string]any{"Fn::If": []any{"Any", "yes", "no"}},
		"gone":   map[string]any{"Fn::If": []any{"On", map[string]any{"Ref": "AWS::NoValue"}, "kept"}},
		"list":   []any{map[string]any{"Ref": "AWS::NoValue"}, "x"},
		"suffix": map[string]any{"Ref": "AWS::URLSuffix"},
	}
	out, err := s.Resolve(in)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"ref":    "s-products",
		"param":  "n",
		"sub":    "arn:aws:x:us-east-1:000000000000:arn:aws:lambda:us-east-1:000000000000:function:s-createproduct/n/${Literal}",
		"subvar": "n-s",
		"join":   "a,n",
		"select": "b",
		"if":     "yes",
		"or":     "yes",
		"list":   []any{"x"},
		"suffix": "amazonaws.com",
	}, out)

	for name, v := range map[string]any{
		"unknown function":  map[string]any{"Fn::Base64": "x"},
		"unknown attribute": map[string]any{"Fn::GetAtt": []any{"ProductsTable", "StreamArn"}},
		"unknown ref":       map[string]any{"Ref": "Nope"},
		"unknown condition": map[string]any{"Fn::If": []any{"Nope", 1, 2}},
		"unclosed sub":      map[string]any{"Fn::Sub": "${Name"},
	} {
		_, err := s.Resolve(v)
		assert.Error(t, err, name)
	}
	_, err = s.Resolve(map[string]any{"Fn::Base64": "x"})
	assert.ErrorIs(t, err, emulator.ErrUnsupported)
}
