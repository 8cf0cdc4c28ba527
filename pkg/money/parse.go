package money

import (
	"fmt"
	"math"
)

// maxParseLen bounds Parse input so hostile strings cost nothing; 32 bytes is
// far more than the 19 digits an int64 can hold plus a point.
const maxParseLen = 32

// Parse converts a plain decimal amount such as "19.99" into Money of
// currency c, exactly (no floating point): Parse("19.99", EUR) is 1999 cents.
//
// The grammar is deliberately strict, because amounts come from API input:
//
//	amount = digit { digit } [ "." digit { digit } ]
//
// with at most c.Digits() fraction digits ("19.9" and "19.90" are fine for
// EUR, "19.999" is not; JPY takes no point at all). Leading zeros ("007.50")
// are accepted. Everything else is rejected with ErrValidation: empty input,
// a leading or trailing point ("19.", ".5"), signs, exponents, NaN/Inf,
// spaces, thousands separators, non-ASCII digits and input longer than 32
// bytes. An amount beyond math.MaxInt64 minor units fails with an error that
// wraps both ErrOverflow and ErrValidation.
func Parse(amount string, c Currency) (Money, error) {
	d := c.Digits()
	if d < 0 {
		return Money{}, fmt.Errorf("%w: unsupported currency %.16q", ErrValidation, string(c))
	}
	if len(amount) > maxParseLen {
		return Money{}, fmt.Errorf("%w: amount longer than %d bytes", ErrValidation, maxParseLen)
	}
	var (
		v        int64
		overflow bool
		ndigits  int  // digits seen in the current part
		frac     = -1 // fraction digits seen; -1 before the point
	)
	for i := 0; i < len(amount); i++ {
		ch := amount[i]
		switch {
		case ch >= '0' && ch <= '9':
			ndigits++
			if frac >= 0 {
				frac++
				if frac > d {
					return Money{}, fmt.Errorf("%w: %q has more than %d fraction digits for %s", ErrValidation, amount, d, c)
				}
			}
			v, overflow = mulAdd10(v, ch-'0', overflow)
		case ch == '.' && frac < 0 && d > 0:
			if ndigits == 0 {
				return Money{}, fmt.Errorf("%w: %q has no integer digits", ErrValidation, amount)
			}
			frac, ndigits = 0, 0
		default:
			return Money{}, fmt.Errorf("%w: %q is not a plain decimal amount for %s", ErrValidation, amount, c)
		}
	}
	if ndigits == 0 {
		return Money{}, fmt.Errorf("%w: %q is not a plain decimal amount for %s", ErrValidation, amount, c)
	}
	for range d - max(frac, 0) { // scale to minor units: "19.9" EUR -> 1990
		v, overflow = mulAdd10(v, 0, overflow)
	}
	if overflow {
		return Money{}, fmt.Errorf("%w: %w: %q %s exceeds int64 minor units", ErrValidation, ErrOverflow, amount, c)
	}
	return New(v, c)
}

// mulAdd10 returns v*10+digit, latching overflow instead of wrapping so the
// caller can finish validating the syntax before reporting it.
func mulAdd10(v int64, digit byte, overflow bool) (int64, bool) {
	if overflow || v > (math.MaxInt64-int64(digit))/10 {
		return 0, true
	}
	return v*10 + int64(digit), false
}
