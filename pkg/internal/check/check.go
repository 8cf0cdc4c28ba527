// Package check holds the comparisons the library's tests make, on the
// standard library alone, so that no test-only module enters the
// library's module graph. Each reports a failure with t.Errorf, saying
// what was wanted and what came, with a line diff of the two for values
// that span lines, and returns whether it held; package must holds the
// same comparisons, stopping the test (t.FailNow) when one fails.
//
// The arguments come in the order the tests have always used: the
// wanted value before the one under test. A trailing message is a
// format and its arguments (or a single value of any type), added to the
// report.
package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fail reports a failed comparison.
func fail(t testing.TB, what string, msg []any) bool {
	t.Helper()
	if m := message(msg); m != "" {
		what += "\nmessage: " + m
	}
	t.Errorf("%s", what)
	return false
}

// message renders a trailing message: a format and its arguments, or
// one value.
func message(msg []any) string {
	switch len(msg) {
	case 0:
		return ""
	case 1:
		if s, ok := msg[0].(string); ok {
			return s
		}
		return fmt.Sprintf("%+v", msg[0])
	}
	if format, ok := msg[0].(string); ok {
		return fmt.Sprintf(format, msg[1:]...)
	}
	return fmt.Sprint(msg...)
}

// equal is the equality the tests mean: byte slices by their bytes (a
// nil slice equal only to nil), anything else deeply (reflect.DeepEqual).
func equal(want, got any) bool {
	if want == nil || got == nil {
		return want == got
	}
	wb, okW := want.([]byte)
	gb, okG := got.([]byte)
	if okW && okG {
		if wb == nil || gb == nil {
			return wb == nil && gb == nil
		}
		return bytes.Equal(wb, gb)
	}
	return reflect.DeepEqual(want, got)
}

// notEqual describes two values that differ.
func notEqual(head string, want, got any) string {
	w, g := Format(want), Format(got)
	if w == g && reflect.TypeOf(want) != reflect.TypeOf(got) {
		w += fmt.Sprintf(" (%T)", want)
		g += fmt.Sprintf(" (%T)", got)
	}
	out := head + "\nwant: " + indent(w) + "\ngot:  " + indent(g)
	if strings.Contains(w, "\n") || strings.Contains(g, "\n") {
		if d := Diff(w, g); d != "" {
			out += "\ndiff (-want +got):\n" + d
		}
	}
	return out
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n      ") }

// Equal checks that got equals want: deeply, byte slices by their bytes.
func Equal(t testing.TB, want, got any, msg ...any) bool {
	t.Helper()
	if equal(want, got) {
		return true
	}
	return fail(t, notEqual("not equal", want, got), msg)
}

// EqualValues checks that got equals want, or equals it once want is
// converted to got's type: 3 and int64(3) are equal values. Numbers are
// converted both ways, so a conversion that loses something (2.5 to 2)
// makes no equality.
func EqualValues(t testing.TB, want, got any, msg ...any) bool {
	t.Helper()
	if equalValues(want, got) {
		return true
	}
	return fail(t, notEqual("not equal values", want, got), msg)
}

func equalValues(want, got any) bool {
	if equal(want, got) {
		return true
	}
	if want == nil || got == nil {
		return false
	}
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	if !wv.Type().ConvertibleTo(gv.Type()) || !reflect.DeepEqual(wv.Convert(gv.Type()).Interface(), got) {
		return false
	}
	if numeric(wv.Kind()) && numeric(gv.Kind()) {
		return reflect.DeepEqual(gv.Convert(wv.Type()).Interface(), want)
	}
	return true
}

func numeric(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}

// NotEqual checks that got differs from want.
func NotEqual(t testing.TB, want, got any, msg ...any) bool {
	t.Helper()
	if !equal(want, got) {
		return true
	}
	return fail(t, "should differ, both are: "+indent(Format(got)), msg)
}

// isZero reports whether v is its type's zero value (nil included).
func isZero(v any) bool {
	return v == nil || reflect.ValueOf(v).IsZero()
}

// Zero checks that v is its type's zero value.
func Zero(t testing.TB, v any, msg ...any) bool {
	t.Helper()
	if isZero(v) {
		return true
	}
	return fail(t, "want the zero value, got: "+indent(Format(v)), msg)
}

// NotZero checks that v is not its type's zero value.
func NotZero(t testing.TB, v any, msg ...any) bool {
	t.Helper()
	if !isZero(v) {
		return true
	}
	return fail(t, fmt.Sprintf("want a value other than the zero value of %T", v), msg)
}

// True checks that v is true.
func True(t testing.TB, v bool, msg ...any) bool {
	t.Helper()
	if v {
		return true
	}
	return fail(t, "want true, got false", msg)
}

// False checks that v is false.
func False(t testing.TB, v bool, msg ...any) bool {
	t.Helper()
	if !v {
		return true
	}
	return fail(t, "want false, got true", msg)
}

// NoError checks that err is nil.
func NoError(t testing.TB, err error, msg ...any) bool {
	t.Helper()
	if err == nil {
		return true
	}
	return fail(t, fmt.Sprintf("unexpected error: %v", err), msg)
}

// Error checks that err is not nil.
func Error(t testing.TB, err error, msg ...any) bool {
	t.Helper()
	if err != nil {
		return true
	}
	return fail(t, "want an error, got nil", msg)
}

// chain lists an error and those it wraps, for a report.
func chain(err error) string {
	if err == nil {
		return "nil"
	}
	var lines []string
	var walk func(e error, depth int)
	walk = func(e error, depth int) {
		lines = append(lines, fmt.Sprintf("%s%T: %v", strings.Repeat("  ", depth), e, e))
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				walk(next, depth+1)
			}
		case interface{ Unwrap() []error }:
			for _, next := range u.Unwrap() {
				walk(next, depth+1)
			}
		}
	}
	walk(err, 0)
	return strings.Join(lines, "\n      ")
}

