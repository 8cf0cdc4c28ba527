package money

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Money is an exact, non-negative amount in the minor unit of its currency
// (cents for EUR, yen for JPY, fils for KWD).
//
// Money is a small comparable value: pass it by value and compare with ==.
// Build it with New, Parse or one of the decoders; they all validate. The
// zero value Money{} is invalid (see IsValid).
type Money struct {
	minor    int64
	currency Currency
}

// New returns minor units of currency c. It fails with ErrValidation if minor
// is negative or c is not supported. It is the only constructor: every other
// way in ends here.
func New(minor int64, c Currency) (Money, error) {
	if !c.supported() {
		return Money{}, fmt.Errorf("%w: unsupported currency %.16q", ErrValidation, string(c))
	}
	if minor < 0 {
		return Money{}, fmt.Errorf("%w: negative amount %d %s", ErrValidation, minor, c)
	}
	return Money{minor: minor, currency: c}, nil
}

// Cents returns the amount in minor units (the wire name is price_cents,
// whatever the currency's exponent).
func (m Money) Cents() int64 { return m.minor }

// Currency returns the currency; it is "" for the zero value.
func (m Money) Currency() Currency { return m.currency }

// IsZero reports whether the amount is zero. The invalid zero value Money{}
// is also IsZero; check IsValid when that matters.
func (m Money) IsZero() bool { return m.minor == 0 }

// IsValid reports whether m has a supported currency and a non-negative
// amount. It is true for every Money returned without error by this package
// and false for the zero value Money{}.
func (m Money) IsValid() bool { return m.currency.supported() && m.minor >= 0 }

// String formats m as the decimal amount with exactly Digits() fraction
// digits, a space and the ISO code: "19.99 EUR", "1999 JPY", "1.500 KWD".
// An invalid Money prints its raw minor units followed by "<invalid>", so the
// zero value prints "0 <invalid>".
func (m Money) String() string {
	if !m.IsValid() {
		return strconv.FormatInt(m.minor, 10) + " <invalid>"
	}
	return m.decimal() + " " + string(m.currency)
}

// decimal formats the amount of a valid m with exactly Digits() fraction
// digits; Parse accepts its output.
func (m Money) decimal() string {
	s := strconv.FormatInt(m.minor, 10)
	d := m.currency.Digits()
	if d == 0 {
		return s
	}
	if len(s) <= d { // pad so there is at least one integer digit: 5 -> "0.05"
		s = strings.Repeat("0", d+1-len(s)) + s
	}
	return s[:len(s)-d] + "." + s[len(s)-d:]
}

// Add returns m+o. Both must be valid and in the same currency; a sum beyond
// math.MaxInt64 fails with ErrOverflow.
func (m Money) Add(o Money) (Money, error) {
	if err := m.sameCurrency(o); err != nil {
		return Money{}, err
	}
	if m.minor > math.MaxInt64-o.minor {
		return Money{}, fmt.Errorf("%w: %s + %s", ErrOverflow, m, o)
	}
	return Money{minor: m.minor + o.minor, currency: m.currency}, nil
}

// Sub returns m-o. Both must be valid and in the same currency; a negative
// result fails with ErrValidation because Money is never negative.
func (m Money) Sub(o Money) (Money, error) {
	if err := m.sameCurrency(o); err != nil {
		return Money{}, err
	}
	if o.minor > m.minor {
		return Money{}, fmt.Errorf("%w: %s - %s is negative", ErrValidation, m, o)
	}
	return Money{minor: m.minor - o.minor, currency: m.currency}, nil
}

// Mul returns m*n, for example a unit price times a quantity. A negative n
// fails with ErrValidation, a product beyond math.MaxInt64 with ErrOverflow.
func (m Money) Mul(n int64) (Money, error) {
	if err := m.validate(); err != nil {
		return Money{}, err
	}
	if n < 0 {
		return Money{}, fmt.Errorf("%w: negative multiplier %d", ErrValidation, n)
	}
	hi, lo := bits.Mul64(uint64(m.minor), uint64(n))
	if hi != 0 || lo > math.MaxInt64 {
		return Money{}, fmt.Errorf("%w: %s * %d", ErrOverflow, m, n)
	}
	return Money{minor: int64(lo), currency: m.currency}, nil
}

// Cmp returns -1, 0 or +1 as m is less than, equal to or greater than o.
// Amounts in different currencies are not comparable: ErrCurrencyMismatch.
func (m Money) Cmp(o Money) (int, error) {
	if err := m.sameCurrency(o); err != nil {
		return 0, err
	}
	return cmp.Compare(m.minor, o.minor), nil
}

func (m Money) validate() error {
	if !m.IsValid() {
		return fmt.Errorf("%w: operation on invalid Money %s", ErrValidation, m)
	}
	return nil
}

func (m Money) sameCurrency(o Money) error {
	if err := m.validate(); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	if m.currency != o.currency {
		return fmt.Errorf("%w: %s and %s", ErrCurrencyMismatch, m.currency, o.currency)
	}
	return nil
}
