package idem

import (
	"encoding/json"
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/canon"
)

// Fingerprint returns the hex SHA-256 of v's canonical JSON: objects with
// sorted keys, no insignificant whitespace, numbers as written. Pass the
// validated command without the idempotency key, so the same request in
// another field order or spacing has the same fingerprint. For a document
// already encoded, pass it as a json.RawMessage: it must be strict JSON
// (valid UTF-8, no duplicate member names, nothing after the value), so
// that two different values never share a fingerprint.
func Fingerprint(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("idem: fingerprint: %w", err)
	}
	return canon.Fingerprint(raw)
}
