package template_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/config"
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

// TestTheCollectorLayerSwitchesTheExport: CollectorLayerArn, empty by
// default, adds the layer to every function and, under the same
// condition, points OTLP at it; without it nothing is exported. Each
// function's spans name it as Lambda does (OTEL_SERVICE_NAME is its
// FunctionName).
func TestTheCollectorLayerSwitchesTheExport(t *testing.T) {
	tpl := load(t)
	param, _ := tpl.Parameters["CollectorLayerArn"].(map[string]any)
	if param == nil || param["Default"] != "" {
		t.Fatalf("CollectorLayerArn = %v, want a parameter with Default \"\" (no layer unless asked for)", param)
	}
	cond, _ := json.Marshal(tpl.Conditions["HasCollectorLayer"])
	if string(cond) != `{"Fn::Not":[{"Fn::Equals":[{"Ref":"CollectorLayerArn"},""]}]}` {
		t.Errorf("HasCollectorLayer = %s, want the layer ARN not empty", cond)
	}
	ifLayer := func(then, otherwise any) any {
		return map[string]any{"Fn::If": []any{"HasCollectorLayer", then, otherwise}}
	}
	for what, want := range map[string]any{
		// No layer is an empty list: sam local invoke takes AWS::NoValue
		// here for a layer to download.
		"Layers": ifLayer([]any{map[string]any{"Ref": "CollectorLayerArn"}}, []any{}),
		"Environment.Variables." + config.TracesExporter.Name: ifLayer(string(config.ExporterOTLP), string(config.ExporterNone)),
		"Environment.Variables." + config.OTLPEndpoint.Name:   ifLayer(config.DefaultOTLPEndpoint, ""),
	} {
		got := template.Path(tpl.Globals, append([]string{"Function"}, strings.Split(what, ".")...)...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Globals.Function.%s = %#v, want %#v", what, got, want)
		}
	}
	for fn, id := range functionIDs(t, tpl) {
		props := tpl.Resources[id].Properties
		if _, ok := props["Layers"]; ok {
			t.Errorf("%s sets its own Layers: SAM would add the collector layer to them, or not, unlike the others", id)
		}
		name, service := props["FunctionName"], functionEnv(tpl, id)[config.ServiceName.Name]
		if !reflect.DeepEqual(name, service) || !reflect.DeepEqual(name, map[string]any{"Fn::Sub": "${AWS::StackName}-" + fn}) {
			t.Errorf("%s OTEL_SERVICE_NAME = %v, FunctionName = %v, want both !Sub ${AWS::StackName}-%s", id, service, name, fn)
		}
	}
}
