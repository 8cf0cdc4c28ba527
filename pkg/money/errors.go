package money

import "errors"

// Sentinel errors; every error returned by this package wraps at least one of
// them, so callers match with errors.Is.
var (
	// ErrValidation reports input that does not describe a valid Money:
	// unsupported currency, negative amount, malformed text, JSON or
	// DynamoDB shape, or an operation on an invalid (zero-value) Money.
	ErrValidation = errors.New("money: invalid value")
	// ErrCurrencyMismatch reports an operation between two different
	// currencies.
	ErrCurrencyMismatch = errors.New("money: currency mismatch")
	// ErrOverflow reports a result or input that does not fit in int64
	// minor units.
	ErrOverflow = errors.New("money: int64 overflow")
)
