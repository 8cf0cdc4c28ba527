// Package must holds package check's comparisons, each stopping the test
// (t.FailNow) when it fails, for what the rest of a test needs to hold.
package must

import (
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/internal/check"
)

// Equal requires that got equals want: deeply, byte slices by their bytes.
func Equal(t testing.TB, want, got any, msg ...any) {
	t.Helper()
	if !check.Equal(t, want, got, msg...) {
		t.FailNow()
	}
}

// EqualValues requires that got equals want, or equals it once converted
// to want's type (or want to got's): 3 and int64(3) are equal values.
func EqualValues(t testing.TB, want, got any, msg ...any) {
	t.Helper()
	if !check.EqualValues(t, want, got, msg...) {
		t.FailNow()
	}
}

// NotEqual requires that got differs from want.
func NotEqual(t testing.TB, want, got any, msg ...any) {
	t.Helper()
	if !check.NotEqual(t, want, got, msg...) {
		t.FailNow()
	}
}

// Zero requires that v is its type's zero value.
func Zero(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !check.Zero(t, v, msg...) {
		t.FailNow()
	}
}

// NotZero requires that v is not its type's zero value.
func NotZero(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !check.NotZero(t, v, msg...) {
		t.FailNow()
	}
}

// True requires that v is true.
func True(t testing.TB, v bool, msg ...any) {
	t.Helper()
	if !check.True(t, v, msg...) {
		t.FailNow()
	}
}

// False requires that v is false.
func False(t testing.TB, v bool, msg ...any) {
	t.Helper()
	if !check.False(t, v, msg...) {
		t.FailNow()
	}
}

// NoError requires that err is nil.
func NoError(t testing.TB, err error, msg ...any) {
	t.Helper()
	if !check.NoError(t, err, msg...) {
		t.FailNow()
	}
}

// Error requires that err is not nil.
func Error(t testing.TB, err error, msg ...any) {
	t.Helper()
	if !check.Error(t, err, msg...) {
		t.FailNow()
	}
}

// ErrorIs requires that errors.Is(err, target).
func ErrorIs(t testing.TB, err, target error, msg ...any) {
	t.Helper()
	if !check.ErrorIs(t, err, target, msg...) {
		t.FailNow()
	}
}

// NotErrorIs requires that !errors.Is(err, target).
func NotErrorIs(t testing.TB, err, target error, msg ...any) {
	t.Helper()
	if !check.NotErrorIs(t, err, target, msg...) {
		t.FailNow()
	}
}

// ErrorAs requires that errors.As(err, target), which it sets.
func ErrorAs(t testing.TB, err error, target any, msg ...any) {
	t.Helper()
	if !check.ErrorAs(t, err, target, msg...) {
		t.FailNow()
	}
}

// ErrorContains requires that err is not nil and its message contains sub.
func ErrorContains(t testing.TB, err error, sub string, msg ...any) {
	t.Helper()
	if !check.ErrorContains(t, err, sub, msg...) {
		t.FailNow()
	}
}

// EqualError requires that err is not nil and its message is text.
func EqualError(t testing.TB, err error, text string, msg ...any) {
	t.Helper()
	if !check.EqualError(t, err, text, msg...) {
		t.FailNow()
	}
}

// Empty requires that v is empty: nil, its zero value, of length 0.
func Empty(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !check.Empty(t, v, msg...) {
		t.FailNow()
	}
}

// NotEmpty requires that v is not empty.
func NotEmpty(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !check.NotEmpty(t, v, msg...) {
		t.FailNow()
	}
}

// Len requires that v (an array, slice, map, channel or string) has n
// elements.
func Len(t testing.TB, v any, n int, msg ...any) {
	t.Helper()
	if !check.Len(t, v, n, msg...) {
		t.FailNow()
	}
}

// Nil requires that v is nil.
func Nil(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !check.Nil(t, v, msg...) {
		t.FailNow()
	}
}

// NotNil requires that v is not nil.
func NotNil(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !check.NotNil(t, v, msg...) {
		t.FailNow()
	}
}

// Contains requires that in (a string, map, array or slice) holds elem: a
// substring, a key, an element.
func Contains(t testing.TB, in, elem any, msg ...any) {
	t.Helper()
	if !check.Contains(t, in, elem, msg...) {
		t.FailNow()
	}
}

// NotContains requires that in (a string, map, array or slice) does not
// hold elem.
func NotContains(t testing.TB, in, elem any, msg ...any) {
	t.Helper()
	if !check.NotContains(t, in, elem, msg...) {
		t.FailNow()
	}
}

// JSONEq requires that two JSON texts hold the same value, whatever their
// spacing and the order of their objects' members.
func JSONEq(t testing.TB, want, got string, msg ...any) {
	t.Helper()
	if !check.JSONEq(t, want, got, msg...) {
		t.FailNow()
	}
}

// Greater requires that a > b.
func Greater(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if !check.Greater(t, a, b, msg...) {
		t.FailNow()
	}
}

// GreaterOrEqual requires that a >= b.
func GreaterOrEqual(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if !check.GreaterOrEqual(t, a, b, msg...) {
		t.FailNow()
	}
}

// Less requires that a < b.
func Less(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if !check.Less(t, a, b, msg...) {
		t.FailNow()
	}
}

// LessOrEqual requires that a <= b.
func LessOrEqual(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if !check.LessOrEqual(t, a, b, msg...) {
		t.FailNow()
	}
}

// Positive requires that a number is above zero.
func Positive(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !check.Positive(t, v, msg...) {
		t.FailNow()
	}
}

// IsType requires that v has the type of example.
func IsType(t testing.TB, example, v any, msg ...any) {
	t.Helper()
	if !check.IsType(t, example, v, msg...) {
		t.FailNow()
	}
}

// WithinDuration requires that two times are at most delta apart.
func WithinDuration(t testing.TB, want, got time.Time, delta time.Duration, msg ...any) {
	t.Helper()
	if !check.WithinDuration(t, want, got, delta, msg...) {
		t.FailNow()
	}
}

// ElementsMatch requires that two arrays or slices hold the same
// elements, each as often, in any order.
func ElementsMatch(t testing.TB, want, got any, msg ...any) {
	t.Helper()
	if !check.ElementsMatch(t, want, got, msg...) {
		t.FailNow()
	}
}

// PanicsWithValue requires that f panics, with want as the panic's value.
func PanicsWithValue(t testing.TB, want any, f func(), msg ...any) {
	t.Helper()
	if !check.PanicsWithValue(t, want, f, msg...) {
		t.FailNow()
	}
}
