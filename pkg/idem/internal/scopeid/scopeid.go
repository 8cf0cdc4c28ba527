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

// Encode is the ID of a scope: "v1", then each part prefixed by "|", its
// length in bytes and ":". Length prefixes make the encoding injective
// whatever the parts contain (a "#" or "|" in a principal cannot shift a
// boundary), and the parts stay readable in the table for debugging.
func Encode(operation, principal, key string) string {
	var b strings.Builder
	b.Grow(len(operation) + len(principal) + len(key) + 16)
	b.WriteString("v1")
	for _, part := range [...]string{operation, principal, key} {
		writePart(&b, part)
	}
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

// Parse inverts Encode, for tools that read a table.
func Parse(id string) (operation, principal, key string, err error) {
	rest, ok := strings.CutPrefix(id, "v1")
	if !ok {
		return "", "", "", fmt.Errorf("%w: id %q has no v1 prefix", ErrInvalidKey, id)
	}
	var parts [3]string
	for i := range parts {
		if !strings.HasPrefix(rest, "|") {
			return "", "", "", fmt.Errorf("%w: malformed id", ErrInvalidKey)
		}
		lenStr, after, ok := strings.Cut(rest[1:], ":")
		n, err := strconv.Atoi(lenStr)
		if !ok || err != nil || n < 0 || n > len(after) {
			return "", "", "", fmt.Errorf("%w: malformed id", ErrInvalidKey)
		}
		parts[i], rest = after[:n], after[n:]
	}
	if rest != "" {
		return "", "", "", fmt.Errorf("%w: trailing data in id", ErrInvalidKey)
	}
	return parts[0], parts[1], parts[2], nil
}
