// Package emulator holds what a stack deployed to an AWS emulator
// (MiniStack, `make deploy-local`) needs and the emulator does not do
// itself, each piece derived from the template, never from a list kept by
// hand:
//
//   - Adjust drops from a built template the resources the emulator refuses
//     to create (an alarm on metric math), and fails if anything left refers
//     to one; and it removes from each grant (an Allow statement) the
//     condition keys the emulator never supplies (events:source), which
//     would otherwise deny the grant outright; and it writes a queue
//     mapping's MaximumConcurrency taken from a parameter as the number
//     its default is, which the emulator would keep as a string; naming
//     each change and why;
//   - Stack evaluates CloudFormation's intrinsic functions against a
//     deployed stack (its parameters, conditions and resources), as
//     CloudFormation resolves them;
//   - HTTPAPI reads, from an HTTP API's resolved OpenAPI Body (the one SAM
//     generates, which the emulator stores but ignores), the routes, their
//     Lambda integrations and authorizers to create through the API Gateway
//     v2 API instead.
//
// Nothing here talks to a network: test/deploy applies what it returns.
package emulator

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// Adjustment is one change Adjust made to a template.
type Adjustment struct {
	// Resource is the logical id of the resource changed.
	Resource string
	// Type is its resource type.
	Type string
	// Change says what was done to the resource: "dropped", or what was
	// removed from it ("removed the events:source condition of statement
	// PublishEvents from").
	Change string
	// Why says what the emulator does not support.
	Why string
}

func (a Adjustment) String() string {
	return fmt.Sprintf("%s %s (%s): %s", a.Change, a.Resource, a.Type, a.Why)
}

// refused reports why the emulator refuses a resource, or "".
func refused(typ string, props map[string]any) string {
	// MiniStack 1.5.33 fails the stack: "AWS::CloudWatch::Alarm
	// Properties.Metrics (metric math) is not supported; use MetricName and
	// Namespace."
	if _, math := props["Metrics"]; typ == "AWS::CloudWatch::Alarm" && math {
		return "an alarm on metric math (Metrics), which MiniStack refuses to create"
	}
	return ""
}

// unsupportedKey reports why the emulator cannot evaluate a policy
// condition key, or "".
func unsupportedKey(key string) string {
	// MiniStack 1.5.33 (AUTH=true) gives its IAM evaluation the global keys
	// (aws:...), the principal's, request tags, and the request's own keys
	// for DynamoDB, S3 and CloudWatch Logs only (app.py); any other key is
	// absent, and an affirmative operator on an absent key never matches
	// (core/iam_evaluator.py, _evaluate_single_condition). AWS supplies
	// events:source, events:detail-type, ... on every PutEvents.
	if strings.HasPrefix(strings.ToLower(key), "events:") {
		return "MiniStack supplies no EventBridge condition key to its IAM evaluation, so an Allow conditioned on one never matches there (AWS evaluates it)"
	}
	return ""
}

// Adjust drops from tpl, a template in its long JSON form (template.Document
// of `sam build`'s output), every resource the emulator refuses to create,
// removes from every Allow statement of every policy in it each condition
// key the emulator does not supply (a Deny is left as it is: removing a key
// would widen it), writes each ScalingConfig's MaximumConcurrency that is a
// Ref to a parameter as that parameter's default, a number, and returns
// what it changed, sorted by logical id. It fails, changing nothing, if a
// resource, output or condition left in the template refers to a dropped
// one (Ref, Fn::GetAtt, Fn::Sub or DependsOn), or if such a parameter has
// no default.
func Adjust(tpl map[string]any) ([]Adjustment, error) {
	resources, ok := tpl["Resources"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("emulator: the template has no Resources mapping")
	}
	params, _ := tpl["Parameters"].(map[string]any)
	var numbered []numbering
	for id, raw := range resources {
		found, err := parameterConcurrencies(raw, params)
		if err != nil {
			return nil, fmt.Errorf("emulator: %s: %w", id, err)
		}
		for _, n := range found {
			n.resource = id
			numbered = append(numbered, n)
		}
	}
	var dropped []Adjustment
	for id, raw := range resources {
		r, _ := raw.(map[string]any)
		typ, _ := r["Type"].(string)
		props, _ := r["Properties"].(map[string]any)
		if why := refused(typ, props); why != "" {
			dropped = append(dropped, Adjustment{Resource: id, Type: typ, Change: "dropped", Why: why})
		}
	}
	sort.Slice(dropped, func(i, j int) bool { return dropped[i].Resource < dropped[j].Resource })
	for _, d := range dropped {
		for section, v := range map[string]any{"Outputs": tpl["Outputs"], "Conditions": tpl["Conditions"]} {
			if refersTo(v, d.Resource) {
				return nil, fmt.Errorf("emulator: cannot drop %s: %s refers to it", d.Resource, section)
			}
		}
		for id, raw := range resources {
			if id != d.Resource && (refersTo(raw, d.Resource) || dependsOn(raw, d.Resource)) {
				return nil, fmt.Errorf("emulator: cannot drop %s: %s refers to it", d.Resource, id)
			}
		}
	}
	for _, d := range dropped {
		delete(resources, d.Resource)
	}
	adjusted := dropped
	for _, n := range numbered {
		if _, kept := resources[n.resource]; !kept {
			continue
		}
		n.scaling["MaximumConcurrency"] = n.value
		typ, _ := resources[n.resource].(map[string]any)["Type"].(string)
		adjusted = append(adjusted, Adjustment{
			Resource: n.resource, Type: typ,
			Change: fmt.Sprintf("wrote MaximumConcurrency !Ref %s as its default, the number %d, in", n.parameter, n.value),
			Why:    "MiniStack keeps a Ref to a parameter as the string a parameter is, and its SQS poller compares MaximumConcurrency with numbers, failing every poll of the queue (CloudFormation gives the property the integer it declares)",
		})
	}
	for id, raw := range resources {
		r, _ := raw.(map[string]any)
		typ, _ := r["Type"].(string)
		for _, c := range removeUnsupportedConditions(r["Properties"]) {
			adjusted = append(adjusted, Adjustment{Resource: id, Type: typ, Change: c.change, Why: c.why})
		}
	}
	sort.SliceStable(adjusted, func(i, j int) bool {
		if adjusted[i].Resource != adjusted[j].Resource {
			return adjusted[i].Resource < adjusted[j].Resource
		}
		return adjusted[i].Change < adjusted[j].Change
	})
	return adjusted, nil
}

