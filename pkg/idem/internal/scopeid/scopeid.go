// Package scopeid encodes a scope (operation, principal, key) as the
// partition key value of its record, and validates client keys, for
// pkg/idem and its sub-packages.
package scopeid

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxKeyLength is the longest client idempotency key accepted, in bytes.
const MaxKeyLength = 255

// ErrInvalidKey reports a client key, operation or principal that cannot be
// used: empty, too long, or outside printable ASCII.
var ErrInvalidKey = errors.New("idem: invalid idempotency key")

// ValidateKey checks a client key: 1 to 255 characters, each printable
// ASCII (0x21 to 0x7E, so no spaces or control characters).
func ValidateKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(k) > MaxKeyLength {
		return fmt.Errorf("%w: %d characters, at most %d", ErrInvalidKey, len(k), MaxKeyLength)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: character %d is not printable ASCII (0x21-0x7E)", ErrInvalidKey, i+1)
		}
	}
	return nil
}

// anonymousPrincipal is how the principal part of the anonymous scope's
// ID is spelled: "anonymous", as every release wrote it, so the records
// the anonymous scope wrote before it became a kind of its own stay its
// own.
const anonymousPrincipal = "anonymous"

// namedMark marks the principal part of a named caller whose name would
// otherwise spell the anonymous scope's: a caller named "anonymous" (a
// user name anyone may register) gets "|n9:anonymous", never
// "|9:anonymous". No other part carries it, and no other name needs it.
const namedMark = 'n'

// Parts is a scope as its ID encodes it: the operation, the caller, the
// client's key. Anonymous is the scope of callers that cannot be named,
// a kind of its own: its Principal is empty, and no Principal of a named
// caller spells its ID.
type Parts struct {
	Operation, Principal, Key string
	Anonymous                 bool
}

// Encode is the ID of a scope: "v1", then the operation, the principal
// and the key, each prefixed by "|", its length in bytes and ":". Length
// prefixes make the encoding injective whatever the parts contain (a "#"
// or "|" in a principal cannot shift a boundary), and the parts stay
// readable in the table for debugging. The anonymous scope's principal
// is spelled "anonymous", and a named caller of that name is marked
// ("|n9:anonymous"), so no named caller shares the anonymous scope.
func Encode(p Parts) string {
	var b strings.Builder
	b.Grow(len(p.Operation) + len(p.Principal) + len(p.Key) + 24)
	b.WriteString("v1")
	writePart(&b, p.Operation)
	switch {
	case p.Anonymous:
		writePart(&b, anonymousPrincipal)
	case p.Principal == anonymousPrincipal:
		b.WriteString("|" + string(namedMark))
		b.WriteString(strconv.Itoa(len(p.Principal)))
		b.WriteByte(':')
		b.WriteString(p.Principal)
	default:
		writePart(&b, p.Principal)
	}
	writePart(&b, p.Key)
	return b.String()
}

// Prefix is what the ID of every scope of operation begins with, and the
// ID of no scope of another operation: the length prefix says where the
// operation ends.
func Prefix(operation string) string {
	var b strings.Builder
	b.WriteString("v1")
	writePart(&b, operation)
	b.WriteByte('|')
	return b.String()
}

func writePart(b *strings.Builder, part string) {
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(len(part)))
	b.WriteByte(':')
	b.WriteString(part)
}

// Parse inverts Encode, for tools that read a table. It refuses what
// Encode never writes (so two IDs never parse to one scope), the mark on
// any name but the one it exists for included.
func Parse(id string) (Parts, error) {
	rest, ok := strings.CutPrefix(id, "v1")
	if !ok {
		return Parts{}, fmt.Errorf("%w: id %q has no v1 prefix", ErrInvalidKey, id)
	}
	malformed := fmt.Errorf("%w: malformed id", ErrInvalidKey)
	var parts [3]string
	marked := false
	for i := range parts {
		if !strings.HasPrefix(rest, "|") {
			return Parts{}, malformed
		}
		rest = rest[1:]
		if i == 1 && strings.HasPrefix(rest, string(namedMark)) {
			marked, rest = true, rest[1:]
		}
		lenStr, after, ok := strings.Cut(rest, ":")
		n, err := strconv.Atoi(lenStr)
		if !ok || err != nil || n < 0 || n > len(after) || lenStr != strconv.Itoa(n) {
			return Parts{}, malformed
		}
		parts[i], rest = after[:n], after[n:]
	}
	if rest != "" {
		return Parts{}, fmt.Errorf("%w: trailing data in id", ErrInvalidKey)
	}
	p := Parts{Operation: parts[0], Principal: parts[1], Key: parts[2]}
	switch {
	case marked && p.Principal != anonymousPrincipal:
		return Parts{}, malformed
	case !marked && p.Principal == anonymousPrincipal:
		p.Principal, p.Anonymous = "", true
	}
	return p, nil
}
