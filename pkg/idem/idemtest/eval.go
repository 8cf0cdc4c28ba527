package idemtest

import (
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Evaluation of parsed expressions against an item, as DynamoDB
// evaluates them ("Condition and filter expressions, operators, and
// functions"; "Using update expressions"), numbers exact.

// resolve returns the value at path in it, or nil.
func resolve(it attrs, path docPath) *value {
	v := it[path[0].name]
	for _, e := range path[1:] {
		if v == nil {
			return nil
		}
		switch {
		case e.name != "" && v.t == "M":
			v = v.m[e.name]
		case e.name == "" && v.t == "L":
			if e.index >= len(v.l) {
				return nil
			}
			v = v.l[e.index]
		default:
			return nil
		}
	}
	return v
}

// operandValue evaluates a condition's operand; nil when it has no value
// (a missing attribute, the size of a type without one).
func operandValue(it attrs, o *operand) *value {
	switch {
	case o.value != nil:
		return o.value
	case o.fn == "size":
		v := resolve(it, o.args[0].path)
		if v == nil {
			return nil
		}
		var n int
		switch v.t {
		case "S":
			n = utf8.RuneCountInString(v.s)
		case "B":
			n = len(v.s)
		case "SS", "NS", "BS":
			n = len(v.set)
		case "L":
			n = len(v.l)
		case "M":
			n = len(v.m)
		default:
			return nil
		}
		return &value{t: "N", s: strconv.Itoa(n)}
	default:
		return resolve(it, o.path)
	}
}

// eval evaluates a condition against it (nil: the item does not exist).
func (c *cond) eval(it attrs) bool {
	switch c.op {
	case "AND":
		return c.subs[0].eval(it) && c.subs[1].eval(it)
	case "OR":
		return c.subs[0].eval(it) || c.subs[1].eval(it)
	case "NOT":
		return !c.subs[0].eval(it)
	case "attribute_exists":
		return resolve(it, c.args[0].path) != nil
	case "attribute_not_exists":
		return resolve(it, c.args[0].path) == nil
	case "attribute_type":
		v, t := resolve(it, c.args[0].path), operandValue(it, c.args[1])
		return v != nil && t != nil && t.t == "S" && v.t == t.s
	case "begins_with":
		v, p := operandValue(it, c.args[0]), operandValue(it, c.args[1])
		return v != nil && p != nil && v.t == p.t && (v.t == "S" || v.t == "B") && len(v.s) >= len(p.s) && v.s[:len(p.s)] == p.s
	case "contains":
		v, x := operandValue(it, c.args[0]), operandValue(it, c.args[1])
		if v == nil || x == nil {
			return false
		}
		switch v.t {
		case "S", "B":
			return x.t == v.t && containsString(v.s, x.s)
		case "SS", "NS", "BS":
			return x.t == v.t[:1] && x.setHas(v, x.s)
		case "L":
			return slices.ContainsFunc(v.l, func(e *value) bool { return equal(e, x) })
		}
		return false
	case "BETWEEN":
		v, lo, hi := operandValue(it, c.args[0]), operandValue(it, c.args[1]), operandValue(it, c.args[2])
		a, okA := compare(v, lo)
		b, okB := compare(v, hi)
		return okA && okB && a >= 0 && b <= 0
	case "IN":
		v := operandValue(it, c.args[0])
		for _, o := range c.args[1:] {
			if equal(v, operandValue(it, o)) {
				return true
			}
		}
		return false
	}
	a, b := operandValue(it, c.args[0]), operandValue(it, c.args[1])
	switch c.op {
	case "=":
		return equal(a, b)
	case "<>":
		return a == nil || b == nil || !equal(a, b)
	}
	n, ok := compare(a, b)
	if !ok {
		return false
	}
	switch c.op {
	case "<":
		return n < 0
	case "<=":
		return n <= 0
	case ">":
		return n > 0
	case ">=":
		return n >= 0
	}
	return false
}

func containsString(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// The errors DynamoDB answers for an update that cannot apply to the
// item it meets (API Reference, TransactWriteItems, ValidationError).
var (
	errMissingOperand = invalidf("The provided expression refers to an attribute that does not exist in the item")
	errOperandType    = invalidf("An operand in the update expression has an incorrect data type")
	errBadPath        = invalidf("The document path provided in the update expression is invalid for update")
)

// setOperandValue evaluates the right side of a SET action against the
// item before the update.
func setOperandValue(it attrs, o *operand) (*value, error) {
	switch {
	case o.value != nil:
		return o.value, nil
	case o.fn == "":
		v := resolve(it, o.path)
		if v == nil {
			return nil, errMissingOperand
		}
		return v, nil
	case o.fn == "if_not_exists":
		if v := resolve(it, o.args[0].path); v != nil {
			return v, nil
		}
		return setOperandValue(it, o.args[1])
	}
	a, err := setOperandValue(it, o.args[0])
	if err != nil {
		return nil, err
	}
	b, err := setOperandValue(it, o.args[1])
	if err != nil {
		return nil, err
	}
	switch o.fn {
	case "list_append":
		if a.t != "L" || b.t != "L" {
			return nil, errOperandType
		}
		return &value{t: "L", l: append(append([]*value{}, a.l...), b.l...)}, nil
	default: // + or -
		if a.t != "N" || b.t != "N" {
			return nil, errOperandType
		}
		s, err := addNumbers(a.s, b.s, o.fn == "-")
		if err != nil {
			return nil, err
		}
		return &value{t: "N", s: s}, nil
	}
}

// apply computes the item an update makes of old (nil: absent; key is
// then the new item's start).
func (u *updateExpr) apply(old, key attrs) (attrs, error) {
	// Every value is computed on the item before the update.
	sets := make([]*value, len(u.set))
	for i, a := range u.set {
		v, err := setOperandValue(old, a.val)
		if err != nil {
			return nil, err
		}
		sets[i] = v.clone()
	}
	next := old.clone()
	if next == nil {
		next = key.clone()
	}
	for i, a := range u.set {
		if err := setPath(next, a.path, sets[i]); err != nil {
			return nil, err
		}
	}
	// Removals from one list go from its last index down, so each index
	// names the element it named before the update.
	removals := slices.Clone(u.remove)
	sort.SliceStable(removals, func(i, j int) bool {
		a, b := removals[i], removals[j]
		if len(a) == len(b) && a[:len(a)-1].overlaps(b[:len(b)-1]) {
			return a[len(a)-1].index > b[len(b)-1].index
		}
		return false
	})
	for _, p := range removals {
		removePath(next, p)
	}
	for _, a := range u.add {
		cur := resolve(next, a.path)
		v := a.val.value
		switch {
		case cur == nil:
			if err := setPath(next, a.path, v.clone()); err != nil {
				return nil, err
			}
		case cur.t != v.t:
			return nil, errOperandType
		case v.t == "N":
			s, err := addNumbers(cur.s, v.s, false)
			if err != nil {
				return nil, err
			}
			cur.s = s
		default:
			for _, e := range v.set {
				if !v.setHas(cur, e) {
					cur.set = append(cur.set, e)
				}
			}
		}
	}
	for _, a := range u.delete {
		cur := resolve(next, a.path)
		v := a.val.value
		switch {
		case cur == nil:
		case cur.t != v.t:
			return nil, errOperandType
		default:
			cur.set = slices.DeleteFunc(cur.set, func(e string) bool { return cur.setHas(v, e) })
			if len(cur.set) == 0 {
				removePath(next, a.path)
			}
		}
	}
	return next, nil
}

// setPath writes v at path; the path's parent must exist.
func setPath(it attrs, path docPath, v *value) error {
	if len(path) == 1 {
		it[path[0].name] = v
		return nil
	}
	parent := resolve(it, path[:len(path)-1])
	last := path[len(path)-1]
	switch {
	case parent == nil:
		return errBadPath
	case last.name != "" && parent.t == "M":
		parent.m[last.name] = v
	case last.name == "" && parent.t == "L":
		if last.index >= len(parent.l) {
			parent.l = append(parent.l, v)
		} else {
			parent.l[last.index] = v
		}
	default:
		return errBadPath
	}
	return nil
}

// removePath removes the value at path, if any.
func removePath(it attrs, path docPath) {
	if len(path) == 1 {
		delete(it, path[0].name)
		return
	}
	parent := resolve(it, path[:len(path)-1])
	last := path[len(path)-1]
	switch {
	case parent == nil:
	case last.name != "" && parent.t == "M":
		delete(parent.m, last.name)
	case last.name == "" && parent.t == "L" && last.index < len(parent.l):
		parent.l = slices.Delete(parent.l, last.index, last.index+1)
	}
}

// project keeps the paths of it, as a projection expression does: nested
// paths keep their parents' shape, the elements a list keeps in order.
func project(it attrs, paths []docPath) attrs {
	if it == nil {
		return nil
	}
	root := &projNode{}
	for _, p := range paths {
		v := resolve(it, p)
		if v == nil {
			continue
		}
		n := root
		for _, e := range p {
			n = n.child(e)
		}
		n.leaf = v
	}
	out := attrs{}
	for name, n := range root.keys {
		if v := n.build(resolve(it, docPath{{name: name}})); v != nil {
			out[name] = v
		}
	}
	return out
}

type projNode struct {
	leaf  *value
	keys  map[string]*projNode
	elems map[int]*projNode
}

func (n *projNode) child(e pathElem) *projNode {
	if e.name != "" {
		if n.keys == nil {
			n.keys = map[string]*projNode{}
		}
		if n.keys[e.name] == nil {
			n.keys[e.name] = &projNode{}
		}
		return n.keys[e.name]
	}
	if n.elems == nil {
		n.elems = map[int]*projNode{}
	}
	if n.elems[e.index] == nil {
		n.elems[e.index] = &projNode{}
	}
	return n.elems[e.index]
}

// build makes the projected value of src from the node.
func (n *projNode) build(src *value) *value {
	if n.leaf != nil {
		return n.leaf.clone()
	}
	switch {
	case src == nil:
		return nil
	case n.keys != nil && src.t == "M":
		out := &value{t: "M", m: map[string]*value{}}
		for k, c := range n.keys {
			if v := c.build(src.m[k]); v != nil {
				out.m[k] = v
			}
		}
		return out
	case n.elems != nil && src.t == "L":
		idx := make([]int, 0, len(n.elems))
		for i := range n.elems {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		out := &value{t: "L", l: []*value{}}
		for _, i := range idx {
			if i < len(src.l) {
				if v := n.elems[i].build(src.l[i]); v != nil {
					out.l = append(out.l, v)
				}
			}
		}
		return out
	}
	return nil
}
