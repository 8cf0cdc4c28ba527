package check_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/internal/check"
)

// recorder is a test whose failures are recorded, not reported.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

type item struct {
	Name  string
	Value *int
	tags  []string
}

type wrapped struct{ err error }

func (w wrapped) Error() string { return "wrapped: " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }

// Each comparison holds where it should, fails where it should, and its
// report says what was wanted and what came.
func TestComparisons(t *testing.T) {
	one, two := 1, 2
	var nilMap map[string]int
	var nilPtr *item
	pathErr := &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}
	for _, tc := range []struct {
		name   string
		holds  bool
		check  func(t testing.TB) bool
		report []string // what the failure's report contains
	}{
		{"Equal ints", true, func(t testing.TB) bool { return check.Equal(t, 1, 1) }, nil},
		{"Equal types differ", false, func(t testing.TB) bool { return check.Equal(t, 1, int64(1)) }, []string{"1 (int)", "1 (int64)"}},
		{"Equal bytes", true, func(t testing.TB) bool { return check.Equal(t, []byte("a"), []byte("a")) }, nil},
		{"Equal deep pointers", true, func(t testing.TB) bool {
			return check.Equal(t, &item{Name: "a", Value: &one}, &item{Name: "a", Value: &one})
		}, nil},
		{"Equal deep pointers differ", false, func(t testing.TB) bool {
			return check.Equal(t, &item{Name: "a", Value: &one, tags: []string{"x"}}, &item{Name: "a", Value: &two, tags: []string{"x"}}, "item %s", "a")
		}, []string{"not equal", "-   Value: &1,", "+   Value: &2,", "message: item a", `tags: []string{"x"}`}},
		{"Equal nil and empty slice", false, func(t testing.TB) bool { return check.Equal(t, []string(nil), []string{}) }, []string{"(nil)", "[]string{}"}},
		{"EqualValues", true, func(t testing.TB) bool { return check.EqualValues(t, 3, int64(3)) }, nil},
		{"EqualValues float", true, func(t testing.TB) bool { return check.EqualValues(t, 2.0, int32(2)) }, nil},
		{"EqualValues lossy", false, func(t testing.TB) bool { return check.EqualValues(t, 2.5, 2) }, nil},
		{"NotEqual", true, func(t testing.TB) bool { return check.NotEqual(t, "a", "b") }, nil},
		{"NotEqual fails", false, func(t testing.TB) bool { return check.NotEqual(t, "a", "a") }, []string{`"a"`}},
		{"Zero", true, func(t testing.TB) bool { return check.Zero(t, time.Duration(0)) }, nil},
		{"Zero nil map", true, func(t testing.TB) bool { return check.Zero(t, nilMap) }, nil},
		{"Zero fails", false, func(t testing.TB) bool { return check.Zero(t, 3) }, []string{"3"}},
		{"NotZero", true, func(t testing.TB) bool { return check.NotZero(t, "x") }, nil},
		{"True", true, func(t testing.TB) bool { return check.True(t, true) }, nil},
		{"False fails", false, func(t testing.TB) bool { return check.False(t, true, "flag") }, []string{"want false", "message: flag"}},
		{"NoError fails", false, func(t testing.TB) bool { return check.NoError(t, errors.New("boom")) }, []string{"boom"}},
		{"Error", true, func(t testing.TB) bool { return check.Error(t, errors.New("boom")) }, nil},
		{"ErrorIs through a wrap", true, func(t testing.TB) bool { return check.ErrorIs(t, wrapped{pathErr}, fs.ErrNotExist) }, nil},
		{"ErrorIs fails", false, func(t testing.TB) bool { return check.ErrorIs(t, wrapped{errors.New("other")}, fs.ErrNotExist) },
			[]string{"check_test.wrapped: wrapped: other", "*errors.errorString: other"}},
		{"NotErrorIs", true, func(t testing.TB) bool { return check.NotErrorIs(t, errors.New("x"), fs.ErrNotExist) }, nil},
		{"ErrorAs", true, func(t testing.TB) bool {
			var pe *fs.PathError
			return check.ErrorAs(t, wrapped{pathErr}, &pe) && pe == pathErr
		}, nil},
		{"ErrorAs fails", false, func(t testing.TB) bool {
			var pe *os.LinkError
			return check.ErrorAs(t, pathErr, &pe)
		}, []string{"no error in the chain is a *os.LinkError", "*fs.PathError: open x: file does not exist"}},
		{"ErrorContains", true, func(t testing.TB) bool { return check.ErrorContains(t, pathErr, "file does not exist") }, nil},
		{"ErrorContains nil", false, func(t testing.TB) bool { return check.ErrorContains(t, nil, "x") }, nil},
		{"EqualError", true, func(t testing.TB) bool { return check.EqualError(t, errors.New("a b"), "a b") }, nil},
		{"Empty", true, func(t testing.TB) bool { return check.Empty(t, map[string]int{}) }, nil},
		{"Empty nil pointer", true, func(t testing.TB) bool { return check.Empty(t, nilPtr) }, nil},
		{"Empty pointer to zero", true, func(t testing.TB) bool { return check.Empty(t, &item{}) }, nil},
		{"Empty string", true, func(t testing.TB) bool { return check.Empty(t, "") }, nil},
		{"Empty fails", false, func(t testing.TB) bool { return check.Empty(t, []int{1}) }, []string{"[]int{1}"}},
		{"NotEmpty", true, func(t testing.TB) bool { return check.NotEmpty(t, "x") }, nil},
		{"Len", true, func(t testing.TB) bool { return check.Len(t, map[int]int{1: 1}, 1) }, nil},
		{"Len fails", false, func(t testing.TB) bool { return check.Len(t, "abc", 2) }, []string{"want 2 elements, got 3"}},
		{"Nil", true, func(t testing.TB) bool { return check.Nil(t, nilPtr) }, nil},
		{"Nil fails", false, func(t testing.TB) bool { return check.Nil(t, 0) }, nil},
		{"NotNil", true, func(t testing.TB) bool { return check.NotNil(t, &one) }, nil},
		{"NotNil fails on a nil map", false, func(t testing.TB) bool { return check.NotNil(t, nilMap) }, nil},
		{"Contains string", true, func(t testing.TB) bool { return check.Contains(t, "hello", "ell") }, nil},
		{"Contains slice", true, func(t testing.TB) bool { return check.Contains(t, []any{1, "a"}, "a") }, nil},
		{"Contains map key", true, func(t testing.TB) bool { return check.Contains(t, map[string]int{"k": 1}, "k") }, nil},
		{"Contains fails", false, func(t testing.TB) bool { return check.Contains(t, []int{1}, 2) }, []string{"does not contain 2"}},
		{"NotContains", true, func(t testing.TB) bool { return check.NotContains(t, "hello", "z") }, nil},
		{"JSONEq", true, func(t testing.TB) bool { return check.JSONEq(t, `{"a":1,"b":[1,2]}`, `{ "b": [1, 2], "a": 1 }`) }, nil},
		{"JSONEq fails", false, func(t testing.TB) bool { return check.JSONEq(t, `{"a":1}`, `{"a":2}`) }, []string{`-   "a": 1`, `+   "a": 2`}},
		{"Greater", true, func(t testing.TB) bool { return check.Greater(t, 2, 1) }, nil},
		{"GreaterOrEqual", true, func(t testing.TB) bool { return check.GreaterOrEqual(t, 2.0, 2.0) }, nil},
		{"Less durations", true, func(t testing.TB) bool { return check.Less(t, time.Second, time.Minute) }, nil},
		{"Less fails", false, func(t testing.TB) bool { return check.Less(t, 3, 2) }, []string{"want 3 < 2"}},
		{"LessOrEqual times", true, func(t testing.TB) bool { return check.LessOrEqual(t, time.Unix(1, 0), time.Unix(1, 0)) }, nil},
		{"Less types differ", false, func(t testing.TB) bool { return check.Less(t, 1, int64(2)) }, []string{"cannot order int against int64"}},
		{"Positive", true, func(t testing.TB) bool { return check.Positive(t, int64(1)) }, nil},
		{"Positive fails", false, func(t testing.TB) bool { return check.Positive(t, 0.0) }, nil},
		{"IsType", true, func(t testing.TB) bool { return check.IsType(t, &item{}, &item{Name: "x"}) }, nil},
		{"PanicsWithValue", true, func(t testing.TB) bool { return check.PanicsWithValue(t, "boom", func() { panic("boom") }) }, nil},
		{"PanicsWithValue none", false, func(t testing.TB) bool { return check.PanicsWithValue(t, "boom", func() {}) }, []string{"got none"}},
		{"WithinDuration", true, func(t testing.TB) bool {
			return check.WithinDuration(t, time.Unix(10, 0), time.Unix(11, 0), time.Second)
		}, nil},
		{"ElementsMatch", true, func(t testing.TB) bool { return check.ElementsMatch(t, []int{1, 2, 2}, []int{2, 1, 2}) }, nil},
		{"ElementsMatch fails", false, func(t testing.TB) bool { return check.ElementsMatch(t, []int{1, 2}, []int{2, 2}) },
			[]string{"missing: []interface {}{\n        1,", "extra:   []interface {}{\n        2,"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			held := tc.check(r)
			if held != tc.holds {
				t.Fatalf("held %t, want %t; report: %q", held, tc.holds, r.failures)
			}
			if held != (len(r.failures) == 0) {
				t.Fatalf("held %t with %d failures reported", held, len(r.failures))
			}
			for _, want := range tc.report {
				if !strings.Contains(strings.Join(r.failures, "\n"), want) {
					t.Errorf("the report does not say %q:\n%s", want, strings.Join(r.failures, "\n"))
				}
			}
		})
	}
}

// A pointer cycle is rendered once, not followed forever.
func TestFormatCycle(t *testing.T) {
	type node struct {
		Name string
		Next *node
	}
	n := &node{Name: "a"}
	n.Next = n
	got := check.Format(n)
	if !strings.Contains(got, "already shown") || strings.Count(got, `"a"`) != 1 {
		t.Errorf("Format of a cycle: %s", got)
	}
}

func TestDiff(t *testing.T) {
	got := check.Diff("a\nb\nc", "a\nx\nc")
	want := "  a\n- b\n+ x\n  c"
	if got != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
	}
}
