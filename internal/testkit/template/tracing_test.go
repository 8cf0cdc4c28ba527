package template_test

import (
	"slices"
	"testing"

	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// xrayActions are what Lambda's active tracing needs of the function's
// role to send its segments (the functions use no X-Ray SDK, so nothing
// reads sampling rules); with a role of its own, SAM adds nothing.
var xrayActions = []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}

// TestEveryFunctionTracesActively: each function, by its own property or
// Globals, has Tracing: Active, and its role may send the segments, so
// the trace id of a POST links the function's segment to the relay's
// PutEvents and on to the consumer.
func TestEveryFunctionTracesActively(t *testing.T) {
	tpl := load(t)
	for _, id := range functionIDs(t, tpl) {
		props := tpl.Resources[id].Properties
		tracing, ok := props["Tracing"]
		if !ok {
			tracing = template.Path(tpl.Globals, "Function", "Tracing")
		}
		if tracing != "Active" {
			t.Errorf("%s Tracing = %v, want Active", id, tracing)
		}
		role, _, ok := template.GetAttTarget(props["Role"])
		if !ok {
			t.Errorf("%s: Role is not !GetAtt <role>.Arn", id)
			continue
		}
		found := map[string][]map[string]any{}
		statements(tpl.Resources[role].Properties["Policies"], role, found)
		var granted []string
		for _, list := range found {
			for _, s := range list {
				for _, a := range actionsOf(s) {
					if slices.Contains(xrayActions, a) && s["Effect"] == "Allow" && s["Resource"] == "*" {
						granted = append(granted, a)
					}
				}
			}
		}
		slices.Sort(granted)
		if !slices.Equal(granted, xrayActions) {
			t.Errorf("%s (role %s) X-Ray grants = %v, want %v on Resource \"*\" (they have no resource-level permissions)", id, role, granted, xrayActions)
		}
	}
}
