// Package strictjson reads one JSON object the way input that decides what
// is written must be read: encoding/json alone keeps the last of two
// members with one name, matches "PRICE_CENTS" to a field tagged
// price_cents, and ignores what follows the value. Here each of those is
// an error.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The ways an input fails to be one JSON object; Object's and Unmarshal's
// errors wrap one of them, or are a *DuplicateError or *CaseError.
var (
	ErrSyntax    = errors.New("not valid JSON")
	ErrNotObject = errors.New("not a JSON object")
	ErrTrailing  = errors.New("data after the JSON object")
	ErrMissing   = errors.New("missing member")
)

// DuplicateError reports a member that appears more than once.
type DuplicateError struct{ Name string }

func (e *DuplicateError) Error() string { return fmt.Sprintf("duplicate member %.40q", e.Name) }

// CaseError reports a member whose name differs from a known one only in
// case.
type CaseError struct{ Name, Want string }

func (e *CaseError) Error() string {
	return fmt.Sprintf("member %.40q: names are case-sensitive, want %q", e.Name, e.Want)
}

// Object splits b, which must be exactly one JSON object, into its
// members, each left undecoded.
func Object(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, ErrSyntax
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, ErrNotObject
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, ErrSyntax
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, ErrSyntax
		}
		if _, dup := members[name]; dup {
			return nil, &DuplicateError{Name: name}
		}
		members[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, ErrSyntax
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrTrailing
	}
	return members, nil
}

// Unmarshal decodes the JSON object b into v after Object's checks,
// refusing a member that differs from one of fields (the names v's tags
// use) only in case. Types must match as encoding/json holds them (a float
// or a string is no int64); members v does not name are ignored.
func Unmarshal(b []byte, v any, fields ...string) error {
	_, err := unmarshal(b, v, fields)
	return err
}

// UnmarshalAll is Unmarshal with every one of fields required.
func UnmarshalAll(b []byte, v any, fields ...string) error {
	members, err := unmarshal(b, v, fields)
	if err != nil {
		return err
	}
	var missing []string
	for _, f := range fields {
		if _, ok := members[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrMissing, strings.Join(missing, ", "))
	}
	return nil
}

func unmarshal(b []byte, v any, fields []string) (map[string]json.RawMessage, error) {
	members, err := Object(b)
	if err != nil {
		return nil, err
	}
	for name := range members {
		for _, f := range fields {
			if name != f && strings.EqualFold(name, f) {
				return nil, &CaseError{Name: name, Want: f}
			}
		}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return members, nil
}
