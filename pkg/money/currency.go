package money

import (
	"fmt"
	"maps"
	"slices"
)

// Currency is an ISO 4217 alphabetic currency code such as "EUR". Only the
// constants below are supported; use ParseCurrency to turn untrusted input
// into a Currency.
type Currency string

// The supported currencies.
const (
	EUR Currency = "EUR" // Euro
	USD Currency = "USD" // US dollar
	GBP Currency = "GBP" // Pound sterling
	CHF Currency = "CHF" // Swiss franc
	JPY Currency = "JPY" // Yen (no minor unit)
	SEK Currency = "SEK" // Swedish krona
	KWD Currency = "KWD" // Kuwaiti dinar (three decimals)
)

// minorUnits is the supported set and each currency's ISO 4217 minor-unit
// exponent. Adding a currency is one entry here (the constant above is a
// convenience). A test checks every entry against ISO 4217 data. It is never
// mutated.
var minorUnits = map[Currency]int{
	EUR: 2,
	USD: 2,
	GBP: 2,
	CHF: 2,
	JPY: 0,
	SEK: 2,
	KWD: 3,
}

// ParseCurrency returns the supported Currency for an exact ISO 4217 code.
// The code must already be upper case and untrimmed ("eur" and " EUR" are
// rejected) so that one currency has exactly one spelling everywhere.
// Errors wrap ErrValidation.
func ParseCurrency(code string) (Currency, error) {
	c := Currency(code)
	if !c.supported() {
		return "", fmt.Errorf("%w: unsupported currency %.16q", ErrValidation, code)
	}
	return c, nil
}

// Digits returns the ISO 4217 minor-unit exponent: 0 for JPY, 2 for EUR,
// 3 for KWD. It returns -1 for an unsupported currency.
func (c Currency) Digits() int {
	d, ok := minorUnits[c]
	if !ok {
		return -1
	}
	return d
}

func (c Currency) supported() bool {
	_, ok := minorUnits[c]
	return ok
}

// Currencies returns the supported currencies, sorted by code.
func Currencies() []Currency {
	return slices.Sorted(maps.Keys(minorUnits))
}
