package check

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Format renders a value for a failure report: its type and contents,
// pointers followed (a pointer met again is named, not followed),
// unexported fields included, map keys in order, one field or element a
// line for anything composite, so two renderings diff line by line.
func Format(v any) string {
	if v == nil {
		return "nil"
	}
	f := &formatter{seen: map[uintptr]bool{}}
	f.value(reflect.ValueOf(v), 0, true)
	return f.b.String()
}

type formatter struct {
	b    strings.Builder
	seen map[uintptr]bool
}

func (f *formatter) line(depth int) {
	f.b.WriteByte('\n')
	f.b.WriteString(strings.Repeat("  ", depth))
}

// value writes v; typed says whether to name its type (an element of a
// slice or map whose type says it already is not named again).
func (f *formatter) value(v reflect.Value, depth int, typed bool) {
	if !v.IsValid() {
		f.b.WriteString("nil")
		return
	}
	if v.CanInterface() {
		switch x := v.Interface().(type) {
		case time.Time:
			f.b.WriteString(x.Format(time.RFC3339Nano))
			return
		case time.Duration:
			f.b.WriteString(x.String())
			return
		case []byte:
			if x == nil {
				f.b.WriteString("[]byte(nil)")
			} else {
				f.b.WriteString("[]byte(" + strconv.Quote(string(x)) + ")")
			}
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			f.b.WriteString("(" + v.Type().String() + ")(nil)")
			return
		}
		if f.seen[v.Pointer()] {
			fmt.Fprintf(&f.b, "(%s)(%#x, already shown)", v.Type(), v.Pointer())
			return
		}
		f.seen[v.Pointer()] = true
		defer delete(f.seen, v.Pointer())
		f.b.WriteByte('&')
		f.value(v.Elem(), depth, true)
	case reflect.Interface:
		if v.IsNil() {
			f.b.WriteString("nil")
			return
		}
		f.value(v.Elem(), depth, true)
	case reflect.Struct:
		if typed {
			f.b.WriteString(v.Type().String())
		}
		f.b.WriteByte('{')
		n := 0
		for i := range v.NumField() {
			fv := v.Field(i)
			if fv.IsZero() {
				continue // zero fields say nothing; a struct of many is short
			}
			n++
			f.line(depth + 1)
			f.b.WriteString(v.Type().Field(i).Name + ": ")
			f.value(fv, depth+1, true)
			f.b.WriteByte(',')
		}
		if n > 0 {
			f.line(depth)
		}
		f.b.WriteByte('}')
	case reflect.Map:
		if typed {
			f.b.WriteString(v.Type().String())
		}
		if v.IsNil() {
			f.b.WriteString("(nil)")
			return
		}
		keys := v.MapKeys()
		texts := make([]string, len(keys))
		for i, k := range keys {
			texts[i] = Format(formatInterface(k))
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return texts[idx[a]] < texts[idx[b]] })
		f.b.WriteByte('{')
		for _, i := range idx {
			f.line(depth + 1)
			f.b.WriteString(texts[i] + ": ")
			f.value(v.MapIndex(keys[i]), depth+1, v.Type().Elem().Kind() == reflect.Interface)
			f.b.WriteByte(',')
		}
		if len(keys) > 0 {
			f.line(depth)
		}
		f.b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if typed {
			f.b.WriteString(v.Type().String())
		}
		if v.Kind() == reflect.Slice && v.IsNil() {
			f.b.WriteString("(nil)")
			return
		}
		f.b.WriteByte('{')
		elemTyped := v.Type().Elem().Kind() == reflect.Interface
		if simple(v.Type().Elem()) {
			for i := range v.Len() {
				if i > 0 {
					f.b.WriteString(", ")
				}
				f.value(v.Index(i), depth+1, elemTyped)
			}
			f.b.WriteByte('}')
			return
		}
		for i := range v.Len() {
			f.line(depth + 1)
			f.value(v.Index(i), depth+1, elemTyped)
			f.b.WriteByte(',')
		}
		if v.Len() > 0 {
			f.line(depth)
		}
		f.b.WriteByte('}')
	case reflect.String:
		if typed && v.Type() != reflect.TypeFor[string]() {
			f.b.WriteString(v.Type().String() + "(" + strconv.Quote(v.String()) + ")")
			return
		}
		f.b.WriteString(strconv.Quote(v.String()))
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if v.IsNil() {
			f.b.WriteString("(" + v.Type().String() + ")(nil)")
			return
		}
		fmt.Fprintf(&f.b, "(%s)(%#x)", v.Type(), v.Pointer())
	default:
		text := fmt.Sprint(formatInterface(v))
		if typed && v.Type().PkgPath() != "" {
			text = v.Type().String() + "(" + text + ")"
		}
		f.b.WriteString(text)
	}
}

// simple reports whether values of t fit on one line.
func simple(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	}
	return false
}

// formatInterface is v's value, also for an unexported field's (which
// reflect will not hand out): its kind's value, rebuilt.
func formatInterface(v reflect.Value) any {
	if v.CanInterface() {
		return v.Interface()
	}
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Complex64, reflect.Complex128:
		return v.Complex()
	case reflect.String:
		return v.String()
	}
	return fmt.Sprintf("<%s>", v.Type())
}

// Diff is a line diff of two texts: lines only in want start with "-",
// lines only in got with "+", the lines they share with " ". It is ""
// for texts too long to diff (over 2000 lines together).
func Diff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	if len(a)+len(b) > 2000 {
		return ""
	}
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + a[i] + "\n")
			i++
		default:
			out.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return strings.TrimRight(out.String(), "\n")
}
