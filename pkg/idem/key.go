package idem

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxKeyLength is the longest client idempotency key accepted, in bytes.
const maxKeyLength = 255

// maxIDLength keeps the record id inside DynamoDB's 2048-byte partition key
// limit.
const maxIDLength = 2048

// ErrInvalidKey reports a client key, operation or principal that cannot be
// used: empty, too long, or outside printable ASCII.
var ErrInvalidKey = errors.New("idem: invalid idempotency key")

// ValidateKey checks a client key: 1 to 255 characters, each printable
// ASCII (0x21 to 0x7E, so no spaces or control characters).
func ValidateKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(k) > maxKeyLength {
		return fmt.Errorf("%w: %d characters, at most %d", ErrInvalidKey, len(k), maxKeyLength)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: character %d is not printable ASCII (0x21-0x7E)", ErrInvalidKey, i+1)
		}
	}
	return nil
}

// Scope is who asked for what: the operation, the caller principal and the
// client's key. Two different scopes never share a record.
type Scope struct {
	// Operation names the protected operation, such as "POST /products".
	Operation string
	// Principal is the authenticated caller (a JWT sub, an IAM ARN), or
	// "anonymous".
	Principal string
	// Key is the client's idempotency key.
	Key string
}

// NewScope validates the client key and returns the scope. An empty
// principal becomes "anonymous".
func NewScope(operation, principal, key string) (Scope, error) {
	if err := ValidateKey(key); err != nil {
		return Scope{}, err
	}
	if operation == "" {
		return Scope{}, fmt.Errorf("%w: empty operation", ErrInvalidKey)
	}
	if principal == "" {
		principal = "anonymous"
	}
	s := Scope{Operation: operation, Principal: principal, Key: key}
	if n := len(s.ID()); n > maxIDLength {
		return Scope{}, fmt.Errorf("%w: scoped id is %d bytes, at most %d", ErrInvalidKey, n, maxIDLength)
	}
	return s, nil
}

// check refuses a scope NewScope would not have made (a zero Scope, or
// one whose fields were set by hand), which could share a record with
// others or overflow DynamoDB's key.
func (s Scope) check() error {
	if err := ValidateKey(s.Key); err != nil {
		return err
	}
	if s.Operation == "" || s.Principal == "" {
		return fmt.Errorf("%w: scope without operation or principal; build it with NewScope", ErrInvalidKey)
	}
	if n := len(s.ID()); n > maxIDLength {
		return fmt.Errorf("%w: scoped id is %d bytes, at most %d", ErrInvalidKey, n, maxIDLength)
	}
	return nil
}

// ID is the record's partition key: "v1", then each part prefixed by its
// length in bytes. Length prefixes make the encoding injective whatever the
// parts contain (a "#" or "|" in a principal cannot shift a boundary), and
// the parts stay readable in the table for debugging.
func (s Scope) ID() string {
	var b strings.Builder
	b.Grow(len(s.Operation) + len(s.Principal) + len(s.Key) + 16)
	b.WriteString("v1")
	for _, part := range [...]string{s.Operation, s.Principal, s.Key} {
		writePart(&b, part)
	}
	return b.String()
}

// OperationPrefix is what the ID of every scope of operation begins with,
// and the ID of no scope of another operation: the length prefix says
// where the operation ends. It is the partition key prefix to
// confine a role to one operation's records, with an IAM condition
// ForAllValues:StringLike on dynamodb:LeadingKeys of OperationPrefix(op)+"*".
func OperationPrefix(operation string) string {
	var b strings.Builder
	b.WriteString("v1")
	writePart(&b, operation)
	b.WriteByte('|')
	return b.String()
}

// writePart writes one part of an ID: "|", its length in bytes, ":", the
// part.
func writePart(b *strings.Builder, part string) {
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(len(part)))
	b.WriteByte(':')
	b.WriteString(part)
}

// parseID inverts Scope.ID. It exists so tests and tools can read a table;
// the store never needs it.
func parseID(id string) (Scope, error) {
	rest, ok := strings.CutPrefix(id, "v1")
	if !ok {
		return Scope{}, fmt.Errorf("%w: id %q has no v1 prefix", ErrInvalidKey, id)
	}
	var parts [3]string
	for i := range parts {
		if !strings.HasPrefix(rest, "|") {
			return Scope{}, fmt.Errorf("%w: malformed id", ErrInvalidKey)
		}
		lenStr, after, ok := strings.Cut(rest[1:], ":")
		n, err := strconv.Atoi(lenStr)
		if !ok || err != nil || n < 0 || n > len(after) {
			return Scope{}, fmt.Errorf("%w: malformed id", ErrInvalidKey)
		}
		parts[i], rest = after[:n], after[n:]
	}
	if rest != "" {
		return Scope{}, fmt.Errorf("%w: trailing data in id", ErrInvalidKey)
	}
	return Scope{Operation: parts[0], Principal: parts[1], Key: parts[2]}, nil
}
