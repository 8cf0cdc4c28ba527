package money_test

import (
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
	"github.com/idemlambda/idemlambda/pkg/money"
)

func TestParse(t *testing.T) {
	ok := []struct {
		in   string
		c    money.Currency
		want int64
	}{
		{"19.99", money.EUR, 1999},
		{"19.9", money.EUR, 1990},
		{"19.90", money.EUR, 1990},
		{"19", money.EUR, 1900},
		{"0", money.EUR, 0},
		{"0.00", money.EUR, 0},
		{"0.05", money.USD, 5},
		{"007.50", money.EUR, 750},
		{"1999", money.JPY, 1999},
		{"1.5", money.KWD, 1500},
		{"1.500", money.KWD, 1500},
		{"0.001", money.KWD, 1},
		{"92233720368547758.07", money.EUR, math.MaxInt64},
		{"9223372036854775807", money.JPY, math.MaxInt64},
		{"92233720368547758", money.EUR, 9223372036854775800},
		{"9223372036854775.807", money.KWD, math.MaxInt64},
		{"00000000000000000000000000019.99", money.EUR, 1999}, // exactly 32 bytes
	}
	for _, tt := range ok {
		m, err := money.Parse(tt.in, tt.c)
		must.NoError(t, err, "Parse(%q, %s)", tt.in, tt.c)
		check.Equal(t, mustNew(t, tt.want, tt.c), m, "Parse(%q, %s)", tt.in, tt.c)
	}

	bad := []struct {
		in       string
		c        money.Currency
		overflow bool
	}{
		{"", money.EUR, false},
		{"19.999", money.EUR, false},
		{"1.5", money.JPY, false},
		{"1.", money.JPY, false},
		{"19.", money.EUR, false},
		{".5", money.EUR, false},
		{".", money.EUR, false},
		{"1.2.3", money.EUR, false},
		{"1..2", money.EUR, false},
		{"-1", money.EUR, false},
		{"+1", money.EUR, false},
		{"-0", money.EUR, false},
		{"1e3", money.EUR, false},
		{"1E3", money.JPY, false},
		{"0x10", money.EUR, false},
		{"NaN", money.EUR, false},
		{"Inf", money.EUR, false},
		{"+Inf", money.EUR, false},
		{"infinity", money.EUR, false},
		{" 1", money.EUR, false},
		{"1 ", money.EUR, false},
		{"1 000", money.EUR, false},
		{"1,000", money.EUR, false},
		{"1_000", money.EUR, false},
		{"19,99", money.EUR, false},
		{"١٢", money.EUR, false}, // Arabic-Indic digits
		{"１２", money.EUR, false}, // full-width digits
		{"12\x00", money.EUR, false},
		{"1.99", "XXX", false},
		{"1.99", "", false},
		{"000000000000000000000000000019.99", money.EUR, false}, // 33 bytes
		{"92233720368547758.08", money.EUR, true},
		{"9223372036854775808", money.JPY, true},
		{"9223372036854775.808", money.KWD, true},
		{"92233720368547759", money.EUR, true}, // fits as a number, not in cents
		{"99999999999999999999999999999999", money.JPY, true},
		{"99999999999999999999999999999.9x", money.EUR, false}, // syntax beats overflow
	}
	for _, tt := range bad {
		m, err := money.Parse(tt.in, tt.c)
		check.ErrorIs(t, err, money.ErrValidation, "Parse(%q, %s)", tt.in, tt.c)
		if tt.overflow {
			check.ErrorIs(t, err, money.ErrOverflow, "Parse(%q, %s)", tt.in, tt.c)
		}
		check.Equal(t, money.Money{}, m)
	}
}

// Property: the decimal part of String parses back to the same Money.
func TestPropertyParseStringRoundTrip(t *testing.T) {
	r := newRand(t)
	for range 10000 {
		m := mustNew(t, randMinor(r), currencies[r.IntN(len(currencies))])
		amount, code, ok := strings.Cut(m.String(), " ")
		must.True(t, ok)
		must.Equal(t, string(m.Currency()), code)
		back, err := money.Parse(amount, m.Currency())
		must.NoError(t, err, "Parse(%q)", amount)
		must.Equal(t, m, back)
	}
}

// refDecimal is the grammar Parse documents, as a regexp per digit count.
var refDecimal = []*regexp.Regexp{
	regexp.MustCompile(`^[0-9]+$`),
	regexp.MustCompile(`^[0-9]+(\.[0-9]{1})?$`),
	regexp.MustCompile(`^[0-9]+(\.[0-9]{1,2})?$`),
	regexp.MustCompile(`^[0-9]+(\.[0-9]{1,3})?$`),
}

// refParse is an independent, slow model of Parse using math/big: it returns
// the minor units, whether the syntax is valid and whether the value fits.
func refParse(s string, d int) (minor int64, syntaxOK, fits bool) {
	if len(s) > 32 || !refDecimal[d].MatchString(s) {
		return 0, false, false
	}
	intPart, frac, _ := strings.Cut(s, ".")
	frac += strings.Repeat("0", d-len(frac))
	v, _ := new(big.Int).SetString(intPart+frac, 10)
	if !v.IsInt64() {
		return 0, true, false
	}
	return v.Int64(), true, true
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"19.99", "19.9", "0", "007.50", "1.500", "19.", ".5", "-1", "1e3", "NaN",
		" 1", "١", "92233720368547758.07", "92233720368547758.08", "9223372036854775807", strings.Repeat("9", 33)} {
		for i := range currencies {
			f.Add(s, uint8(i))
		}
	}
	f.Add("1", uint8(255)) // unsupported currency
	f.Fuzz(func(t *testing.T, s string, ci uint8) {
		c := money.Currency("XXX")
		if int(ci) < len(currencies) {
			c = currencies[ci]
		}
		m, err := money.Parse(s, c)
		if c.Digits() < 0 {
			must.ErrorIs(t, err, money.ErrValidation)
			return
		}
		want, syntaxOK, fits := refParse(s, c.Digits())
		switch {
		case !syntaxOK:
			must.ErrorIs(t, err, money.ErrValidation, "Parse(%q, %s)", s, c)
			must.Equal(t, money.Money{}, m)
			return
		case !fits:
			must.ErrorIs(t, err, money.ErrOverflow, "Parse(%q, %s)", s, c)
			must.ErrorIs(t, err, money.ErrValidation, "Parse(%q, %s)", s, c)
			return
		}
		must.NoError(t, err, "Parse(%q, %s)", s, c)
		must.True(t, m.IsValid())
		must.Equal(t, want, m.Cents(), "Parse(%q, %s)", s, c)
		must.Equal(t, c, m.Currency())
		amount, _, _ := strings.Cut(m.String(), " ")
		back, err := money.Parse(amount, c)
		must.NoError(t, err)
		must.Equal(t, m, back)
	})
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := money.Parse("1234567.89", money.EUR); err != nil {
			b.Fatal(err)
		}
	}
}
