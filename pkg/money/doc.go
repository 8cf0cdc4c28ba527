// Package money provides Money, an exact monetary amount that cannot hold an
// invalid value.
//
// Why it looks the way it does:
//
//   - Amounts are int64 minor units (cents), never floats, so 0.1+0.2 is
//     exactly 0.3 and a price read back from storage is the price written.
//   - The currency travels with the amount, so adding EUR to USD is an error
//     instead of a silent bug, and the number of decimals comes from the
//     currency (ISO 4217 minor units) rather than from the caller.
//   - The fields are unexported and New is the single constructor, so every
//     Money a caller can hold, except the zero value, is valid: a supported
//     currency and a non-negative amount.
//   - Every way in — Parse, JSON, DynamoDB — goes back through New, so a value
//     decoded from the wire or from the database is revalidated, never trusted.
//   - Arithmetic never wraps around: currency mismatch, int64 overflow and
//     negative results are reported as errors (ErrCurrencyMismatch,
//     ErrOverflow, ErrValidation), matched with errors.Is.
//
// The zero value Money{} is deliberately invalid (it has no currency). It is
// safe to use — nothing panics — but arithmetic on it and encoding it fail
// with ErrValidation. Use IsValid to tell it apart from a real zero amount.
package money
