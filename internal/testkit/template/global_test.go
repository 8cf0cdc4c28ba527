package template_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// The conditions on TableKind evaluate, for each kind's parameters in the
// first of ReplicaRegions (the stack that creates the tables) and in
// another, to what loadKind resolves and the stacks need: regional by
// default, with nothing of a global table; MREC and MRSC created once,
// in the first Region, used by name elsewhere.
func TestTableKindConditions(t *testing.T) {
	tpl := load(t)
	for _, tc := range []struct {
		name   string
		region string
		params map[string]string
		want   map[string]bool
	}{
		{"regional", "us-east-1", nil, tableKinds["regional"]},
		{"mrec", "us-east-1", map[string]string{"TableKind": "mrec", "ReplicaRegions": "us-east-1,eu-west-1", "HomeRegion": "us-east-1"}, tableKinds["mrec"]},
		{"mrsc", "us-east-1", map[string]string{"TableKind": "mrsc", "ReplicaRegions": "us-east-1,us-east-2", "WitnessRegion": "us-west-2"}, tableKinds["mrsc"]},
		{"mrec, three Regions, another's stack", "eu-west-1", map[string]string{"TableKind": "mrec", "ReplicaRegions": "us-east-1,eu-west-1,ap-south-1", "HomeRegion": "us-east-1"},
			with(tableKinds["mrec"], "CreatesGlobalTables", false, "HasThirdReplica", true)},
		{"mrsc, another's stack", "us-east-2", map[string]string{"TableKind": "mrsc", "ReplicaRegions": "us-east-1,us-east-2", "WitnessRegion": "us-west-2"},
			with(tableKinds["mrsc"], "CreatesGlobalTables", false, "SchedulesSweep", false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := withDefaults(tpl, tc.params)
			// MiniStack (make deploy-local) evaluates conditions without
			// Fn::Split, Fn::And and Fn::Or stopping at their first
			// deciding member: the regional stack's must not need it.
			ev := evaluator{tpl: tpl, params: params, region: tc.region, noSplit: tc.name == "regional"}
			for name, want := range tc.want {
				got, err := ev.condition(name)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
		})
	}
}

// A witness belongs to an MRSC table of two replicas only: DynamoDB
// refuses GlobalTableWitnesses on an MREC table, and on an MRSC table of
// three replicas (three members in all, a witness among them). A
// WitnessRegion left set with either must not reach the tables.
func TestAWitnessOnlyJoinsTwoMRSCReplicas(t *testing.T) {
	tpl := load(t)
	for _, tc := range []struct {
		name   string
		params map[string]string
		want   bool
	}{
		{"mrsc, two replicas", map[string]string{"TableKind": "mrsc", "ReplicaRegions": "us-east-1,us-east-2", "WitnessRegion": "us-west-2"}, true},
		{"mrec", map[string]string{"TableKind": "mrec", "ReplicaRegions": "us-east-1,us-east-2", "HomeRegion": "us-east-1", "WitnessRegion": "us-west-2"}, false},
		{"mrsc, three replicas", map[string]string{"TableKind": "mrsc", "ReplicaRegions": "us-east-1,us-east-2,us-west-1", "WitnessRegion": "us-west-2"}, false},
		{"regional", map[string]string{"WitnessRegion": "us-west-2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := withDefaults(tpl, tc.params)
			ev := evaluator{tpl: tpl, params: params, region: "us-east-1", noSplit: tc.name == "regional"}
			got, err := ev.condition("HasWitness")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("HasWitness = %v, want %v: the tables' GlobalTableWitnesses would be refused", got, tc.want)
			}
		})
	}
}

// withDefaults is the template's parameters' defaults, overridden by
// params.
func withDefaults(tpl *template.Template, params map[string]string) map[string]string {
	out := map[string]string{}
	for name, p := range tpl.Parameters {
		if d, ok := template.Path(p, "Default").(string); ok {
			out[name] = d
		}
	}
	maps.Copy(out, params)
	return out
}

func with(m map[string]bool, kv ...any) map[string]bool {
	out := maps.Clone(m)
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(bool)
	}
	return out
}

