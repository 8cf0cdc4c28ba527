package template

// noValue is what a resolved branch of AWS::NoValue leaves: the property
// or list item it stands for is dropped.
type noValue struct{}

// Resolve returns the template as CloudFormation would deploy it when the
// conditions named in values have those values: each Fn::If on one of
// them replaced by its branch (a branch of AWS::NoValue drops the property
// or list item), each resource whose Condition is one of them and false
// dropped. Fn::If on other conditions, and resources on other conditions,
// are left as they are, for the tests that look at both of their
// branches. The template itself is not changed.
func (t *Template) Resolve(values map[string]bool) *Template {
	out := &Template{
		Parameters: t.Parameters, Conditions: t.Conditions, Globals: resolve(t.Globals, values).(map[string]any),
		Outputs: resolve(t.Outputs, values).(map[string]any), Resources: map[string]Resource{},
	}
	for id, r := range t.Resources {
		if on, known := values[r.Condition]; known && !on {
			continue
		}
		r.Properties = resolve(r.Properties, values).(map[string]any)
		if r.Metadata != nil {
			r.Metadata = resolve(r.Metadata, values).(map[string]any)
		}
		out.Resources[id] = r
	}
	return out
}

func resolve(v any, values map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		if branches, ok := x["Fn::If"].([]any); ok && len(x) == 1 && len(branches) == 3 {
			if name, ok := branches[0].(string); ok {
				if on, known := values[name]; known {
					b := branches[2]
					if on {
						b = branches[1]
					}
					if ref, _ := RefTarget(b); ref == "AWS::NoValue" {
						return noValue{}
					}
					return resolve(b, values)
				}
			}
		}
		m := make(map[string]any, len(x))
		for k, c := range x {
			if r := resolve(c, values); r != (noValue{}) {
				m[k] = r
			}
		}
		return m
	case []any:
		l := make([]any, 0, len(x))
		for _, c := range x {
			if r := resolve(c, values); r != (noValue{}) {
				l = append(l, r)
			}
		}
		return l
	}
	return v
}
