package idem

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Fingerprint returns the hex SHA-256 of v's canonical JSON: objects with
// sorted keys, no insignificant whitespace, numbers as written. Pass the
// validated command without the idempotency key, so the same request in
// another field order or spacing has the same fingerprint.
func Fingerprint(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("idem: fingerprint: %w", err)
	}
	return FingerprintJSON(raw)
}

// FingerprintJSON is Fingerprint for a JSON document already encoded.
func FingerprintJSON(raw []byte) (string, error) {
	canon, err := CanonicalJSON(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// CanonicalJSON re-encodes a JSON document with object keys sorted and
// whitespace removed. Numbers keep their literal text (no float rounding).
func CanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("idem: canonical json: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("idem: canonical json: trailing data")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// encoding/json writes map keys sorted, which is the canonical order.
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("idem: canonical json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