// ErrorIs checks that errors.Is(err, target).
func ErrorIs(t testing.TB, err, target error, msg ...any) bool {
	t.Helper()
	if errors.Is(err, target) {
		return true
	}
	return fail(t, fmt.Sprintf("error is not %T %q\ngot:  %s", target, fmt.Sprint(target), chain(err)), msg)
}

// NotErrorIs checks that !errors.Is(err, target).
func NotErrorIs(t testing.TB, err, target error, msg ...any) bool {
	t.Helper()
	if !errors.Is(err, target) {
		return true
	}
	return fail(t, fmt.Sprintf("error should not be %q\ngot:  %s", fmt.Sprint(target), chain(err)), msg)
}

// ErrorAs checks that errors.As(err, target), which it sets.
func ErrorAs(t testing.TB, err error, target any, msg ...any) bool {
	t.Helper()
	if errors.As(err, target) {
		return true
	}
	return fail(t, fmt.Sprintf("no error in the chain is a %s\ngot:  %s", reflect.TypeOf(target).Elem(), chain(err)), msg)
}

// ErrorContains checks that err is not nil and its message contains sub.
func ErrorContains(t testing.TB, err error, sub string, msg ...any) bool {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), sub) {
		return true
	}
	return fail(t, fmt.Sprintf("want an error containing %q\ngot:  %v", sub, err), msg)
}

// EqualError checks that err is not nil and its message is text.
func EqualError(t testing.TB, err error, text string, msg ...any) bool {
	t.Helper()
	if err != nil && err.Error() == text {
		return true
	}
	if err == nil {
		return fail(t, fmt.Sprintf("want the error %q, got nil", text), msg)
	}
	return fail(t, notEqual("error message not equal", text, err.Error()), msg)
}

// isEmpty reports whether v is empty: nil, a zero value, a length of 0,
// or a pointer to an empty value.
func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	return isEmptyValue(reflect.ValueOf(v))
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Chan, reflect.Map, reflect.Slice:
		return v.Len() == 0
	case reflect.Pointer:
		if v.IsNil() {
			return true
		}
		return isEmptyValue(v.Elem())
	}
	return v.IsZero()
}

// Empty checks that v is empty: nil, its zero value, of length 0.
func Empty(t testing.TB, v any, msg ...any) bool {
	t.Helper()
	if isEmpty(v) {
		return true
	}
	return fail(t, "want empty, got: "+indent(Format(v)), msg)
}

// NotEmpty checks that v is not empty.
func NotEmpty(t testing.TB, v any, msg ...any) bool {
	t.Helper()
	if !isEmpty(v) {
		return true
	}
	return fail(t, fmt.Sprintf("want a value that is not empty, got: %s", indent(Format(v))), msg)
}

