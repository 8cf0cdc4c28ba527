package money

import (
	"errors"
	"slices"
	"testing"

	"github.com/bojanz/currency"

	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// Our table must never drift from ISO 4217: check each entry against an
// independent data set.
func TestMinorUnitsMatchISO4217(t *testing.T) {
	must.NotEmpty(t, minorUnits)
	for c, d := range minorUnits {
		want, ok := currency.GetDigits(string(c))
		must.True(t, ok, "%s is not an ISO 4217 code", c)
		check.Equal(t, int(want), d, "minor units of %s", c)
		check.Equal(t, int(want), c.Digits(), "Digits of %s", c)
	}
}

func TestConstantsAreSupported(t *testing.T) {
	all := []Currency{EUR, USD, GBP, CHF, JPY, SEK, KWD}
	check.Len(t, minorUnits, len(all), "every table entry has a constant")
	for _, c := range all {
		got, err := ParseCurrency(string(c))
		must.NoError(t, err)
		check.Equal(t, c, got)
	}
}

func TestDigits(t *testing.T) {
	for c, want := range map[Currency]int{JPY: 0, EUR: 2, USD: 2, KWD: 3, "XXX": -1, "": -1, "eur": -1} {
		check.Equal(t, want, c.Digits(), "%q", c)
	}
}

func TestParseCurrencyRejects(t *testing.T) {
	for _, code := range []string{"", "eur", "Eur", " EUR", "EUR ", "EURO", "XXX", "USD\x00", "ЕUR"} {
		_, err := ParseCurrency(code)
		check.True(t, errors.Is(err, ErrValidation), "%q: %v", code, err)
	}
}

func TestCurrenciesListsTheSupportedSetSorted(t *testing.T) {
	t.Parallel()
	got := Currencies()
	want := []Currency{CHF, EUR, GBP, JPY, KWD, SEK, USD}
	if !slices.Equal(got, want) {
		t.Fatalf("Currencies() = %v, want %v", got, want)
	}
	for _, c := range got {
		if _, err := ParseCurrency(string(c)); err != nil {
			t.Errorf("%s listed but not parseable: %v", c, err)
		}
	}
}
