package template_test

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// The sweeper runs on a schedule only where the tables have no TTL: on
// mrsc, in the stack that created the tables (one Region's sweep sees
// every Region's writes), never on a regional or mrec stack, whose TTL
// deletes the same items. The rule invokes the sweeper, may (its
// permission names the rule), and its failed invocations are alarmed.
func TestTheSweeperIsScheduledOnlyOnMRSC(t *testing.T) {
	for _, kind := range []string{"regional", "mrec"} {
		tpl := loadKind(t, kind)
		for id, r := range tpl.Resources {
			if r.Type == "AWS::Events::Rule" && template.Path(r.Properties, "ScheduleExpression") != nil {
				t.Errorf("%s: %s schedules something; only an mrsc stack sweeps", kind, id)
			}
			if r.Type == "AWS::Lambda::Permission" && reflect.DeepEqual(r.Properties["FunctionName"], map[string]any{"Ref": "SweeperFunction"}) {
				t.Errorf("%s: %s lets something invoke the sweeper", kind, id)
			}
		}
		if _, ok := tpl.Resources["SweeperFunction"]; !ok {
			t.Errorf("%s: no SweeperFunction (it exists in every stack, for the drift tests and a manual run)", kind)
		}
	}

	tpl := loadKind(t, "mrsc")
	var rules []string
	for id, r := range tpl.Resources {
		if r.Type == "AWS::Events::Rule" && template.Path(r.Properties, "ScheduleExpression") != nil {
			rules = append(rules, id)
		}
	}
	if len(rules) != 1 {
		t.Fatalf("mrsc: scheduled rules %v, want one, the sweeper's", rules)
	}
	rule := tpl.Resources[rules[0]]
	if ref, _ := template.RefTarget(rule.Properties["ScheduleExpression"]); ref != "SweepSchedule" {
		t.Errorf("%s ScheduleExpression = %v, want !Ref SweepSchedule", rules[0], rule.Properties["ScheduleExpression"])
	}
	targets, _ := rule.Properties["Targets"].([]any)
	if len(targets) != 1 {
		t.Fatalf("%s Targets = %v, want the sweeper alone", rules[0], targets)
	}
	if id, attr, ok := template.GetAttTarget(template.Path(targets[0], "Arn")); !ok || id != "SweeperFunction" || attr != "Arn" {
		t.Errorf("%s targets %v, want !GetAtt SweeperFunction.Arn", rules[0], template.Path(targets[0], "Arn"))
	}
	var permitted bool
	for _, r := range tpl.Resources {
		if r.Type != "AWS::Lambda::Permission" {
			continue
		}
		fn, _ := template.RefTarget(r.Properties["FunctionName"])
		src, attr, _ := template.GetAttTarget(r.Properties["SourceArn"])
		if fn == "SweeperFunction" && r.Properties["Principal"] == "events.amazonaws.com" && src == rules[0] && attr == "Arn" &&
			r.Properties["Action"] == "lambda:InvokeFunction" {
			permitted = true
		}
	}
	if !permitted {
		t.Errorf("no AWS::Lambda::Permission lets %s (and it alone: SourceArn) invoke the sweeper", rules[0])
	}
	all := alarms(t, tpl)
	var alarmed bool
	for _, id := range alarmsOn(all, "AWS/Events", "FailedInvocations") {
		if reflect.DeepEqual(all[id].dims()["RuleName"], rule.Properties["Name"]) && all[id].firesOnFirst() {
			alarmed = true
		}
	}
	if !alarmed {
		t.Errorf("no AWS/Events FailedInvocations alarm on %s (RuleName %v)", rules[0], rule.Properties["Name"])
	}
	p, _ := tpl.Parameters["SweeperConcurrency"].(map[string]any)
	if p["Default"] != 1 || p["MaxValue"] != 1 {
		t.Errorf("SweeperConcurrency = %v: one sweeper at a time", p)
	}
}

// On mrsc the sweeper may also apply a stranded record's writes (its
// holder died between the completion and the writes): exactly the
// actions of createproduct's and sellerstats' intents, the record's
// finish, and nothing on another kind.
func TestTheSweeperAppliesStrandedWritesOnlyOnMRSC(t *testing.T) {
	grants := func(kind string) []string {
		tpl := loadKind(t, kind)
		found := map[string][]map[string]any{}
		statements(tpl.Resources["SweeperRole"].Properties["Policies"], "SweeperRole", found)
		var out []string
		for _, list := range found {
			for _, s := range list {
				sid, _ := s["Sid"].(string)
				if !strings.HasPrefix(sid, "Stranded") {
					continue
				}
				resources := asList(s["Resource"])
				if resources == nil {
					resources = []any{s["Resource"]}
				}
				for _, a := range actionsOf(s) {
					for _, r := range resources {
						sub, _ := template.Path(r, "Fn::Sub").(string)
						out = append(out, sid+" "+a+" "+sub[strings.LastIndex(sub, "-")+1:])
					}
				}
			}
		}
		sort.Strings(out)
		return out
	}
	want := []string{
		"StrandedCounts dynamodb:UpdateItem callers",
		"StrandedInserts dynamodb:PutItem outbox",
		"StrandedInserts dynamodb:PutItem products",
		"StrandedRecords dynamodb:GetItem idempotency",
		"StrandedRecords dynamodb:UpdateItem idempotency",
		"StrandedSellerCounts dynamodb:UpdateItem sellers",
	}
	if got := grants("mrsc"); !slices.Equal(got, want) {
		t.Errorf("mrsc: the sweeper's stranded-write grants = %v, want %v", got, want)
	}
	for _, kind := range []string{"regional", "mrec"} {
		if got := grants(kind); len(got) > 0 {
			t.Errorf("%s: the sweeper may write %v; only mrsc has writes without transactions", kind, got)
		}
	}
}
