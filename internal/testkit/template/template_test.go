package template_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// The drift test: template.yaml against internal/tables and internal/config.
// A key, TTL attribute, stream view or environment variable changed on one
// side only fails here, before anything is deployed.

var templatePath = filepath.Join("..", "..", "..", "template.yaml")

// tableIDs maps each table of internal/tables to its logical id.
var tableIDs = map[string]tables.Table{
	"ProductsTable":    tables.Products,
	"IdempotencyTable": tables.Idempotency,
	"OutboxTable":      tables.Outbox,
	"SellersTable":     tables.Sellers,
	"CallersTable":     tables.Callers,
}

func load(t *testing.T) *template.Template {
	t.Helper()
	return loadKind(t, "regional")
}

// tableKinds are the values of the conditions on TableKind
// (template.yaml) for each kind, in the stack that creates the tables
// (the first of ReplicaRegions): what loadKind resolves.
// TestTableKindConditions holds them to the conditions' definitions.
var tableKinds = map[string]map[string]bool{
	"regional": {"IsRegional": true, "IsGlobal": false, "IsMREC": false, "IsMRSC": false, "CreatesGlobalTables": false, "HasThirdReplica": false, "HasWitness": false, "SchedulesSweep": false},
	"mrec":     {"IsRegional": false, "IsGlobal": true, "IsMREC": true, "IsMRSC": false, "CreatesGlobalTables": true, "HasThirdReplica": false, "HasWitness": false, "SchedulesSweep": false},
	"mrsc":     {"IsRegional": false, "IsGlobal": true, "IsMREC": false, "IsMRSC": true, "CreatesGlobalTables": true, "HasThirdReplica": false, "HasWitness": true, "SchedulesSweep": true},
}

// loadKind is the template as deployed with TableKind kind (regional is
// the default every other test checks): its Fn::If on the table kind's
// conditions resolved, its resources of another kind dropped.
func loadKind(t *testing.T, kind string) *template.Template {
	t.Helper()
	tpl, err := template.Load(templatePath)
	if err != nil {
		t.Fatalf("load template: %v", err)
	}
	return tpl.Resolve(tableKinds[kind])
}

// functionIDs maps each function of config.Functions, by name, to its
// logical id: the function's name in CamelCase plus "Function"
// (CreateProductFunction is createproduct).
func functionIDs(t *testing.T, tpl *template.Template) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, id := range tpl.OfType("AWS::Serverless::Function") {
		fn := strings.ToLower(strings.TrimSuffix(id, "Function"))
		if _, known := functionVars()[fn]; !strings.HasSuffix(id, "Function") || !known {
			t.Errorf("function %s is not one of config.Functions() %v (logical ids are <Name>Function)", id, sortedKeys(functionVars()))
			continue
		}
		ids[fn] = id
	}
	for fn := range functionVars() {
		if _, ok := ids[fn]; !ok {
			t.Errorf("config.Functions() has %s but template.yaml has no AWS::Serverless::Function for it", fn)
		}
	}
	return ids
}

// functionSDKVars maps each function's name to the SDK endpoint variables
// of the clients it builds.
func functionSDKVars() map[string][]config.Var {
	m := map[string][]config.Var{}
	for _, f := range config.Functions() {
		m[f.Name] = f.SDKVars
	}
	return m
}

// functionVars maps each function's name to the variables its loader reads.
func functionVars() map[string][]config.Var {
	m := map[string][]config.Var{}
	for _, f := range config.Functions() {
		m[f.Name] = f.Vars
	}
	return m
}

type keyElement struct {
	AttributeName string
	KeyType       string
}

type attributeDefinition struct {
	AttributeName string
	AttributeType string
}

type tableProperties struct {
	BillingMode             string
	KeySchema               []keyElement
	AttributeDefinitions    []attributeDefinition
	TimeToLiveSpecification *struct {
		AttributeName string
		Enabled       bool
	}
	StreamSpecification *struct {
		StreamViewType string
	}
	PointInTimeRecoverySpecification *struct {
		PointInTimeRecoveryEnabled bool
	}
	SSESpecification *struct {
		SSEEnabled bool
	}
}

