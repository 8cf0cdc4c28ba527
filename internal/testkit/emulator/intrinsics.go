package emulator

import (
	"errors"
	"fmt"
	"strings"
)

// Stack is a deployed stack as CloudFormation resolves intrinsic functions
// against it.
type Stack struct {
	// Parameters are the stack's parameter values (DescribeStacks).
	Parameters map[string]string
	// Region, AccountID, Partition, Name and URLSuffix are the pseudo
	// parameters AWS::Region, AWS::AccountId, AWS::Partition,
	// AWS::StackName and AWS::URLSuffix.
	Region, AccountID, Partition, Name, URLSuffix string
	// Conditions are the processed template's Conditions section.
	Conditions map[string]any
	// Resources are the stack's resources by logical id.
	Resources map[string]Resource
}

// Resource is one deployed resource.
type Resource struct {
	// Type is its resource type, PhysicalID what Ref returns for it.
	Type, PhysicalID string
}

// ErrUnsupported reports an intrinsic function, or an attribute of a
// resource type, that Resolve does not evaluate: extend it rather than
// guess.
var ErrUnsupported = errors.New("emulator: unsupported")

// noValue is what Ref AWS::NoValue resolves to: the key or list element
// that holds it is removed.
type noValue struct{}

// Resolve returns v with every intrinsic function evaluated (Ref, Fn::GetAtt
// of a function's Arn, Fn::Sub, Fn::Join, Fn::If, Fn::Select, and the
// condition functions inside Fn::If) and AWS::NoValue removed.
func (s *Stack) Resolve(v any) (any, error) {
	r, err := s.resolve(v)
	if err != nil {
		return nil, err
	}
	if _, none := r.(noValue); none {
		return nil, nil
	}
	return r, nil
}

func (s *Stack) resolve(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for k, arg := range v {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return s.function(k, arg)
				}
			}
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			r, err := s.resolve(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if _, none := r.(noValue); !none {
				out[k] = r
			}
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(v))
		for i, e := range v {
			r, err := s.resolve(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if _, none := r.(noValue); !none {
				out = append(out, r)
			}
		}
		return out, nil
	}
	return v, nil
}

func (s *Stack) function(name string, arg any) (any, error) {
	switch name {
	case "Ref":
		ref, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("emulator: Ref of %v: not a name", arg)
		}
		return s.ref(ref)
	case "Fn::GetAtt":
		id, attr, err := getAttArgs(arg)
		if err != nil {
			return nil, err
		}
		return s.getAtt(id, attr)
	case "Fn::Sub":
		return s.sub(arg)
	case "Fn::Join":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, fmt.Errorf("Fn::Join of %v: want [delimiter, [values]]", arg)
		}
		sep, ok := l[0].(string)
		if !ok {
			return nil, fmt.Errorf("Fn::Join delimiter %v: not a string", l[0])
		}
		values, err := s.resolve(l[1])
		if err != nil {
			return nil, err
		}
		list, ok := values.([]any)
		if !ok {
			return nil, fmt.Errorf("Fn::Join values %v: not a list", values)
		}
		parts := make([]string, len(list))
		for i, p := range list {
			if parts[i], ok = p.(string); !ok {
				return nil, fmt.Errorf("Fn::Join value %v: not a string", p)
			}
		}
		return strings.Join(parts, sep), nil
	case "Fn::Select":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, fmt.Errorf("Fn::Select of %v: want [index, [values]]", arg)
		}
		index, err := s.resolve(l[0])
		if err != nil {
			return nil, err
		}
		values, err := s.resolve(l[1])
		if err != nil {
			return nil, err
		}
		var i int
		if _, err := fmt.Sscan(fmt.Sprint(index), &i); err != nil {
			return nil, fmt.Errorf("Fn::Select index %v: %w", index, err)
		}
		list, ok := values.([]any)
		if !ok || i < 0 || i >= len(list) {
			return nil, fmt.Errorf("Fn::Select %d of %v: out of range", i, values)
		}
		return list[i], nil
	case "Fn::If":
		l, ok := arg.([]any)
		if !ok || len(l) != 3 {
			return nil, fmt.Errorf("Fn::If of %v: want [condition, then, else]", arg)
		}
		cond, ok := l[0].(string)
		if !ok {
			return nil, fmt.Errorf("Fn::If condition %v: not a name", l[0])
		}
		holds, err := s.condition(cond)
		if err != nil {
			return nil, err
		}
		if holds {
			return s.resolve(l[1])
		}
		return s.resolve(l[2])
	}
	return nil, fmt.Errorf("%w: intrinsic function %s", ErrUnsupported, name)
}

func (s *Stack) ref(name string) (any, error) {
	switch name {
	case "AWS::NoValue":
		return noValue{}, nil
	case "AWS::Region":
		return s.Region, nil
	case "AWS::AccountId":
		return s.AccountID, nil
	case "AWS::Partition":
		return s.Partition, nil
	case "AWS::StackName":
		return s.Name, nil
	case "AWS::URLSuffix":
		return s.URLSuffix, nil
	}
	if v, ok := s.Parameters[name]; ok {
		return v, nil
	}
	if r, ok := s.Resources[name]; ok {
		return r.PhysicalID, nil
	}
	return nil, fmt.Errorf("emulator: Ref %s: no such parameter, pseudo parameter or resource", name)
}