// evaluator evaluates the intrinsic functions the table kind's
// conditions use, as CloudFormation does for given parameters.
type evaluator struct {
	tpl     *template.Template
	params  map[string]string
	region  string
	noSplit bool // Fn::Split fails, as MiniStack's evaluator cannot
}

func (e evaluator) condition(name string) (bool, error) {
	c, ok := e.tpl.Conditions[name]
	if !ok {
		return false, fmt.Errorf("no condition %s", name)
	}
	v, err := e.eval(c)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("condition %s is %v, not a boolean", name, v)
	}
	return b, nil
}

func (e evaluator) eval(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return v, nil
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			return e.condition(arg.(string))
		case "Ref":
			if arg == "AWS::Region" {
				return e.region, nil
			}
			p, ok := e.params[arg.(string)]
			if !ok {
				return nil, fmt.Errorf("no parameter %v", arg)
			}
			return p, nil
		case "Fn::Sub":
			s := arg.(string)
			for name, p := range e.params {
				s = strings.ReplaceAll(s, "${"+name+"}", p)
			}
			return s, nil
		case "Fn::Split":
			if e.noSplit {
				return nil, fmt.Errorf("Fn::Split %v: an evaluator without it fails here", args)
			}
			s, err := e.eval(args[1])
			if err != nil {
				return nil, err
			}
			return strings.Split(s.(string), args[0].(string)), nil
		case "Fn::Select":
			l, err := e.eval(args[1])
			if err != nil {
				return nil, err
			}
			i := int(args[0].(int))
			if i >= len(l.([]string)) {
				return nil, fmt.Errorf("Fn::Select %d of %v: out of range, which fails the stack", i, l)
			}
			return l.([]string)[i], nil
		case "Fn::Equals", "Fn::And", "Fn::Or", "Fn::Not":
			var vals []any
			for _, a := range args {
				x, err := e.eval(a)
				if err != nil {
					return nil, err
				}
				vals = append(vals, x)
				if (fn == "Fn::And" && x == false) || (fn == "Fn::Or" && x == true) {
					break // decided, as CloudFormation's and MiniStack's evaluators stop
				}
			}
			switch fn {
			case "Fn::Equals":
				return fmt.Sprint(vals[0]) == fmt.Sprint(vals[1]), nil
			case "Fn::Not":
				return !vals[0].(bool), nil
			case "Fn::And":
				return !slices.Contains(vals, any(false)), nil
			default:
				return slices.Contains(vals, any(true)), nil
			}
		}
		return nil, fmt.Errorf("cannot evaluate %s", fn)
	}
	return nil, nil
}