// Len checks that v (an array, slice, map, channel or string) has n
// elements.
func Len(t testing.TB, v any, n int, msg ...any) bool {
	t.Helper()
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		if rv.Len() == n {
			return true
		}
		return fail(t, fmt.Sprintf("want %d elements, got %d: %s", n, rv.Len(), indent(Format(v))), msg)
	}
	return fail(t, fmt.Sprintf("%T has no length", v), msg)
}

// isNil reports whether v is nil or a nil pointer, map, slice, channel,
// function or interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// Nil checks that v is nil.
func Nil(t testing.TB, v any, msg ...any) bool {
	t.Helper()
	if isNil(v) {
		return true
	}
	return fail(t, "want nil, got: "+indent(Format(v)), msg)
}

// NotNil checks that v is not nil.
func NotNil(t testing.TB, v any, msg ...any) bool {
	t.Helper()
	if !isNil(v) {
		return true
	}
	return fail(t, fmt.Sprintf("want a value, got nil (%T)", v), msg)
}

// contains reports whether a string holds a substring, a map a key, or
// an array or slice an element; ok is false for anything else.
func contains(in, elem any) (found, ok bool) {
	rv := reflect.ValueOf(in)
	switch rv.Kind() {
	case reflect.String:
		ev := reflect.ValueOf(elem)
		return ev.Kind() == reflect.String && strings.Contains(rv.String(), ev.String()), true
	case reflect.Map:
		for _, k := range rv.MapKeys() {
			if equal(k.Interface(), elem) {
				return true, true
			}
		}
		return false, true
	case reflect.Array, reflect.Slice:
		for i := range rv.Len() {
			if equal(rv.Index(i).Interface(), elem) {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

// Contains checks that in (a string, map, array or slice) holds elem: a
// substring, a key, an element.
func Contains(t testing.TB, in, elem any, msg ...any) bool {
	t.Helper()
	found, ok := contains(in, elem)
	switch {
	case !ok:
		return fail(t, fmt.Sprintf("cannot look for %T in %T", elem, in), msg)
	case found:
		return true
	}
	return fail(t, fmt.Sprintf("%s\ndoes not contain %s", indent(Format(in)), indent(Format(elem))), msg)
}

// NotContains checks that in (a string, map, array or slice) does not
// hold elem.
func NotContains(t testing.TB, in, elem any, msg ...any) bool {
	t.Helper()
	found, ok := contains(in, elem)
	switch {
	case !ok:
		return fail(t, fmt.Sprintf("cannot look for %T in %T", elem, in), msg)
	case !found:
		return true
	}
	return fail(t, fmt.Sprintf("%s\nshould not contain %s", indent(Format(in)), indent(Format(elem))), msg)
}

// JSONEq checks that two JSON texts hold the same value, whatever their
// spacing and the order of their objects' members.
func JSONEq(t testing.TB, want, got string, msg ...any) bool {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return fail(t, fmt.Sprintf("the wanted value is not JSON (%v): %s", err, want), msg)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return fail(t, fmt.Sprintf("not JSON (%v): %s", err, got), msg)
	}
	if reflect.DeepEqual(w, g) {
		return true
	}
	wi, _ := json.MarshalIndent(w, "", "  ")
	gi, _ := json.MarshalIndent(g, "", "  ")
	return fail(t, fmt.Sprintf("JSON not equal\nwant: %s\ngot:  %s\ndiff (-want +got):\n%s", want, got, Diff(string(wi), string(gi))), msg)
}

// compare orders two values of one ordered kind (integers, unsigned
// integers, floats, strings), two times or two byte slices; ok is false
// for any other.
func compare(a, b any) (c int, ok bool) {
	if ta, isTime := a.(time.Time); isTime {
		tb, isTime := b.(time.Time)
		return ta.Compare(tb), isTime
	}
	if ba, isBytes := a.([]byte); isBytes {
		bb, isBytes := b.([]byte)
		return bytes.Compare(ba, bb), isBytes
	}
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	if !av.IsValid() || !bv.IsValid() || av.Kind() != bv.Kind() {
		return 0, false
	}
	switch av.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, y := av.Int(), bv.Int()
		return cmp(x < y, x > y), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x, y := av.Uint(), bv.Uint()
		return cmp(x < y, x > y), true
	case reflect.Float32, reflect.Float64:
		x, y := av.Float(), bv.Float()
		return cmp(x < y, x > y), true
	case reflect.String:
		return strings.Compare(av.String(), bv.String()), true
	}
	return 0, false
}

func cmp(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

// order checks a against b with the relation rel says, holds wanted of
// compare's result.
func order(t testing.TB, a, b any, rel string, holds func(int) bool, msg []any) bool {
	t.Helper()
	c, ok := compare(a, b)
	if !ok {
		return fail(t, fmt.Sprintf("cannot order %T against %T", a, b), msg)
	}
	if holds(c) {
		return true
	}
	return fail(t, fmt.Sprintf("want %s %s %s", Format(a), rel, Format(b)), msg)
}

// Greater checks that a > b.
func Greater(t testing.TB, a, b any, msg ...any) bool {
	t.Helper()
	return order(t, a, b, ">", func(c int) bool { return c > 0 }, msg)
}

// GreaterOrEqual checks that a >= b.
func GreaterOrEqual(t testing.TB, a, b any, msg ...any) bool {
	t.Helper()
	return order(t, a, b, ">=", func(c int) bool { return c >= 0 }, msg)
}

// Less checks that a < b.
func Less(t testing.TB, a, b any, msg ...any) bool {
	t.Helper()
	return order(t, a, b, "<", func(c int) bool { return c < 0 }, msg)
}

// LessOrEqual checks that a <= b.
func LessOrEqual(t testing.TB, a, b any, msg ...any) bool {
	t.Helper()
	return order(t, a, b, "<=", func(c int) bool { return c <= 0 }, msg)
}

// Positive checks that a number is above zero.
func Positive(t testing.TB, v any, msg ...any) bool {
	t.Helper()
	zero := reflect.Zero(reflect.TypeOf(v)).Interface()
	return order(t, v, zero, ">", func(c int) bool { return c > 0 }, msg)
}

// IsType checks that v has the type of example.
func IsType(t testing.TB, example, v any, msg ...any) bool {
	t.Helper()
	if reflect.TypeOf(example) == reflect.TypeOf(v) {
		return true
	}
	return fail(t, fmt.Sprintf("want a %T, got a %T: %s", example, v, indent(Format(v))), msg)
}

// PanicsWithValue checks that f panics, with want as the panic's value.
func PanicsWithValue(t testing.TB, want any, f func(), msg ...any) bool {
	t.Helper()
	panicked, got := func() (panicked bool, got any) {
		defer func() {
			if panicked {
				got = recover()
			}
		}()
		panicked = true
		f()
		panicked = false
		return
	}()
	switch {
	case !panicked:
		return fail(t, fmt.Sprintf("want a panic with %s, got none", Format(want)), msg)
	case equal(want, got):
		return true
	}
	return fail(t, notEqual("panicked with another value", want, got), msg)
}

// WithinDuration checks that two times are at most delta apart.
func WithinDuration(t testing.TB, want, got time.Time, delta time.Duration, msg ...any) bool {
	t.Helper()
	d := want.Sub(got)
	if d >= -delta && d <= delta {
		return true
	}
	return fail(t, fmt.Sprintf("%v and %v are %v apart, more than %v", want, got, d, delta), msg)
}

// ElementsMatch checks that two arrays or slices hold the same
// elements, each as often, in any order.
func ElementsMatch(t testing.TB, want, got any, msg ...any) bool {
	t.Helper()
	if isEmpty(want) && isEmpty(got) {
		return true
	}
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for _, v := range []reflect.Value{wv, gv} {
		if k := v.Kind(); k != reflect.Array && k != reflect.Slice {
			return fail(t, fmt.Sprintf("%s is not an array or a slice", v.Type()), msg)
		}
	}
	used := make([]bool, gv.Len())
	var missing, extra []any
	for i := range wv.Len() {
		found := false
		for j := range gv.Len() {
			if !used[j] && equal(wv.Index(i).Interface(), gv.Index(j).Interface()) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			missing = append(missing, wv.Index(i).Interface())
		}
	}
	for j := range gv.Len() {
		if !used[j] {
			extra = append(extra, gv.Index(j).Interface())
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return true
	}
	return fail(t, fmt.Sprintf("elements differ\nwant: %s\ngot:  %s\nmissing: %s\nextra:   %s",
		indent(Format(want)), indent(Format(got)), indent(Format(missing)), indent(Format(extra))), msg)
}