// numbering is a ScalingConfig whose MaximumConcurrency is a Ref to a
// parameter, and the number the parameter's default is.
type numbering struct {
	resource, parameter string
	scaling             map[string]any
	value               int
}

// parameterConcurrencies finds, anywhere within v (a function's SQS
// event, an event source mapping), each ScalingConfig whose
// MaximumConcurrency is a Ref to one of params, with the number its
// default is; a parameter without a default, or whose default is no
// integer, is an error: only the deployment could name the value.
func parameterConcurrencies(v any, params map[string]any) ([]numbering, error) {
	var out []numbering
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			if scaling, ok := v["ScalingConfig"].(map[string]any); ok {
				ref, _ := template.RefTarget(scaling["MaximumConcurrency"])
				if p, isParam := params[ref].(map[string]any); ref != "" && isParam {
					def, ok := p["Default"]
					n, err := strconv.Atoi(fmt.Sprint(def))
					if !ok || err != nil {
						return fmt.Errorf("ScalingConfig MaximumConcurrency !Ref %s: the parameter has no integer default (%v)", ref, def)
					}
					out = append(out, numbering{parameter: ref, scaling: scaling, value: n})
				}
			}
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(v)
}

type removal struct{ change, why string }

// removeUnsupportedConditions removes, from every Allow statement of every
// policy document within v (template.Statements), the condition keys the
// emulator does not supply, dropping a Condition left empty, and returns
// what it removed.
func removeUnsupportedConditions(v any) []removal {
	var out []removal
	template.Statements(v, "", func(_ string, i int, s any) {
		if m, ok := s.(map[string]any); ok {
			out = append(out, removeUnsupportedKeys(m, i)...)
		}
	})
	return out
}

func removeUnsupportedKeys(s map[string]any, i int) []removal {
	cond, _ := s["Condition"].(map[string]any)
	if s["Effect"] != "Allow" || cond == nil {
		return nil
	}
	name := fmt.Sprint(i)
	if sid, ok := s["Sid"].(string); ok && sid != "" {
		name = sid
	}
	var out []removal
	for op, raw := range cond {
		keys, _ := raw.(map[string]any)
		for key := range keys {
			if why := unsupportedKey(key); why != "" {
				delete(keys, key)
				out = append(out, removal{change: fmt.Sprintf("removed the %s condition of statement %s from", key, name), why: why})
			}
		}
		if keys != nil && len(keys) == 0 {
			delete(cond, op)
		}
	}
	if len(cond) == 0 {
		delete(s, "Condition")
	}
	return out
}

// refersTo reports whether v holds a Ref, Fn::GetAtt or Fn::Sub reference
// to the logical id.
func refersTo(v any, id string) bool {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			if ref, ok := v["Ref"].(string); ok && ref == id {
				return true
			}
			switch att := v["Fn::GetAtt"].(type) {
			case []any:
				if len(att) > 0 && att[0] == id {
					return true
				}
			case string:
				if name, _, _ := strings.Cut(att, "."); name == id {
					return true
				}
			}
			sub := v["Fn::Sub"]
			if l, ok := sub.([]any); ok && len(l) > 0 {
				sub = l[0]
			}
			if s, ok := sub.(string); ok && slices.ContainsFunc(subVariables(s), func(name string) bool {
				base, _, _ := strings.Cut(name, ".")
				return base == id
			}) {
				return true
			}
		}
		for _, e := range v {
			if refersTo(e, id) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, func(e any) bool { return refersTo(e, id) })
	}
	return false
}

// dependsOn reports whether a resource's DependsOn names the logical id.
func dependsOn(raw any, id string) bool {
	r, _ := raw.(map[string]any)
	switch d := r["DependsOn"].(type) {
	case string:
		return d == id
	case []any:
		return slices.Contains(d, any(id))
	}
	return false
}
