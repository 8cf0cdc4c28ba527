package idemtest

import (
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Numbers as DynamoDB keeps them ("Supported data types and naming
// rules", Number): up to 38 significant digits, magnitudes from 1E-130 to
// 9.9999999999999999999999999999999999999E+125, arithmetic and
// comparisons exact. The store parses every number with apd and does its
// arithmetic there, never in float64.

const (
	maxDigits   = 38
	maxExponent = 125  // the largest adjusted exponent
	minExponent = -130 // the smallest
)

// arith computes sums exactly: its precision holds any two numbers in
// DynamoDB's range, so a result is rounded never and refused when it has
// more digits than DynamoDB keeps.
var arith = apd.Context{Precision: 300, MaxExponent: apd.MaxExponent, MinExponent: apd.MinExponent, Traps: apd.DefaultTraps}

// parseNumber parses a number DynamoDB would accept.
func parseNumber(s string) (*apd.Decimal, error) {
	t := strings.TrimSpace(s)
	d, _, err := apd.NewFromString(t)
	if err != nil || d.Form != apd.Finite || t != s || strings.ContainsAny(t, "xXpP_") {
		return nil, invalidf("A value provided cannot be converted into a number")
	}
	return d, checkNumber(d)
}

// checkNumber refuses a number DynamoDB cannot store.
func checkNumber(d *apd.Decimal) error {
	if d.IsZero() {
		return nil
	}
	var r apd.Decimal
	r.Reduce(d)
	digits := r.NumDigits()
	adjusted := int64(r.Exponent) + digits - 1
	switch {
	case adjusted > maxExponent:
		return invalidf("Number overflow. Attempting to store a number with magnitude larger than supported range")
	case adjusted < minExponent:
		return invalidf("Number underflow. Attempting to store a number with magnitude smaller than supported range")
	case digits > maxDigits:
		return invalidf("Attempting to store more than %d significant digits in a Number", maxDigits)
	}
	return nil
}

// canonicalNumber is a number as DynamoDB stores and returns it, however
// it was written: "In DynamoDB, numbers are represented as variable
// length. Leading and trailing zeroes are trimmed." (Developer Guide,
// "Supported data types and naming rules"), in plain notation: "1.50" is
// 1.5, "007" is 7, "-0" is 0, "1E2" is 100.
func canonicalNumber(d *apd.Decimal) string {
	if d.IsZero() {
		return "0"
	}
	var r apd.Decimal
	r.Reduce(d)
	return r.Text('f')
}

// compareNumbers orders two valid numbers by value.
func compareNumbers(a, b string) int {
	x, errA := parseNumber(a)
	y, errB := parseNumber(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return x.Cmp(y)
}

// addNumbers is a + b (b negated when sub), exact, or the error DynamoDB
// answers when the result cannot be stored.
func addNumbers(a, b string, sub bool) (string, error) {
	x, err := parseNumber(a)
	if err != nil {
		return "", err
	}
	y, err := parseNumber(b)
	if err != nil {
		return "", err
	}
	var out apd.Decimal
	if sub {
		_, err = arith.Sub(&out, x, y)
	} else {
		_, err = arith.Add(&out, x, y)
	}
	if err != nil {
		return "", invalidf("Number overflow. Attempting to store a number with magnitude larger than supported range")
	}
	if err := checkNumber(&out); err != nil {
		return "", err
	}
	return canonicalNumber(&out), nil
}
