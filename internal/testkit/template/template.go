// Package template reads the AWS SAM template (template.yaml) into plain Go
// values so tests can hold it against the code's own definitions: the table
// schemas of internal/tables and the environment of internal/config.
//
// CloudFormation's short-form tags (!Ref, !GetAtt, !Sub, !If, ...) are not
// YAML types, so the file is read as a yaml.Node tree and every tagged node
// is rewritten to its long JSON form ({"Ref": x}, {"Fn::GetAtt": [r, a]},
// {"Fn::Sub": s}, ...), which is what CloudFormation itself sees.
package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template is a parsed template: its sections as generic JSON-like values
// (map[string]any, []any, string, bool, int, float64, nil).
type Template struct {
	Parameters map[string]any
	Conditions map[string]any
	Globals    map[string]any
	Resources  map[string]Resource
	Outputs    map[string]any
}

// Resource is one entry of the Resources section.
type Resource struct {
	Type                string
	Condition           string
	DeletionPolicy      string
	UpdateReplacePolicy string
	Metadata            map[string]any
	Properties          map[string]any
}

// Load parses the template file at path.
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Document parses a whole template from YAML (JSON is YAML too) into its
// long JSON form, every section kept: for tools that rewrite a template
// and hand it on (json.Marshal of the result is a template CloudFormation
// reads).
func Document(b []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("template: not a single YAML document")
	}
	v, err := value(doc.Content[0])
	if err != nil {
		return nil, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("template: top level is not a mapping")
	}
	return top, nil
}

// Parse parses a template from YAML (JSON is YAML too).
func Parse(b []byte) (*Template, error) {
	top, err := Document(b)
	if err != nil {
		return nil, err
	}
	t := &Template{
		Parameters: mapOrEmpty(top["Parameters"]),
		Conditions: mapOrEmpty(top["Conditions"]),
		Globals:    mapOrEmpty(top["Globals"]),
		Outputs:    mapOrEmpty(top["Outputs"]),
		Resources:  map[string]Resource{},
	}
	res, ok := top["Resources"].(map[string]any)
	if !ok {
		return nil, errors.New("template: no Resources mapping")
	}
	for id, raw := range res {
		r, err := resource(raw)
		if err != nil {
			return nil, fmt.Errorf("template: resource %s: %w", id, err)
		}
		t.Resources[id] = r
	}
	return t, nil
}

// resource reads one resource, keeping its values as parsed (an int stays
// an int).
func resource(raw any) (Resource, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return Resource{}, errors.New("not a mapping")
	}
	var r Resource
	for k, v := range m {
		var ok bool
		switch k {
		case "Type":
			r.Type, ok = v.(string)
		case "Condition":
			r.Condition, ok = v.(string)
		case "DeletionPolicy":
			r.DeletionPolicy, ok = v.(string)
		case "UpdateReplacePolicy":
			r.UpdateReplacePolicy, ok = v.(string)
		case "Metadata":
			r.Metadata, ok = v.(map[string]any)
		case "Properties":
			r.Properties, ok = v.(map[string]any)
		case "DependsOn":
			ok = true
		default:
			return Resource{}, fmt.Errorf("unknown resource attribute %q", k)
		}
		if !ok {
			return Resource{}, fmt.Errorf("%s is not of the right kind: %v", k, v)
		}
	}
	if r.Type == "" {
		return Resource{}, errors.New("no Type")
	}
	if r.Properties == nil {
		r.Properties = map[string]any{}
	}
	return r, nil
}

// OfType returns the logical ids of the resources of the given type.
func (t *Template) OfType(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	return ids
}

// Decode converts a generic value (a section or property of the template)
// into v through JSON, so typed structs can be used for the parts a test
// checks. Unknown fields are ignored.
func Decode(in, v any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	return dec.Decode(v)
}

// Path walks nested mappings by key and returns the value found, or nil.
func Path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Statements calls visit with each IAM policy statement within v, at any
// depth (a role's Policies, a policy's PolicyDocument, a resource's own
// policy; a Statement may be a list or a single statement), with where it
// is (where, then the keys and indexes from v down to its Statement) and
// its index there.
func Statements(v any, where string, visit func(where string, i int, statement any)) {
	switch x := v.(type) {
	case map[string]any:
		if st, ok := x["Statement"]; ok {
			list, isList := st.([]any)
			if !isList {
				list = []any{st}
			}
			for i, s := range list {
				visit(where, i, s)
			}
		}
		for k, c := range x {
			Statements(c, where+"."+k, visit)
		}
	case []any:
		for i, c := range x {
			Statements(c, fmt.Sprintf("%s[%d]", where, i), visit)
		}
	}
}

// RefTarget returns the logical id (or parameter) of a {"Ref": x} value.
func RefTarget(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	s, ok := m["Ref"].(string)
	return s, ok
}

// GetAttTarget returns the logical id and attribute of a
// {"Fn::GetAtt": [id, attr]} value.
func GetAttTarget(v any) (id, attr string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", "", false
	}
	l, isList := m["Fn::GetAtt"].([]any)
	if !isList || len(l) != 2 {
		return "", "", false
	}
	id, ok1 := l[0].(string)
	attr, ok2 := l[1].(string)
	return id, attr, ok1 && ok2
}

func mapOrEmpty(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// intrinsics maps CloudFormation's short tags to their long names.
var intrinsics = map[string]string{
	"!Ref":          "Ref",
	"!Condition":    "Condition",
	"!And":          "Fn::And",
	"!Base64":       "Fn::Base64",
	"!Cidr":         "Fn::Cidr",
	"!Equals":       "Fn::Equals",
	"!FindInMap":    "Fn::FindInMap",
	"!GetAtt":       "Fn::GetAtt",
	"!GetAZs":       "Fn::GetAZs",
	"!If":           "Fn::If",
	"!ImportValue":  "Fn::ImportValue",
	"!Join":         "Fn::Join",
	"!Not":          "Fn::Not",
	"!Or":           "Fn::Or",
	"!Select":       "Fn::Select",
	"!Split":        "Fn::Split",
	"!Sub":          "Fn::Sub",
	"!Transform":    "Fn::Transform",
	"!ToJsonString": "Fn::ToJsonString",
	"!Length":       "Fn::Length",
}

// value converts a node to a generic value, rewriting intrinsic tags.
func value(n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode {
		return value(n.Alias)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name, ok := intrinsics[n.Tag]
		if !ok {
			return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
		}
		inner := *n
		inner.Tag = ""
		if n.Kind == yaml.ScalarNode {
			inner.Tag = "!!str"
		}
		v, err := value(&inner)
		if err != nil {
			return nil, err
		}
		// !GetAtt Resource.Attribute is the short form of [Resource, Attribute].
		if name == "Fn::GetAtt" {
			if s, isStr := v.(string); isStr {
				id, attr, found := strings.Cut(s, ".")
				if !found {
					return nil, fmt.Errorf("line %d: !GetAtt %q is not Resource.Attribute", n.Line, s)
				}
				v = []any{id, attr}
			}
		}
		return map[string]any{name: v}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping key is not a scalar", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := value(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := value(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}
