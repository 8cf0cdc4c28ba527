package idemtrace

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// MinScopeHashKeyBytes is the shortest key NewScopeHasher accepts: 16
// bytes, beyond any search. Use 32 random bytes.
const MinScopeHashKeyBytes = 16

// ScopeHasher computes what a trace records in place of a scope: a
// keyed hash of its ID (idem.Scope.ID) under a secret that the functions
// which trace and the operators who look records up share, and nobody
// else who reads spans. With the key, an operator finds every span of a
// key from the key (idemctl lookup prints its hash), and the record of a
// span from the span (idemctl find); without it, a span's hash gives
// nothing back, not even a guessable key of a known principal. Its
// methods are safe for concurrent use.
type ScopeHasher struct{ key []byte }

// NewScopeHasher returns the hasher of key, a secret of at least
// MinScopeHashKeyBytes bytes (such as the 64 characters of `openssl rand
// -hex 32`, used as they are). Changing the key changes every hash: the
// spans recorded before are found with the old key.
func NewScopeHasher(key []byte) (*ScopeHasher, error) {
	if len(key) < MinScopeHashKeyBytes {
		return nil, fmt.Errorf("idemtrace: a scope hash key of %d bytes; it takes at least %d (32 random bytes, say)", len(key), MinScopeHashKeyBytes)
	}
	return &ScopeHasher{key: bytes.Clone(key)}, nil
}

// Hash is the scope hash of the scope whose ID is scopeID: the first 16
// hex digits of its HMAC-SHA-256 under the hasher's key. 64 bits: two of
// a million keys share one with a chance of about 3 in 100 million. A
// nil hasher's is "".
func (h *ScopeHasher) Hash(scopeID string) string {
	if h == nil {
		return ""
	}
	mac := hmac.New(sha256.New, h.key)
	mac.Write([]byte(scopeID))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}