func TestTablesMatchInternalTables(t *testing.T) {
	tpl := load(t)
	for _, id := range tpl.OfType("AWS::DynamoDB::Table") {
		if _, ok := tableIDs[id]; !ok {
			t.Errorf("table %s is not one of internal/tables (known: %v)", id, sortedKeys(tableIDs))
		}
	}
	for id, want := range tableIDs {
		t.Run(want.Logical, func(t *testing.T) {
			r, ok := tpl.Resources[id]
			if !ok || r.Type != "AWS::DynamoDB::Table" {
				t.Fatalf("template.yaml has no AWS::DynamoDB::Table %s for tables.%s", id, want.Logical)
			}
			var p tableProperties
			if err := template.Decode(r.Properties, &p); err != nil {
				t.Fatalf("%s properties: %v", id, err)
			}
			if p.BillingMode != "PAY_PER_REQUEST" {
				t.Errorf("%s BillingMode = %q, want PAY_PER_REQUEST", id, p.BillingMode)
			}

			wantKeys := []keyElement{{want.HashKey, "HASH"}}
			wantAttrs := []attributeDefinition{{want.HashKey, "S"}}
			if want.RangeKey != "" {
				wantKeys = append(wantKeys, keyElement{want.RangeKey, "RANGE"})
				wantAttrs = append(wantAttrs, attributeDefinition{want.RangeKey, string(want.RangeKeyAttributeType())})
			}
			if !slices.Equal(p.KeySchema, wantKeys) {
				t.Errorf("%s KeySchema = %+v, internal/tables says %+v", id, p.KeySchema, wantKeys)
			}
			gotAttrs := slices.Clone(p.AttributeDefinitions)
			sort.Slice(gotAttrs, func(i, j int) bool { return gotAttrs[i].AttributeName < gotAttrs[j].AttributeName })
			sort.Slice(wantAttrs, func(i, j int) bool { return wantAttrs[i].AttributeName < wantAttrs[j].AttributeName })
			if !slices.Equal(gotAttrs, wantAttrs) {
				t.Errorf("%s AttributeDefinitions = %+v, internal/tables says %+v", id, p.AttributeDefinitions, wantAttrs)
			}

			switch ttl := p.TimeToLiveSpecification; {
			case want.TTLAttribute == "" && ttl != nil && ttl.Enabled:
				t.Errorf("%s has TTL on %q, internal/tables says no TTL", id, ttl.AttributeName)
			case want.TTLAttribute != "" && (ttl == nil || !ttl.Enabled):
				t.Errorf("%s has no enabled TimeToLiveSpecification, internal/tables says TTL attribute %q", id, want.TTLAttribute)
			case want.TTLAttribute != "" && ttl.AttributeName != want.TTLAttribute:
				t.Errorf("%s TTL attribute = %q, internal/tables says %q", id, ttl.AttributeName, want.TTLAttribute)
			}

			switch s := p.StreamSpecification; {
			case want.StreamView == "" && s != nil:
				t.Errorf("%s has a %s stream, internal/tables says no stream", id, s.StreamViewType)
			case want.StreamView != "" && s == nil:
				t.Errorf("%s has no StreamSpecification, internal/tables says %s", id, want.StreamView)
			case want.StreamView != "" && s.StreamViewType != string(want.StreamView):
				t.Errorf("%s StreamViewType = %q, internal/tables says %q", id, s.StreamViewType, want.StreamView)
			}

			if p.PointInTimeRecoverySpecification == nil || !p.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled {
				t.Errorf("%s: point-in-time recovery is off", id)
			}
			if p.SSESpecification == nil || !p.SSESpecification.SSEEnabled {
				t.Errorf("%s: SSESpecification.SSEEnabled is not true", id)
			}
		})
	}
	if r := tpl.Resources["ProductsTable"]; r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
		t.Errorf("ProductsTable DeletionPolicy/UpdateReplacePolicy = %q/%q, want Retain/Retain (the system of record)",
			r.DeletionPolicy, r.UpdateReplacePolicy)
	}
}

// functionEnv returns a function's environment: Globals merged with the
// function's own variables, as SAM merges them.
func functionEnv(tpl *template.Template, id string) map[string]any {
	env := map[string]any{}
	for _, src := range []any{
		template.Path(tpl.Globals, "Function", "Environment", "Variables"),
		template.Path(tpl.Resources[id].Properties, "Environment", "Variables"),
	} {
		if m, ok := src.(map[string]any); ok {
			for k, v := range m {
				env[k] = v
			}
		}
	}
	return env
}

