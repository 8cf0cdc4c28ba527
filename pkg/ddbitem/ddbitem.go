// Package ddbitem reads DynamoDB items strictly and writes their
// attributes: an attribute that is missing or of another type is an error
// that names it, never a zero value and never a panic. attributevalue's
// decoder is lenient where a stored record must not be (it reads a number
// into a string field and NULL into anything); this package is not.
//
// A Reader records the first problem and returns zero values after it, so
// a decoder reads every attribute and checks Err once.
package ddbitem

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrInvalid marks an item that lacks an attribute or holds one of the
// wrong type. Decoders wrap it in their own error.
var ErrInvalid = errors.New("ddbitem: invalid item")

// Reader reads the attributes of one item.
type Reader struct {
	item map[string]types.AttributeValue
	err  error
}

// Read returns a Reader of item; a nil item reads as empty.
func Read(item map[string]types.AttributeValue) *Reader { return &Reader{item: item} }

// Err returns the first problem met, wrapping ErrInvalid, or nil.
func (r *Reader) Err() error { return r.err }

func (r *Reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
}

// Has reports whether the item has the attribute, of any type.
func (r *Reader) Has(name string) bool {
	_, ok := r.item[name]
	return ok
}

// S returns a required string attribute.
func (r *Reader) S(name string) string {
	v, ok := r.OptS(name)
	if !ok {
		r.fail("missing %s", name)
	}
	return v
}

// OptS returns a string attribute; ok is false when it is absent. One of
// another type is an error.
func (r *Reader) OptS(name string) (string, bool) {
	av, ok := r.item[name]
	if !ok {
		return "", false
	}
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		r.fail("%s is %s, not a string", name, kind(av))
		return "", false
	}
	return s.Value, true
}

// Int returns a required number attribute that is an int64.
func (r *Reader) Int(name string) int64 {
	v, ok := r.OptInt(name)
	if !ok {
		r.fail("missing %s", name)
	}
	return v
}

// OptInt returns a number attribute that is an int64; ok is false when it
// is absent. A fraction, an exponent or a value out of range is an error.
func (r *Reader) OptInt(name string) (int64, bool) {
	av, ok := r.item[name]
	if !ok {
		return 0, false
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		r.fail("%s is %s, not a number", name, kind(av))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		r.fail("%s: %q is not a 64-bit integer", name, n.Value)
		return 0, false
	}
	return v, true
}

// Bytes returns a required attribute stored as a string or as binary
// (Blob writes one or the other).
func (r *Reader) Bytes(name string) []byte {
	switch v := r.item[name].(type) {
	case *types.AttributeValueMemberS:
		return []byte(v.Value)
	case *types.AttributeValueMemberB:
		return v.Value
	case nil:
		r.fail("missing %s", name)
	default:
		r.fail("%s is %s, neither a string nor binary", name, kind(v))
	}
	return nil
}

// StringMap returns a map attribute whose values are all strings; ok is
// false when it is absent.
func (r *Reader) StringMap(name string) (map[string]string, bool) {
	av, ok := r.item[name]
	if !ok {
		return nil, false
	}
	m, ok := av.(*types.AttributeValueMemberM)
	if !ok {
		r.fail("%s is %s, not a map", name, kind(av))
		return nil, false
	}
	out := make(map[string]string, len(m.Value))
	for k, v := range m.Value {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			r.fail("%s.%s is %s, not a string", name, k, kind(v))
			return nil, false
		}
		out[k] = s.Value
	}
	return out, true
}

// Time returns a required RFC 3339 string attribute.
func (r *Reader) Time(name string) time.Time {
	t, ok := r.OptTime(name)
	if !ok {
		r.fail("missing %s", name)
	}
	return t
}

// OptTime returns an RFC 3339 string attribute; ok is false when it is
// absent.
func (r *Reader) OptTime(name string) (time.Time, bool) {
	s, ok := r.OptS(name)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		r.fail("%s: %q is not an RFC 3339 time", name, s)
		return time.Time{}, false
	}
	return t, true
}

// kind names an attribute value's DynamoDB type, for error messages.
func kind(av types.AttributeValue) string {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return "a string"
	case *types.AttributeValueMemberN:
		return "a number"
	case *types.AttributeValueMemberB:
		return "binary"
	case *types.AttributeValueMemberBOOL:
		return "a boolean"
	case *types.AttributeValueMemberNULL:
		return "null"
	case *types.AttributeValueMemberM:
		return "a map"
	case *types.AttributeValueMemberL:
		return "a list"
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		return "a set"
	case nil:
		return "nil"
	default:
		return fmt.Sprintf("%T", av)
	}
}

// S is a string attribute.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// N is a number attribute holding an integer.
func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// Time is an RFC 3339 string attribute, in UTC with nanoseconds.
func Time(t time.Time) types.AttributeValue { return S(t.UTC().Format(time.RFC3339Nano)) }

// StringMap is a map attribute of strings.
func StringMap(m map[string]string) types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = S(v)
	}
	return &types.AttributeValueMemberM{Value: out}
}

// Blob stores bytes as a string when they are UTF-8 (readable in the
// console) and as binary otherwise; Reader.Bytes reads either back.
func Blob(b []byte) types.AttributeValue {
	if utf8.Valid(b) {
		return S(string(b))
	}
	return &types.AttributeValueMemberB{Value: b}
}
