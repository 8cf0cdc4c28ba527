package template_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// busARN is the ARN of the stack's bus as a !Sub of its name, which the
// bus's own policy and the relay's role name it by (a GetAtt each way
// between the two would be a circular dependency).
func busARN(t *testing.T, tpl *template.Template) map[string]any {
	t.Helper()
	name, _ := template.Path(tpl.Resources["EventBus"].Properties, "Name", "Fn::Sub").(string)
	if name == "" {
		t.Fatalf("EventBus Name = %v, want a !Sub", tpl.Resources["EventBus"].Properties["Name"])
	}
	return map[string]any{"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/" + name}
}

// The consumer counts every event of EventSource its queue receives, so
// only the relay may put one: the bus's policy denies PutEvents of that
// source to every principal but the relay's role. An explicit deny is the
// only thing a resource policy can add within the account (an allow adds
// to what IAM already allows); without it, any principal of the account
// allowed PutEvents could forge a ProductCreated the consumer counts.
func TestOnlyTheRelayPutsTheStacksEvents(t *testing.T) {
	tpl := load(t)
	relayRole := ""
	for _, id := range tpl.OfType("AWS::Serverless::Function") {
		if _, ok := functionEnv(tpl, id)["EVENT_BUS_NAME"]; ok {
			relayRole, _, _ = template.GetAttTarget(tpl.Resources[id].Properties["Role"])
		}
	}
	if relayRole == "" {
		t.Fatal("no function with EVENT_BUS_NAME and a role of its own")
	}
	found := map[string][]map[string]any{}
	statements(tpl.Resources["EventBus"].Properties["Policy"], "EventBus", found)
	var denied bool
	for _, s := range found["EventBus"] {
		if s["Effect"] != "Deny" || s["Principal"] != "*" || !reflect.DeepEqual(actionsOf(s), []string{"events:PutEvents"}) ||
			!reflect.DeepEqual(s["Resource"], busARN(t, tpl)) {
			continue
		}
		source, _ := template.RefTarget(template.Path(s, "Condition", "StringEquals", "events:source"))
		role, attr, _ := template.GetAttTarget(template.Path(s, "Condition", "ArnNotEquals", "aws:PrincipalArn"))
		if source == "EventSource" && role == relayRole && attr == "Arn" {
			denied = true
		}
	}
	if !denied {
		t.Errorf("EventBus Policy has no statement denying events:PutEvents on the bus to Principal \"*\" when events:source is !Ref EventSource and aws:PrincipalArn is not !GetAtt %s.Arn: %v", relayRole, found["EventBus"])
	}
	// The rule the consumer's queue is fed by matches that same source.
	for _, rid := range tpl.OfType("AWS::Events::Rule") {
		src := asList(template.Path(tpl.Resources[rid].Properties, "EventPattern", "source"))
		if len(src) != 1 {
			t.Errorf("rule %s matches sources %v, want !Ref EventSource alone", rid, src)
			continue
		}
		if ref, _ := template.RefTarget(src[0]); ref != "EventSource" {
			t.Errorf("rule %s matches source %v, want !Ref EventSource, the one the bus reserves for the relay", rid, src[0])
		}
	}
}

// Every grant of events:PutEvents is on the stack's bus and for the
// stack's source only: the relay's role cannot put another source's
// events (a bug or a stolen session there forges nobody else's).
func TestPutEventsGrantsAreForTheStacksSource(t *testing.T) {
	tpl := load(t)
	found := map[string][]map[string]any{}
	for _, id := range tpl.OfType("AWS::IAM::Role") {
		statements(tpl.Resources[id].Properties["Policies"], id, found)
	}
	grants := 0
	for where, list := range found {
		for _, s := range list {
			acts := actionsOf(s)
			if s["Effect"] != "Allow" || !slices.ContainsFunc(acts, func(a string) bool { return strings.HasPrefix(a, "events:") }) {
				continue
			}
			grants++
			if !reflect.DeepEqual(acts, []string{"events:PutEvents"}) {
				t.Errorf("%s grants %v; the functions only put events", where, acts)
			}
			if !reflect.DeepEqual(s["Resource"], busARN(t, tpl)) {
				t.Errorf("%s grants PutEvents on %v, want the stack's bus", where, s["Resource"])
			}
			if ref, _ := template.RefTarget(template.Path(s, "Condition", "StringEquals", "events:source")); ref != "EventSource" {
				t.Errorf("%s grants PutEvents without Condition StringEquals events:source !Ref EventSource: %v", where, s["Condition"])
			}
		}
	}
	if grants == 0 {
		t.Fatal("no role may put events: the walk is broken, or the relay lost its grant")
	}
}
