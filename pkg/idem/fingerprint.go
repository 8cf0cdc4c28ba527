package idem

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/canon"
)

// Fingerprint returns the hex SHA-256 of v's canonical JSON: objects with
// sorted keys, no insignificant whitespace, numbers as written. Pass the
// validated command without the idempotency key, so the same request in
// another field order or spacing has the same fingerprint. For a document
// already encoded, pass it as a json.RawMessage: it must be strict JSON
// (valid UTF-8, no duplicate member names, nothing after the value), so
// that two different values never share a fingerprint. A store admits a
// fingerprint of at most 1024 bytes of UTF-8, which this one always is.
func Fingerprint(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("idem: fingerprint: %w", err)
	}
	return canon.Fingerprint(raw)
}

// maxFingerprintLength is the longest fingerprint admitted, in bytes: a
// hex SHA-512 takes 128. It bounds what a caller's fingerprint takes of
// its record, so that every record fits DynamoDB's item.
const maxFingerprintLength = 1024

// checkFingerprint refuses a fingerprint no record should hold: over
// maxFingerprintLength, or not UTF-8 (DynamoDB's strings are).
func checkFingerprint(fingerprint string) error {
	if n := len(fingerprint); n > maxFingerprintLength {
		return fmt.Errorf("%w: fingerprint of %d bytes, at most %d: pass a digest of the payload (Fingerprint)", ErrInvalidKey, n, maxFingerprintLength)
	}
	if !utf8.ValidString(fingerprint) {
		return fmt.Errorf("%w: fingerprint is not UTF-8", ErrInvalidKey)
	}
	return nil
}