func TestFunctionEnvironmentMatchesConfig(t *testing.T) {
	tpl := load(t)
	for fn, id := range functionIDs(t, tpl) {
		t.Run(fn, func(t *testing.T) {
			env := functionEnv(tpl, id)
			got := sortedKeys(env)
			var want []string
			for _, v := range functionVars()[fn] {
				want = append(want, v.Name)
			}
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s environment (Globals + function) = %v, config.Functions() says %s reads %v (its own variables)\n  only in template: %v\n  only in config:   %v",
					id, got, fn, want, minus(got, want), minus(want, got))
			}
			// The SDK's endpoint variables are never set, not even empty:
			// a function's own value, "" included, would override the
			// AWS_ENDPOINT_URL an emulator injects (MiniStack sets it on
			// every function it runs), and Lambda sets none.
			for _, v := range functionSDKVars()[fn] {
				if val, ok := env[v.Name]; ok {
					t.Errorf("%s sets %s = %#v: the template sets no SDK endpoint variable, so the same template runs on AWS and on an emulator", id, v.Name, val)
				}
			}
			// Table names come from the stack's own tables.
			for tid, tbl := range tableIDs {
				v, ok := env[tbl.EnvVar]
				if !ok {
					continue
				}
				if ref, _ := template.RefTarget(v); ref != tid {
					t.Errorf("%s %s = %v, want !Ref %s", id, tbl.EnvVar, v, tid)
				}
			}
			if v, ok := env[config.EventBusName.Name]; ok {
				ref, _ := template.RefTarget(v)
				if tpl.Resources[ref].Type != "AWS::Events::EventBus" {
					t.Errorf("%s %s = %v, want !Ref of an AWS::Events::EventBus", id, config.EventBusName.Name, v)
				}
			}
		})
	}
}

func TestFunctionsBuildWithMakefileForArm64(t *testing.T) {
	tpl := load(t)
	global := func(id, key string) any {
		if v, ok := tpl.Resources[id].Properties[key]; ok {
			return v
		}
		return template.Path(tpl.Globals, "Function", key)
	}
	for _, id := range functionIDs(t, tpl) {
		if got := template.Path(tpl.Resources[id].Metadata, "BuildMethod"); got != "makefile" {
			t.Errorf("%s Metadata.BuildMethod = %v, want makefile (mk/sam.mk has build-%s)", id, got, id)
		}
		// mk/sam.mk builds linux/arm64 binaries named bootstrap.
		if got := fmt.Sprint(global(id, "Architectures")); got != "[arm64]" {
			t.Errorf("%s Architectures = %s, want [arm64] (what mk/sam.mk builds)", id, got)
		}
		if got := global(id, "Runtime"); got != "provided.al2023" {
			t.Errorf("%s Runtime = %v, want provided.al2023", id, got)
		}
		if got := global(id, "Handler"); got != "bootstrap" {
			t.Errorf("%s Handler = %v, want bootstrap", id, got)
		}
	}
}

// statements returns every IAM policy statement in the template, with
// where it was found.
func statements(v any, where string, out map[string][]map[string]any) {
	template.Statements(v, where, func(where string, _ int, s any) {
		if m, ok := s.(map[string]any); ok {
			out[where] = append(out[where], m)
		} else {
			out[where] = append(out[where], map[string]any{"?": s})
		}
	})
}

