// Package canon writes the canonical form of a JSON document, the bytes
// pkg/idem fingerprints: members sorted, whitespace removed, numbers as
// written. It is strict, so that different JSON values never share a form.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Fingerprint returns the hex SHA-256 of raw's canonical form; a document
// JSON refuses is an error.
func Fingerprint(raw []byte) (string, error) {
	c, err := JSON(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// maxCanonicalDepth bounds the nesting JSON accepts. Sorting an
// object moves its members once per enclosing object, so the bound also
// bounds the work per input byte.
const maxCanonicalDepth = 128

// JSON re-encodes a JSON document (RFC 8259) with object members
// sorted by name and whitespace removed. Numbers keep their literal text
// (no float rounding); strings are re-escaped as encoding/json does
// without HTML escaping, so the output is what earlier versions produced
// for the same document.
//
// It is strict, so that two documents that are different JSON texts never
// share a canonical form: it refuses invalid UTF-8, escapes of lone UTF-16
// surrogates, duplicate member names (escaped or not), anything after the
// value but whitespace, and nesting deeper than 128. It reads the
// document in place, without decoding it into Go values: its memory is
// about the document's size.
func JSON(raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, errors.New("idem: canonical json: invalid UTF-8")
	}
	c := canonicalizer{in: raw, out: make([]byte, 0, len(raw))}
	c.space()
	if err := c.value(0); err != nil {
		return nil, fmt.Errorf("idem: canonical json: %w", err)
	}
	if c.space(); c.pos < len(c.in) {
		return nil, fmt.Errorf("idem: canonical json: data after the value at offset %d", c.pos)
	}
	return c.out, nil
}

// canonicalizer writes the canonical form of in to out in one pass.
// Objects are written in input order, then their members are moved into
// order in place; members, keys and scratch are stacks shared by every
// level, so an object costs no allocation of its own.
type canonicalizer struct {
	in, out []byte
	pos     int
	members []member // of the objects being read, innermost last
	keys    []byte   // the decoded names of members
	str     []byte   // the string being decoded
	scratch []byte   // an object's members while they are reordered
}

// member is one object member: its decoded name in keys, and its
// canonical `"name":value` text in out.
type member struct{ key0, key1, out0, out1 int }

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{c.pos}, args...)...)
}

func (c *canonicalizer) space() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// expect consumes b, after optional whitespace.
func (c *canonicalizer) expect(b byte) error {
	c.space()
	if c.pos >= len(c.in) || c.in[c.pos] != b {
		return c.errorf("want %q", b)
	}
	c.pos++
	return nil
}

// peek reports whether the next byte after whitespace is b, consuming it
// if so.
func (c *canonicalizer) peek(b byte) bool {
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == b {
		c.pos++
		return true
	}
	return false
}

func (c *canonicalizer) value(depth int) error {
	c.space()
	if c.pos >= len(c.in) {
		return c.errorf("unexpected end")
	}
	switch b := c.in[c.pos]; {
	case b == '{' || b == '[':
		if depth >= maxCanonicalDepth {
			return c.errorf("nested deeper than %d", maxCanonicalDepth)
		}
		if b == '{' {
			return c.object(depth + 1)
		}
		return c.array(depth + 1)
	case b == '"':
		if err := c.string(); err != nil {
			return err
		}
		c.out = appendString(c.out, c.str)
		return nil
	case b == '-' || ('0' <= b && b <= '9'):
		return c.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
			c.pos += len(lit)
			c.out = append(c.out, lit...)
			return nil
		}
	}
	return c.errorf("unexpected %q", c.in[c.pos])
}

func (c *canonicalizer) array(depth int) error {
	c.pos++ // [
	c.out = append(c.out, '[')
	if c.peek(']') {
		c.out = append(c.out, ']')
		return nil
	}
	for {
		if err := c.value(depth); err != nil {
			return err
		}
		if c.peek(']') {
			c.out = append(c.out, ']')
			return nil
		}
		if err := c.expect(','); err != nil {
			return err
		}
		c.out = append(c.out, ',')
	}
}

