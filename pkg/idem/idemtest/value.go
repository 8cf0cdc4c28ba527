package idemtest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// value is one DynamoDB attribute value, decoded: the store evaluates
// conditions and updates on these, exactly, and stores them.
type value struct {
	t string // S, N, B, BOOL, NULL, M, L, SS, NS, BS
	// s is a string's text, a number in DynamoDB's canonical form (no
	// leading or trailing zeros: canonicalNumber), a binary's raw bytes.
	s string
	b bool              // BOOL
	m map[string]*value // M
	l []*value          // L
	// set holds a set's members as s holds a scalar's, in the order sent.
	set []string
}

// invalid is a request DynamoDB refuses with ValidationException.
type invalid struct{ msg string }

func (e *invalid) Error() string { return e.msg }

func invalidf(format string, args ...any) *invalid {
	return &invalid{msg: fmt.Sprintf(format, args...)}
}

// decodeValue decodes one attribute value in DynamoDB JSON and checks it
// as DynamoDB does: exactly one type, numbers within DynamoDB's range and
// precision, sets neither empty nor with duplicates.
func decodeValue(raw json.RawMessage) (*value, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, invalidf("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	if len(obj) == 0 {
		return nil, invalidf("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	if len(obj) > 1 {
		return nil, invalidf("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
	}
	for t, body := range obj {
		v := &value{t: t}
		switch t {
		case "S":
			if err := json.Unmarshal(body, &v.s); err != nil {
				return nil, invalidf("Invalid attribute value type")
			}
		case "N":
			if err := json.Unmarshal(body, &v.s); err != nil {
				return nil, invalidf("Invalid attribute value type")
			}
			d, err := parseNumber(v.s)
			if err != nil {
				return nil, err
			}
			v.s = canonicalNumber(d)
		case "B":
			var b []byte
			if err := json.Unmarshal(body, &b); err != nil {
				return nil, invalidf("Invalid attribute value type")
			}
			v.s = string(b)
		case "BOOL":
			if err := json.Unmarshal(body, &v.b); err != nil {
				return nil, invalidf("Invalid attribute value type")
			}
		case "NULL":
			var null bool
			if err := json.Unmarshal(body, &null); err != nil || !null {
				return nil, invalidf("One or more parameter values were invalid: Null attribute value types must have the value of true")
			}
		case "M":
			var m map[string]json.RawMessage
			if err := json.Unmarshal(body, &m); err != nil {
				return nil, invalidf("Invalid attribute value type")
			}
			v.m = make(map[string]*value, len(m))
			for k, e := range m {
				ev, err := decodeValue(e)
				if err != nil {
					return nil, err
				}
				v.m[k] = ev
			}
		case "L":
			var l []json.RawMessage
			if err := json.Unmarshal(body, &l); err != nil {
				return nil, invalidf("Invalid attribute value type")
			}
			v.l = make([]*value, len(l))
			for i, e := range l {
				ev, err := decodeValue(e)
				if err != nil {
					return nil, err
				}
				v.l[i] = ev
			}
		case "SS", "NS", "BS":
			if t == "BS" {
				var bs [][]byte
				if err := json.Unmarshal(body, &bs); err != nil {
					return nil, invalidf("Invalid attribute value type")
				}
				for _, b := range bs {
					v.set = append(v.set, string(b))
				}
			} else if err := json.Unmarshal(body, &v.set); err != nil {
				return nil, invalidf("Invalid attribute value type")
			}
			if err := checkSet(v); err != nil {
				return nil, err
			}
			if t == "NS" {
				for i, e := range v.set {
					d, _ := parseNumber(e) // checkSet parsed it
					v.set[i] = canonicalNumber(d)
				}
			}
		default:
			return nil, invalidf("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
		}
		return v, nil
	}
	panic("unreachable")
}

var setNames = map[string]string{"SS": "string", "NS": "number", "BS": "binary"}

// checkSet refuses an empty set and one with duplicates, as DynamoDB
// does ("Supported data types and naming rules": sets must not be empty,
// their values must be unique).
func checkSet(v *value) error {
	if len(v.set) == 0 {
		return invalidf("One or more parameter values were invalid: An %s set  may not be empty", setNames[v.t])
	}
	seen := make(map[string]bool, len(v.set))
	for _, e := range v.set {
		k := e
		if v.t == "NS" {
			d, err := parseNumber(e)
			if err != nil {
				return err
			}
			k = canonicalNumber(d)
		}
		if seen[k] {
			return invalidf("One or more parameter values were invalid: Input collection [%s] contains duplicates.", strings.Join(v.set, ", "))
		}
		seen[k] = true
	}
	return nil
}

// MarshalJSON encodes the value in DynamoDB JSON.
func (v *value) MarshalJSON() ([]byte, error) {
	var body any
	switch v.t {
	case "S", "N":
		body = v.s
	case "B":
		body = []byte(v.s)
	case "BOOL":
		body = v.b
	case "NULL":
		body = true
	case "M":
		body = v.m
	case "L":
		body = v.l
	case "SS", "NS":
		body = v.set
	case "BS":
		bs := make([][]byte, len(v.set))
		for i, e := range v.set {
			bs[i] = []byte(e)
		}
		body = bs
	}
	return json.Marshal(map[string]any{v.t: body})
}

// attrs is a decoded item, key or ExpressionAttributeValues map.
type attrs map[string]*value

// decodeAttrs decodes an item or key map.
func decodeAttrs(it item) (attrs, error) {
	out := make(attrs, len(it))
	for k, raw := range it {
		v, err := decodeValue(raw)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// raw re-encodes a decoded item in DynamoDB JSON.
func (a attrs) raw() item {
	if a == nil {
		return nil
	}
	out := make(item, len(a))
	for k, v := range a {
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return out
}

func (a attrs) clone() attrs {
	if a == nil {
		return nil
	}
	out := make(attrs, len(a))
	for k, v := range a {
		out[k] = v.clone()
	}
	return out
}

func (v *value) clone() *value {
	c := *v
	if v.m != nil {
		c.m = make(map[string]*value, len(v.m))
		for k, e := range v.m {
			c.m[k] = e.clone()
		}
	}
	if v.l != nil {
		c.l = make([]*value, len(v.l))
		for i, e := range v.l {
			c.l[i] = e.clone()
		}
	}
	if v.set != nil {
		c.set = append([]string(nil), v.set...)
	}
	return &c
}

// The size rules of "DynamoDB item sizes and formats" (Developer Guide,
// CapacityUnitCalculations.html): an item is the sum of its attribute
// names' and values' lengths; strings and binaries count their bytes,
// numbers 1 byte per two significant digits plus 1, null and booleans 1
// byte, lists and maps 3 bytes plus 1 byte per element plus the elements
// (a map's element with its name).

// size is the item's size in bytes.
func (a attrs) size() int {
	n := 0
	for k, v := range a {
		n += len(k) + v.size()
	}
	return n
}

// size is the value's size in bytes, without an attribute name.
func (v *value) size() int {
	switch v.t {
	case "S", "B":
		return len(v.s)
	case "N":
		return numberSize(v.s)
	case "BOOL", "NULL":
		return 1
	case "M":
		n := 3
		for k, e := range v.m {
			n += 1 + len(k) + e.size()
		}
		return n
	case "L":
		n := 3
		for _, e := range v.l {
			n += 1 + e.size()
		}
		return n
	case "SS", "BS":
		n := 0
		for _, e := range v.set {
			n += len(e)
		}
		return n
	case "NS":
		n := 0
		for _, e := range v.set {
			n += numberSize(e)
		}
		return n
	}
	return 0
}

func numberSize(s string) int {
	d, err := parseNumber(s)
	if err != nil {
		return len(s)
	}
	digits := 1
	if !d.IsZero() {
		var r apd.Decimal
		r.Reduce(d)
		digits = int(r.NumDigits())
	}
	return (digits+1)/2 + 1
}

// equal is DynamoDB's equality: same type and value, numbers by value,
// sets regardless of order.
func equal(a, b *value) bool {
	if a == nil || b == nil || a.t != b.t {
		return false
	}
	switch a.t {
	case "S", "B":
		return a.s == b.s
	case "N":
		return compareNumbers(a.s, b.s) == 0
	case "BOOL":
		return a.b == b.b
	case "NULL":
		return true
	case "M":
		if len(a.m) != len(b.m) {
			return false
		}
		for k, e := range a.m {
			if !equal(e, b.m[k]) {
				return false
			}
		}
		return true
	case "L":
		if len(a.l) != len(b.l) {
			return false
		}
		for i := range a.l {
			if !equal(a.l[i], b.l[i]) {
				return false
			}
		}
		return true
	case "SS", "NS", "BS":
		if len(a.set) != len(b.set) {
			return false
		}
		for _, e := range a.set {
			if !a.setHas(b, e) {
				return false
			}
		}
		return true
	}
	return false
}

// setHas reports whether set s holds member e (e of a set of a's type).
func (a *value) setHas(s *value, e string) bool {
	for _, x := range s.set {
		if a.t == "NS" && compareNumbers(x, e) == 0 || a.t != "NS" && x == e {
			return true
		}
	}
	return false
}

// compare orders two scalars of one type (S, N or B); ok is false for
// values DynamoDB does not order against each other.
func compare(a, b *value) (c int, ok bool) {
	if a == nil || b == nil || a.t != b.t {
		return 0, false
	}
	switch a.t {
	case "S", "B":
		return strings.Compare(a.s, b.s), true
	case "N":
		return compareNumbers(a.s, b.s), true
	}
	return 0, false
}

// String is the value in DynamoDB JSON, for messages.
func (v *value) String() string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
