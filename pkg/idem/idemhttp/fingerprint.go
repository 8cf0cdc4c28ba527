package idemhttp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// RequestFingerprint identifies a request's payload for key reuse: the
// SHA-256 of its method, path, query and body, each length-prefixed. A
// body that is strict JSON counts by its canonical form
// (idem.CanonicalJSON), so whitespace and member order never make a retry
// look like another request; any other body (duplicate members, invalid
// UTF-8, data after the value) counts byte for byte. No raw body can equal
// a canonical form, which CanonicalJSON would have accepted, so the two
// kinds never collide.
func RequestFingerprint(method, path, rawQuery string, body []byte) string {
	if canon, err := idem.CanonicalJSON(body); err == nil {
		body = canon
	}
	h := sha256.New()
	var n [8]byte
	for _, part := range [][]byte{[]byte(method), []byte(path), []byte(rawQuery), body} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}