func (c *canonicalizer) object(depth int) error {
	c.pos++ // {
	c.out = append(c.out, '{')
	start, base, keyBase := len(c.out), len(c.members), len(c.keys)
	defer func() { c.members, c.keys = c.members[:base], c.keys[:keyBase] }()
	if !c.peek('}') {
		for {
			if c.space(); c.pos >= len(c.in) || c.in[c.pos] != '"' {
				return c.errorf("want a member name")
			}
			m := member{key0: len(c.keys), out0: len(c.out)}
			if err := c.string(); err != nil {
				return err
			}
			c.keys = append(c.keys, c.str...)
			m.key1 = len(c.keys)
			c.out = appendString(c.out, c.str)
			if err := c.expect(':'); err != nil {
				return err
			}
			c.out = append(c.out, ':')
			if err := c.value(depth); err != nil {
				return err
			}
			m.out1 = len(c.out)
			c.members = append(c.members, m)
			if c.peek('}') {
				break
			}
			if err := c.expect(','); err != nil {
				return err
			}
			c.out = append(c.out, ',')
		}
	}
	ms := c.members[base:]
	byKey := func(a, b member) int { return bytes.Compare(c.keys[a.key0:a.key1], c.keys[b.key0:b.key1]) }
	if !slices.IsSortedFunc(ms, byKey) {
		slices.SortFunc(ms, byKey)
		c.scratch = append(c.scratch[:0], c.out[start:]...)
		c.out = c.out[:start]
		for i, m := range ms {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.scratch[m.out0-start:m.out1-start]...)
		}
	}
	for i := 1; i < len(ms); i++ {
		if byKey(ms[i-1], ms[i]) == 0 {
			return fmt.Errorf("duplicate member %q", c.keys[ms[i].key0:ms[i].key1])
		}
	}
	c.out = append(c.out, '}')
	return nil
}

// string decodes the string at pos into c.str. The input is valid UTF-8
// (JSON checked it); escapes must be too.
func (c *canonicalizer) string() error {
	c.pos++ // "
	c.str = c.str[:0]
	for {
		if c.pos >= len(c.in) {
			return c.errorf("unterminated string")
		}
		switch b := c.in[c.pos]; {
		case b == '"':
			c.pos++
			return nil
		case b < 0x20:
			return c.errorf("control character %#x in a string", b)
		case b != '\\':
			c.str = append(c.str, b)
			c.pos++
			continue
		}
		if c.pos+1 >= len(c.in) {
			return c.errorf("unterminated escape")
		}
		esc := c.in[c.pos+1]
		c.pos += 2
		switch esc {
		case '"', '\\', '/':
			c.str = append(c.str, esc)
		case 'b':
			c.str = append(c.str, '\b')
		case 'f':
			c.str = append(c.str, '\f')
		case 'n':
			c.str = append(c.str, '\n')
		case 'r':
			c.str = append(c.str, '\r')
		case 't':
			c.str = append(c.str, '\t')
		case 'u':
			r, ok := c.hex4()
			if !ok {
				return c.errorf(`bad \u escape`)
			}
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if bytes.HasPrefix(c.in[c.pos:], []byte(`\u`)) {
					c.pos += 2
					r2, ok = c.hex4()
				}
				if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
					return c.errorf("lone UTF-16 surrogate")
				}
			}
			c.str = utf8.AppendRune(c.str, r)
		default:
			return c.errorf("bad escape %q", esc)
		}
	}
}

func (c *canonicalizer) hex4() (rune, bool) {
	if c.pos+4 > len(c.in) {
		return 0, false
	}
	var r rune
	for _, b := range c.in[c.pos : c.pos+4] {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b -= 'a' - 10
		case 'A' <= b && b <= 'F':
			b -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(b)
	}
	c.pos += 4
	return r, true
}

// number copies a number's literal text, checking its grammar.
func (c *canonicalizer) number() error {
	start := c.pos
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && '0' <= c.in[c.pos] && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.in[c.pos] == '-' {
		c.pos++
	}
	switch {
	case c.pos < len(c.in) && c.in[c.pos] == '0':
		c.pos++
	case digits() == 0:
		return c.errorf("bad number")
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if digits() == 0 {
			return c.errorf("bad number")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return c.errorf("bad number")
		}
	}
	c.out = append(c.out, c.in[start:c.pos]...)
	return nil
}

// appendString writes s (valid UTF-8) as a JSON string the way
// encoding/json does without HTML escaping, so fingerprints stored by
// earlier versions still match: \b \f \n \r \t " and \ as short escapes,
// other control characters and U+2028, U+2029 as \u00xx and \u20xx.
func appendString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			i++
			switch {
			case b == '"' || b == '\\':
				out = append(out, '\\', b)
			case b >= 0x20:
				out = append(out, b)
			case b == '\b':
				out = append(out, '\\', 'b')
			case b == '\f':
				out = append(out, '\\', 'f')
			case b == '\n':
				out = append(out, '\\', 'n')
			case b == '\r':
				out = append(out, '\\', 'r')
			case b == '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == '\u2028' || r == '\u2029' {
			out = append(out, '\\', 'u', '2', '0', '2', hex[r&0xF])
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return append(out, '"')
}