// On a global table the stack that creates the tables declares each as an
// AWS::DynamoDB::GlobalTable with the keys internal/dev/tables gives, a
// stream on every one (MREC needs one), TTL only on MREC and where the
// table has one (MRSC has none), and none as a regional table; every
// function reaches the tables by their names, and the ones that need it
// are told the kind and Regions; the relay's mapping filters on the
// origin; the roles get what the kind needs.
func TestGlobalTablesPerKind(t *testing.T) {
	for _, kind := range []string{"mrec", "mrsc"} {
		t.Run(kind, func(t *testing.T) {
			tpl := loadKind(t, kind)
			if n := len(tpl.OfType("AWS::DynamoDB::Table")); n != 0 {
				t.Errorf("%d regional tables beside the global ones", n)
			}
			for id, want := range tableIDs {
				gid := strings.TrimSuffix(id, "Table") + "GlobalTable"
				r, ok := tpl.Resources[gid]
				if !ok || r.Type != "AWS::DynamoDB::GlobalTable" {
					t.Errorf("no AWS::DynamoDB::GlobalTable %s", gid)
					continue
				}
				if r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
					t.Errorf("%s is not retained", gid)
				}
				var p struct {
					KeySchema []struct {
						AttributeName, KeyType string
					}
					MultiRegionConsistency  string
					TimeToLiveSpecification *struct{ AttributeName string }
					StreamSpecification     *struct{ StreamViewType string }
					Replicas                []map[string]any
				}
				if err := template.Decode(r.Properties, &p); err != nil {
					t.Fatal(err)
				}
				if len(p.KeySchema) == 0 || p.KeySchema[0].AttributeName != want.HashKey {
					t.Errorf("%s keys %+v, internal/tables says %s", gid, p.KeySchema, want.HashKey)
				}
				if wantC := map[string]string{"mrec": "EVENTUAL", "mrsc": "STRONG"}[kind]; p.MultiRegionConsistency != wantC {
					t.Errorf("%s MultiRegionConsistency %q, want %q", gid, p.MultiRegionConsistency, wantC)
				}
				switch wantTTL := kind == "mrec" && want.TTLAttribute != ""; {
				case wantTTL && (p.TimeToLiveSpecification == nil || p.TimeToLiveSpecification.AttributeName != want.TTLAttribute):
					t.Errorf("%s has no TTL on %s", gid, want.TTLAttribute)
				case !wantTTL && p.TimeToLiveSpecification != nil:
					t.Errorf("%s has TTL (%s has none)", gid, kind)
				}
				if p.StreamSpecification == nil || (want.StreamView != "" && p.StreamSpecification.StreamViewType != string(want.StreamView)) {
					t.Errorf("%s stream %+v, want one (internal/tables: %q)", gid, p.StreamSpecification, want.StreamView)
				}
				if len(p.Replicas) < 2 {
					t.Errorf("%s has %d replicas", gid, len(p.Replicas))
				}
			}

			env := func(fn string) map[string]any {
				e, _ := template.Path(tpl.Resources[fn].Properties, "Environment", "Variables").(map[string]any)
				return e
			}
			for _, fn := range []string{"CreateProductFunction", "SellerStatsFunction"} {
				for name, param := range map[string]string{"IDEMPOTENCY_TABLE_KIND": "TableKind", "REPLICA_REGIONS": "ReplicaRegions"} {
					if ref, _ := template.RefTarget(env(fn)[name]); ref != param {
						t.Errorf("%s %s = %v, want !Ref %s", fn, name, env(fn)[name], param)
					}
				}
			}
			if ref, _ := template.RefTarget(env("CreateProductFunction")["HOME_REGION"]); ref != "HomeRegion" {
				t.Errorf("CreateProductFunction HOME_REGION = %v, want !Ref HomeRegion", env("CreateProductFunction")["HOME_REGION"])
			}
			if got := fmt.Sprint(env("CreateProductFunction")["PRODUCTS_TABLE"]); !strings.Contains(got, "${AWS::StackName}-products") {
				t.Errorf("createproduct's PRODUCTS_TABLE %s: want the global table's name", got)
			}

			pattern := template.Path(tpl.Resources["OutboxRelayFunction"].Properties, "Events", "OutboxStream", "Properties", "FilterCriteria", "Filters")
			b, _ := json.Marshal(pattern)
			if !strings.Contains(string(b), `\"origin\": {\"S\": [\"${AWS::Region}\", {\"exists\": false}]}`) {
				t.Errorf("the relay's filter %s: want INSERTs of this Region's items (and of items with no origin)", b)
			}

			sids := map[string]bool{}
			for _, role := range []string{"CreateProductRole", "SellerStatsRole"} {
				template.Statements(tpl.Resources[role].Properties, role, func(_ string, _ int, st any) {
					if sid, ok := template.Path(st, "Sid").(string); ok {
						sids[sid] = true
					}
				})
			}
			want := map[string][]string{"mrec": {"HomeLeases"}, "mrsc": {"SingleItemGuards", "EventRecordsWithoutTransactions", "SellerGuards"}}[kind]
			other := map[string][]string{"mrsc": {"HomeLeases"}, "mrec": {"SingleItemGuards", "EventRecordsWithoutTransactions", "SellerGuards"}}[kind]
			for _, sid := range want {
				if !sids[sid] {
					t.Errorf("no statement %s on %s", sid, kind)
				}
			}
			for _, sid := range other {
				if sids[sid] {
					t.Errorf("statement %s is not for %s", sid, kind)
				}
			}
		})
	}
	// And none of it on a regional table.
	tpl := load(t)
	if n := len(tpl.OfType("AWS::DynamoDB::GlobalTable")); n != 0 {
		t.Errorf("regional: %d global tables", n)
	}
}
