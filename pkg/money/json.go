package money

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// Field names of the JSON and DynamoDB forms.
const (
	fieldCents    = "cents"
	fieldCurrency = "currency"
)

var (
	_ json.Marshaler   = Money{}
	_ json.Unmarshaler = (*Money)(nil)
)

// MarshalJSON encodes m as {"cents":1999,"currency":"EUR"}. The amount is an
// integer in minor units so no client ever parses a price as a float. An
// invalid Money (the zero value) fails with ErrValidation rather than
// writing something that would not decode.
func (m Money) MarshalJSON() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 48)
	b = append(b, `{"cents":`...)
	b = strconv.AppendInt(b, m.minor, 10)
	b = append(b, `,"currency":"`...)
	b = append(b, m.currency...) // supported codes are plain ASCII letters
	b = append(b, `"}`...)
	return b, nil
}

// UnmarshalJSON decodes {"cents":1999,"currency":"EUR"} through New. It is
// strict, since this is where untrusted input comes in: both members are
// required, names are case-sensitive, unknown and duplicate members are
// rejected, cents must be a non-negative JSON integer that fits in int64 (no
// 1999.0, 1e3, "1999" or null) and currency a supported code. JSON null is
// rejected too; use a *Money field for an optional amount, which
// encoding/json sets to nil without calling this method. Errors wrap
// ErrValidation; on error m is left unchanged.
func (m *Money) UnmarshalJSON(data []byte) error {
	if m == nil {
		return fmt.Errorf("%w: UnmarshalJSON on nil *Money", ErrValidation)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	var (
		cents              int64
		currency           Currency
		seenCents, seenCur bool
	)
	for dec.More() {
		key, err := token(dec)
		if err != nil {
			return err
		}
		val, err := token(dec)
		if err != nil {
			return err
		}
		switch key {
		case fieldCents:
			if seenCents {
				return fmt.Errorf("%w: duplicate JSON member %q", ErrValidation, key)
			}
			n, ok := val.(json.Number)
			if !ok {
				return fmt.Errorf("%w: JSON member %q must be an integer, got %s", ErrValidation, key, describe(val))
			}
			if cents, err = parseMinor(string(n)); err != nil {
				return err
			}
			seenCents = true
		case fieldCurrency:
			if seenCur {
				return fmt.Errorf("%w: duplicate JSON member %q", ErrValidation, key)
			}
			s, ok := val.(string)
			if !ok {
				return fmt.Errorf("%w: JSON member %q must be a string, got %s", ErrValidation, key, describe(val))
			}
			currency, seenCur = Currency(s), true
		default:
			return fmt.Errorf("%w: unknown JSON member %.40q", ErrValidation, key)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after JSON object", ErrValidation)
	}
	if !seenCents || !seenCur {
		return fmt.Errorf("%w: JSON object needs both %q and %q", ErrValidation, fieldCents, fieldCurrency)
	}
	v, err := New(cents, currency)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

func token(dec *json.Decoder) (json.Token, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: malformed JSON: %w", ErrValidation, err)
	}
	return t, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := token(dec)
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: expected %q in JSON, got %s", ErrValidation, want, describe(t))
	}
	return nil
}

// describe names a JSON token for error messages without echoing large input.
func describe(t json.Token) string {
	switch t := t.(type) {
	case nil:
		return "null"
	case json.Delim:
		return strconv.Quote(t.String())
	case json.Number:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	default:
		return fmt.Sprintf("%T", t)
	}
}

// parseMinor parses the decimal integer of a JSON number or DynamoDB N:
// ASCII digits only, so fractions, exponents, signs and blanks are rejected
// even where the value would be integral (1999.0, 1e3, -0).
func parseMinor(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty cents", ErrValidation)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: cents must be a non-negative integer, got %.40q", ErrValidation, s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // only ErrRange is possible after the digit check
		return 0, fmt.Errorf("%w: %w: cents %.40q out of int64 range", ErrValidation, ErrOverflow, s)
	}
	return n, nil
}
