package idemhttp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/canon"
)

// RequestFingerprint identifies a request's payload for key reuse: the
// SHA-256 of its method, path, query and body, each length-prefixed. A
// body that is strict JSON counts by its canonical form
// (the canonical JSON idem.Fingerprint hashes), so whitespace and member order never make a retry
// look like another request; any other body (duplicate members, invalid
// UTF-8, data after the value) counts byte for byte. No raw body can equal
// a canonical form, which the canonicalizer would have accepted, so the two
// kinds never collide.
func RequestFingerprint(method, path, rawQuery string, body []byte) string {
	return fingerprint(method, path, rawQuery, body, nil, nil)
}

// fingerprint is RequestFingerprint with the named headers too, each as
// its name, whether it was sent, and its value, after the body: with no
// headers it is RequestFingerprint's value, so records stored by a
// middleware configured without headers stay valid.
func fingerprint(method, path, rawQuery string, body []byte, headers []string, get func(string) (string, bool)) string {
	if canon, err := canon.JSON(body); err == nil {
		body = canon
	}
	h := sha256.New()
	var n [8]byte
	part := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, p := range [][]byte{[]byte(method), []byte(path), []byte(rawQuery), body} {
		part(p)
	}
	for _, name := range headers {
		v, ok := get(name)
		sent := []byte{0}
		if ok {
			sent[0] = 1
		}
		part([]byte(http.CanonicalHeaderKey(name)))
		part(sent)
		part([]byte(v))
	}
	return hex.EncodeToString(h.Sum(nil))
}