func actionsOf(s map[string]any) []string {
	switch a := s["Action"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, x := range a {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

func TestIAMHasNoWildcardActions(t *testing.T) {
	tpl := load(t)
	found := map[string][]map[string]any{}
	for id, r := range tpl.Resources {
		statements(r.Properties, id, found)
	}
	if len(found) == 0 {
		t.Fatal("no IAM statements found at all; the walk is broken")
	}
	for where, list := range found {
		for _, s := range list {
			if _, ok := s["NotAction"]; ok {
				t.Errorf("%s: NotAction grants everything else: %v", where, s)
			}
			acts := actionsOf(s)
			if len(acts) == 0 && s["Effect"] == "Allow" {
				t.Errorf("%s: Allow statement without a literal Action list: %v", where, s)
			}
			for _, a := range acts {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard action %q", where, a)
				}
			}
		}
	}
	// SAM policy templates (DynamoDBCrudPolicy, ...) and managed policies
	// expand to broad action sets, and SAM attaches managed policies to the
	// roles it generates: every function brings its own role.
	for _, id := range functionIDs(t, tpl) {
		p := tpl.Resources[id].Properties
		if _, ok := p["Role"]; !ok {
			t.Errorf("%s has no Role: SAM would generate one with managed policies", id)
		}
		if pol, ok := p["Policies"]; ok {
			t.Errorf("%s Policies = %v: write the statements in its role instead", id, pol)
		}
	}
	for _, id := range tpl.OfType("AWS::IAM::Role") {
		if m, ok := tpl.Resources[id].Properties["ManagedPolicyArns"]; ok {
			t.Errorf("role %s has ManagedPolicyArns %v: managed policies are not least privilege", id, m)
		}
	}
}

// TestDynamoDBGrantsAreLeastPrivilege pins the DynamoDB actions each
// function's role allows, per table: what its code calls and nothing more.
func TestDynamoDBGrantsAreLeastPrivilege(t *testing.T) {
	want := map[string][]string{
		"createproduct": {
			// in the commit transaction: a replica of the caller's grant
			// checked, a counter of its window counted (each confined by
			// LeadingKeys, TestCallersTableConfined)
			"CallersTable.Arn dynamodb:ConditionCheckItem",
			"CallersTable.Arn dynamodb:UpdateItem",
			// reserve, replay read, fenced complete, fenced release
			"IdempotencyTable.Arn dynamodb:DeleteItem",
			"IdempotencyTable.Arn dynamodb:GetItem",
			"IdempotencyTable.Arn dynamodb:PutItem",
			"IdempotencyTable.Arn dynamodb:UpdateItem",
			// the Puts of the commit transaction
			"OutboxTable.Arn dynamodb:PutItem",
			"ProductsTable.Arn dynamodb:PutItem",
		},
		"getproduct": {
			"ProductsTable.Arn dynamodb:GetItem",
		},
		"sellerstats": {
			// the event's record, Put in the transaction and read back
			// where a cancellation returns none; the counter's Update
			"IdempotencyTable.Arn dynamodb:GetItem",
			"IdempotencyTable.Arn dynamodb:PutItem",
			"SellersTable.Arn dynamodb:UpdateItem",
		},
		"getseller": {
			// one Query sums a seller's shards
			"SellersTable.Arn dynamodb:Query",
		},
		"sweeper": {
			// the Scans that find expired items, the conditional deletes
			// (records, events, window counters: LeadingKeys confine the
			// first and the last, TestIdempotencyRecordsConfinedToOwnOperation
			// and TestCallersTableConfined), the checkpoint's read and
			// write; on mrsc (resolved away here) a stranded record's
			// writes, which its holder did not finish
			"CallersTable.Arn dynamodb:DeleteItem",
			"CallersTable.Arn dynamodb:Scan",
			"IdempotencyTable.Arn dynamodb:DeleteItem",
			"IdempotencyTable.Arn dynamodb:GetItem",
			"IdempotencyTable.Arn dynamodb:PutItem",
			"IdempotencyTable.Arn dynamodb:Scan",
			"OutboxTable.Arn dynamodb:DeleteItem",
			"OutboxTable.Arn dynamodb:Scan",
		},
		"outboxrelay": {
			// the event source mapping's four stream actions, as AWS's
			// example policy for a stream-triggered function grants them
			"OutboxTable.Arn/stream/* dynamodb:ListStreams",
			"OutboxTable.StreamArn dynamodb:DescribeStream",
			"OutboxTable.StreamArn dynamodb:GetRecords",
			"OutboxTable.StreamArn dynamodb:GetShardIterator",
		},
	}
	tpl := load(t)
	for fn, id := range functionIDs(t, tpl) {
		role, attr, ok := template.GetAttTarget(tpl.Resources[id].Properties["Role"])
		if !ok || attr != "Arn" || tpl.Resources[role].Type != "AWS::IAM::Role" {
			t.Errorf("%s Role = %v, want !GetAtt <an AWS::IAM::Role of this template>.Arn", id, tpl.Resources[id].Properties["Role"])
			continue
		}
		found := map[string][]map[string]any{}
		statements(tpl.Resources[role].Properties["Policies"], role, found)
		var got []string
		for where, list := range found {
			for _, s := range list {
				for _, a := range actionsOf(s) {
					if !strings.HasPrefix(a, "dynamodb:") {
						continue
					}
					res := s["Resource"]
					rl, isList := res.([]any)
					if !isList {
						rl = []any{res}
					}
					for _, r := range rl {
						res, ok := tableResource(r)
						if !ok {
							t.Errorf("%s: %s on %v: want !GetAtt of a table of this stack, or !Sub \"${Table.Arn}/...\"", where, a, r)
							continue
						}
						got = append(got, res+" "+a)
					}
				}
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, want[fn]) {
			t.Errorf("%s (role %s) DynamoDB grants differ\n  only in template: %v\n  only in test:     %v",
				id, role, minus(got, want[fn]), minus(want[fn], got))
		}
	}
}

// subAttPath matches a !Sub of one resource attribute and a literal path,
// such as "${OutboxTable.Arn}/stream/*".
var subAttPath = regexp.MustCompile(`^\$\{([A-Za-z0-9]+)\.([A-Za-z0-9.]+)\}(/[A-Za-z0-9/*_.-]*)?$`)

// tableResource names an IAM Resource as "<LogicalId>.<Attribute>[<path>]":
// !GetAtt OutboxTable.StreamArn is "OutboxTable.StreamArn", and
// !Sub "${OutboxTable.Arn}/stream/*" is "OutboxTable.Arn/stream/*".
func tableResource(r any) (string, bool) {
	if id, attr, ok := template.GetAttTarget(r); ok {
		return id + "." + attr, true
	}
	m, ok := r.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	sub, ok := m["Fn::Sub"].(string)
	if !ok {
		return "", false
	}
	g := subAttPath.FindStringSubmatch(sub)
	if g == nil {
		return "", false
	}
	return g[1] + "." + g[2] + g[3], true
}

func TestTableResourceNames(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{map[string]any{"Fn::GetAtt": []any{"OutboxTable", "StreamArn"}}, "OutboxTable.StreamArn"},
		{map[string]any{"Fn::Sub": "${OutboxTable.Arn}/stream/*"}, "OutboxTable.Arn/stream/*"},
		{map[string]any{"Fn::Sub": "${OutboxTable.Arn}"}, "OutboxTable.Arn"},
		{map[string]any{"Fn::Sub": "arn:aws:dynamodb:*:*:table/*"}, ""},
		{map[string]any{"Fn::Sub": "${OutboxTable.Arn}/stream/${Other}"}, ""},
		{"*", ""},
	} {
		got, ok := tableResource(c.in)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("tableResource(%v) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

func TestRoutesAreAuthorized(t *testing.T) {
	tpl := load(t)
	apis := tpl.OfType("AWS::Serverless::HttpApi")
	if len(apis) != 1 {
		t.Fatalf("want one AWS::Serverless::HttpApi, got %v", apis)
	}
	api := tpl.Resources[apis[0]].Properties
	if got := template.Path(api, "Auth", "DefaultAuthorizer"); got != "AWS_IAM" {
		t.Errorf("HttpApi Auth.DefaultAuthorizer = %v, want AWS_IAM", got)
	}
	routes := map[string]bool{}
	for _, id := range tpl.OfType("AWS::Serverless::Function") {
		events, _ := tpl.Resources[id].Properties["Events"].(map[string]any)
		for name, ev := range events {
			if template.Path(ev, "Type") != "HttpApi" {
				continue
			}
			method := strings.ToLower(fmt.Sprint(template.Path(ev, "Properties", "Method")))
			path := fmt.Sprint(template.Path(ev, "Properties", "Path"))
			routes[strings.ToUpper(method)+" "+path] = true
			if ref, _ := template.RefTarget(template.Path(ev, "Properties", "ApiId")); ref != apis[0] {
				t.Errorf("%s event %s is not on the HttpApi %s (implicit APIs are open)", id, name, apis[0])
			}
			if a := template.Path(ev, "Properties", "Auth", "Authorizer"); a == "NONE" {
				t.Errorf("%s event %s has Authorizer NONE", id, name)
			}
			// Routes in the DefinitionBody carry their own security; one
			// without it falls back to DefaultAuthorizer (AWS_IAM).
			if op := template.Path(api, "DefinitionBody", "paths", path, method); op != nil {
				if template.Path(op, "security") == nil {
					t.Errorf("DefinitionBody %s %s has no security", method, path)
				}
			}
		}
	}
	for _, want := range []string{"POST /products", "GET /products/{id}"} {
		if !routes[want] {
			t.Errorf("no function serves %s (routes: %v)", want, sortedKeys(routes))
		}
	}
}

func TestRelayEventSource(t *testing.T) {
	tpl := load(t)
	ids := functionIDs(t, tpl)
	id, ok := ids["outboxrelay"]
	if !ok {
		t.Skip("no relay function")
	}
	events, _ := tpl.Resources[id].Properties["Events"].(map[string]any)
	var n int
	for name, ev := range events {
		if template.Path(ev, "Type") != "DynamoDB" {
			continue
		}
		n++
		p, _ := template.Path(ev, "Properties").(map[string]any)
		if sid, attr, _ := template.GetAttTarget(p["Stream"]); sid != "OutboxTable" || attr != "StreamArn" {
			t.Errorf("%s event %s Stream = %v, want !GetAtt OutboxTable.StreamArn", id, name, p["Stream"])
		}
		if got := fmt.Sprint(p["FunctionResponseTypes"]); got != "[ReportBatchItemFailures]" {
			t.Errorf("%s event %s FunctionResponseTypes = %s, want [ReportBatchItemFailures]", id, name, got)
		}
		if p["BisectBatchOnFunctionError"] != true {
			t.Errorf("%s event %s: BisectBatchOnFunctionError is not true", id, name)
		}
		for _, k := range []string{"MaximumRetryAttempts", "MaximumRecordAgeInSeconds"} {
			if v, ok := p[k].(int); !ok || v < 0 {
				t.Errorf("%s event %s %s = %v, want a finite number", id, name, k, p[k])
			}
		}
		if template.Path(p, "DestinationConfig", "OnFailure", "Destination") == nil {
			t.Errorf("%s event %s has no on-failure destination", id, name)
		}
		filters, _ := template.Path(p, "FilterCriteria", "Filters").([]any)
		if len(filters) != 1 || strings.ReplaceAll(fmt.Sprint(template.Path(filters[0], "Pattern")), " ", "") != `{"eventName":["INSERT"]}` {
			t.Errorf("%s event %s FilterCriteria = %v, want one INSERT filter", id, name, p["FilterCriteria"])
		}
	}
	if n != 1 {
		t.Errorf("%s has %d DynamoDB events, want 1", id, n)
	}
}

// TestSellerStatsPipeline pins the consumer's path: the rule on the bus for
// this source's ProductCreated, to an encrypted queue whose visibility is
// at least six times the consumer's timeout and which redrives to an
// encrypted dead-letter queue after 5 receives, consumed in batches of 10
// with ReportBatchItemFailures; only the rule may send to the queue.
func TestSellerStatsPipeline(t *testing.T) {
	tpl := load(t)
	id, ok := functionIDs(t, tpl)["sellerstats"]
	if !ok {
		t.Fatal("no sellerstats function")
	}
	fn := tpl.Resources[id].Properties
	timeout, _ := fn["Timeout"].(int)
	events, _ := fn["Events"].(map[string]any)
	var queueID string
	for name, ev := range events {
		if template.Path(ev, "Type") != "SQS" {
			t.Errorf("%s event %s is %v, want only SQS", id, name, template.Path(ev, "Type"))
			continue
		}
		p, _ := template.Path(ev, "Properties").(map[string]any)
		qid, attr, _ := template.GetAttTarget(p["Queue"])
		if attr != "Arn" {
			t.Errorf("%s event %s Queue = %v, want !GetAtt <queue>.Arn", id, name, p["Queue"])
		}
		queueID = qid
		if p["BatchSize"] != 10 {
			t.Errorf("%s BatchSize = %v, want 10", id, p["BatchSize"])
		}
		if got := fmt.Sprint(p["FunctionResponseTypes"]); got != "[ReportBatchItemFailures]" {
			t.Errorf("%s FunctionResponseTypes = %s, want [ReportBatchItemFailures]", id, got)
		}
	}
	q, ok := tpl.Resources[queueID]
	if !ok || q.Type != "AWS::SQS::Queue" {
		t.Fatalf("the consumer's queue %q is not an AWS::SQS::Queue of this template", queueID)
	}
	if vis, _ := q.Properties["VisibilityTimeout"].(int); timeout == 0 || vis < 6*timeout {
		t.Errorf("%s VisibilityTimeout = %v, want at least 6 x the consumer's timeout %d", queueID, q.Properties["VisibilityTimeout"], timeout)
	}
	if q.Properties["SqsManagedSseEnabled"] != true {
		t.Errorf("%s is not encrypted", queueID)
	}
	dlq, _, _ := template.GetAttTarget(template.Path(q.Properties, "RedrivePolicy", "deadLetterTargetArn"))
	if template.Path(q.Properties, "RedrivePolicy", "maxReceiveCount") != 5 || tpl.Resources[dlq].Type != "AWS::SQS::Queue" {
		t.Errorf("%s RedrivePolicy = %v, want a dead-letter queue of this template after 5 receives", queueID, q.Properties["RedrivePolicy"])
	}
	if tpl.Resources[dlq].Properties["SqsManagedSseEnabled"] != true {
		t.Errorf("%s (the dead-letter queue) is not encrypted", dlq)
	}

	// The rule: this bus, this source, ProductCreated, to the queue.
	var rules int
	for _, rid := range tpl.OfType("AWS::Events::Rule") {
		r := tpl.Resources[rid].Properties
		targets, _ := r["Targets"].([]any)
		for _, tg := range targets {
			if qid, _, _ := template.GetAttTarget(template.Path(tg, "Arn")); qid != queueID {
				continue
			}
			rules++
			if bus, _ := template.RefTarget(r["EventBusName"]); bus != "EventBus" {
				t.Errorf("rule %s is on %v, want !Ref EventBus", rid, r["EventBusName"])
			}
			src, _ := template.Path(r, "EventPattern", "source").([]any)
			dt := fmt.Sprint(template.Path(r, "EventPattern", "detail-type"))
			if ref, _ := template.RefTarget(first(src)); len(src) != 1 || ref != "EventSource" || dt != "[ProductCreated]" {
				t.Errorf("rule %s EventPattern = %v, want source [!Ref EventSource], detail-type [ProductCreated]", rid, r["EventPattern"])
			}
		}
	}
	if rules != 1 {
		t.Errorf("%d rules target %s, want 1", rules, queueID)
	}
	// Only that rule may send to the queue, and to its own dead-letter
	// queue: a policy attached to each (Queues) whose statement names it.
	ruleDLQ := ""
	for _, rid := range tpl.OfType("AWS::Events::Rule") {
		for _, tg := range asList(template.Path(tpl.Resources[rid].Properties, "Targets")) {
			if qid, _, _ := template.GetAttTarget(template.Path(tg, "Arn")); qid == queueID {
				ruleDLQ, _, _ = template.GetAttTarget(template.Path(tg, "DeadLetterConfig", "Arn"))
			}
		}
	}
	if tpl.Resources[ruleDLQ].Type != "AWS::SQS::Queue" {
		t.Errorf("the rule's target %s has no dead-letter queue of this template (DeadLetterConfig)", queueID)
	}
	for _, want := range []string{queueID, ruleDLQ} {
		var allowed bool
		for _, pid := range tpl.OfType("AWS::SQS::QueuePolicy") {
			p := tpl.Resources[pid].Properties
			var attached bool
			for _, q := range asList(p["Queues"]) {
				if ref, _ := template.RefTarget(q); ref == want {
					attached = true
				}
			}
			for _, st := range asList(template.Path(p, "PolicyDocument", "Statement")) {
				if template.Path(st, "Principal", "Service") != "events.amazonaws.com" {
					continue
				}
				rid, _, _ := template.GetAttTarget(template.Path(st, "Condition", "ArnEquals", "aws:SourceArn"))
				if tpl.Resources[rid].Type != "AWS::Events::Rule" {
					t.Errorf("%s lets EventBridge send without naming the rule (aws:SourceArn)", pid)
				}
				res := template.Path(st, "Resource")
				for _, r := range append(asList(res), res) {
					if qid, _, _ := template.GetAttTarget(r); qid == want && attached {
						allowed = true
					}
				}
			}
		}
		if !allowed {
			t.Errorf("no queue policy attached to %s (Queues: !Ref %s) lets the rule send to it (Resource: !GetAtt %s.Arn)", want, want, want)
		}
	}

	// The consumer's records outlive every way an event can still come:
	// EventBridge's retries, the queue, its dead-letter queue, and the
	// queue again after a redrive.
	retention, err := time.ParseDuration(fmt.Sprint(template.Path(fn, "Environment", "Variables", config.IdempotencyRetention.Name)))
	if err != nil {
		t.Fatalf("%s %s: %v", id, config.IdempotencyRetention.Name, err)
	}
	seconds := func(res, prop string) time.Duration {
		v, ok := tpl.Resources[res].Properties[prop].(int)
		if !ok {
			t.Fatalf("%s %s = %v, want a number of seconds", res, prop, tpl.Resources[res].Properties[prop])
		}
		return time.Duration(v) * time.Second
	}
	var eventAge time.Duration
	for _, rid := range tpl.OfType("AWS::Events::Rule") {
		for _, tg := range asList(template.Path(tpl.Resources[rid].Properties, "Targets")) {
			if qid, _, _ := template.GetAttTarget(template.Path(tg, "Arn")); qid == queueID {
				v, _ := template.Path(tg, "RetryPolicy", "MaximumEventAgeInSeconds").(int)
				eventAge = time.Duration(v) * time.Second
			}
		}
	}
	lifetime := eventAge + 2*seconds(queueID, "MessageRetentionPeriod") + seconds(dlq, "MessageRetentionPeriod")
	if retention <= lifetime {
		t.Errorf("%s %s = %v, but an event can still be delivered %v after it was published "+
			"(EventBridge %v + queue %v + dead-letter queue %v + queue again after a redrive): a late redelivery would count twice",
			id, config.IdempotencyRetention.Name, retention, lifetime, eventAge, seconds(queueID, "MessageRetentionPeriod"), seconds(dlq, "MessageRetentionPeriod"))
	}
	for _, ev := range events {
		if c := minValue(tpl, template.Path(ev, "Properties", "ScalingConfig", "MaximumConcurrency")); c < 2 {
			t.Errorf("%s: no ScalingConfig.MaximumConcurrency (2 or more) on the queue mapping: unbounded, concurrent invocations only add conflicts on a hot seller", id)
		}
	}
}

// minValue is the least value v can take: v itself for a number, its
// MinValue for a Ref of a Number parameter, 0 otherwise.
func minValue(tpl *template.Template, v any) int {
	if n, ok := v.(int); ok {
		return n
	}
	ref, ok := template.RefTarget(v)
	if !ok {
		return 0
	}
	n, _ := template.Path(tpl.Parameters, ref, "MinValue").(int)
	return n
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func first(l []any) any {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}

// TestParseShortTags pins the reader's handling of CloudFormation tags.
func TestParseShortTags(t *testing.T) {
	src := `
Resources:
  A:
    Type: X::Y
    Properties:
      Ref: !Ref B
      Att: !GetAtt B.Arn
      AttList: !GetAtt [B, StreamArn]
      Sub: !Sub "${AWS::StackName}-x"
      If: !If [C, [{K: []}], !Ref AWS::NoValue]
      Num: 10
      Bool: true
`
	tpl, err := template.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p := tpl.Resources["A"].Properties
	if ref, ok := template.RefTarget(p["Ref"]); !ok || ref != "B" {
		t.Errorf("Ref = %v", p["Ref"])
	}
	for _, k := range []string{"Att", "AttList"} {
		if id, _, ok := template.GetAttTarget(p[k]); !ok || id != "B" {
			t.Errorf("%s = %v", k, p[k])
		}
	}
	if got := fmt.Sprint(p["Sub"]); got != "map[Fn::Sub:${AWS::StackName}-x]" {
		t.Errorf("Sub = %s", got)
	}
	if got := fmt.Sprint(p["If"]); got != "map[Fn::If:[C [map[K:[]]] map[Ref:AWS::NoValue]]]" {
		t.Errorf("If = %s", got)
	}
	if p["Num"] != 10 || p["Bool"] != true {
		t.Errorf("Num, Bool = %#v, %#v", p["Num"], p["Bool"])
	}
	for _, bad := range []string{
		"Resources:\n  A:\n    Type: X\n    Properties: {P: !Bogus x}\n",
		"Resources:\n  A:\n    Type: X\n  A:\n    Type: Y\n",
		"Resources:\n  A:\n    Properties: {}\n",
	} {
		if _, err := template.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", bad)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// minus returns the elements of a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