func getAttArgs(arg any) (id, attr string, err error) {
	switch a := arg.(type) {
	case string:
		if id, attr, ok := strings.Cut(a, "."); ok {
			return id, attr, nil
		}
	case []any:
		if len(a) == 2 {
			id, ok1 := a[0].(string)
			attr, ok2 := a[1].(string)
			if ok1 && ok2 {
				return id, attr, nil
			}
		}
	}
	return "", "", fmt.Errorf("Fn::GetAtt of %v: want [resource, attribute]", arg)
}

// getAtt evaluates the attributes an HTTP API's Body uses: a function's
// Arn.
func (s *Stack) getAtt(id, attr string) (any, error) {
	r, ok := s.Resources[id]
	if !ok {
		return nil, fmt.Errorf("Fn::GetAtt %s.%s: no such resource", id, attr)
	}
	if r.Type == "AWS::Lambda::Function" && attr == "Arn" {
		return fmt.Sprintf("arn:%s:lambda:%s:%s:function:%s", s.Partition, s.Region, s.AccountID, r.PhysicalID), nil
	}
	return nil, fmt.Errorf("%w: Fn::GetAtt %s.%s of a %s", ErrUnsupported, id, attr, r.Type)
}

func (s *Stack) sub(arg any) (any, error) {
	format, vars := arg, map[string]any{}
	if l, ok := arg.([]any); ok {
		if len(l) != 2 {
			return nil, fmt.Errorf("Fn::Sub of %v: want string or [string, {variables}]", arg)
		}
		format = l[0]
		m, ok := l[1].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("Fn::Sub variables %v: not a mapping", l[1])
		}
		for k, v := range m {
			r, err := s.resolve(v)
			if err != nil {
				return nil, err
			}
			vars[k] = r
		}
	}
	f, ok := format.(string)
	if !ok {
		return nil, fmt.Errorf("Fn::Sub of %v: not a string", format)
	}
	var b strings.Builder
	for {
		i := strings.Index(f, "${")
		if i < 0 {
			b.WriteString(f)
			return b.String(), nil
		}
		b.WriteString(f[:i])
		end := strings.Index(f[i:], "}")
		if end < 0 {
			return nil, fmt.Errorf("Fn::Sub %q: unclosed ${", format)
		}
		name := f[i+2 : i+end]
		f = f[i+end+1:]
		if strings.HasPrefix(name, "!") {
			// ${!Literal} writes ${Literal}.
			b.WriteString("${" + name[1:] + "}")
			continue
		}
		var v any
		var err error
		if given, ok := vars[name]; ok {
			v = given
		} else if id, attr, dotted := strings.Cut(name, "."); dotted && !strings.HasPrefix(name, "AWS::") {
			v, err = s.getAtt(id, attr)
		} else {
			v, err = s.ref(name)
		}
		if err != nil {
			return nil, fmt.Errorf("Fn::Sub %q: %w", format, err)
		}
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("Fn::Sub %q: ${%s} is %v, not a string", format, name, v)
		}
		b.WriteString(str)
	}
}

// subVariables returns the ${...} names of an Fn::Sub string, ${!...}
// literals left out.
func subVariables(f string) []string {
	var names []string
	for {
		i := strings.Index(f, "${")
		if i < 0 {
			return names
		}
		end := strings.Index(f[i:], "}")
		if end < 0 {
			return names
		}
		if name := f[i+2 : i+end]; !strings.HasPrefix(name, "!") {
			names = append(names, name)
		}
		f = f[i+end+1:]
	}
}

// condition evaluates a named condition of the stack.
func (s *Stack) condition(name string) (bool, error) {
	c, ok := s.Conditions[name]
	if !ok {
		return false, fmt.Errorf("condition %s: not in the template", name)
	}
	holds, err := s.conditionValue(c)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	return holds, nil
}

// conditionValue evaluates a condition function: Fn::Equals, Fn::And,
// Fn::Or, Fn::Not or a Condition reference.
func (s *Stack) conditionValue(c any) (bool, error) {
	m, ok := c.(map[string]any)
	if !ok || len(m) != 1 {
		return false, fmt.Errorf("%v: not a condition function", c)
	}
	for name, arg := range m {
		if name == "Condition" {
			ref, ok := arg.(string)
			if !ok {
				return false, fmt.Errorf("emulator: Condition of %v: not a name", arg)
			}
			return s.condition(ref)
		}
		l, ok := arg.([]any)
		if !ok {
			return false, fmt.Errorf("%s of %v: not a list", name, arg)
		}
		switch name {
		case "Fn::Equals":
			if len(l) != 2 {
				return false, fmt.Errorf("Fn::Equals of %v: want two values", l)
			}
			a, err := s.resolve(l[0])
			if err != nil {
				return false, err
			}
			b, err := s.resolve(l[1])
			if err != nil {
				return false, err
			}
			// CloudFormation compares the values as strings.
			return fmt.Sprint(a) == fmt.Sprint(b), nil
		case "Fn::Not":
			if len(l) != 1 {
				return false, fmt.Errorf("Fn::Not of %v: want one condition", l)
			}
			holds, err := s.conditionValue(l[0])
			return !holds, err
		case "Fn::And", "Fn::Or":
			and := name == "Fn::And"
			for _, e := range l {
				holds, err := s.conditionValue(e)
				if err != nil {
					return false, err
				}
				if holds != and {
					return holds, nil
				}
			}
			return and, nil
		}
		return false, fmt.Errorf("%w: condition function %s", ErrUnsupported, name)
	}
	return false, nil
}
