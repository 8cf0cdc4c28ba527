package idem

import (
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/scopeid"
)

// maxIDLength keeps the record id inside DynamoDB's 2048-byte partition key
// limit.
const maxIDLength = 2048

// ErrInvalidKey reports a client key, operation or principal that cannot be
// used: empty, too long (a key over 255 bytes), or outside printable
// ASCII (0x21 to 0x7E).
var ErrInvalidKey = scopeid.ErrInvalidKey

// Anonymous is the principal of a caller that cannot be named, for a
// way in whose callers may share one scope and see each other's stored
// responses. NewScope refuses an empty principal; passing Anonymous is
// how a caller opts into that one shared scope, explicitly.
const Anonymous = "anonymous"

// Scope is who asked for what: the operation, the caller principal and the
// client's key. Two different scopes never share a record.
type Scope struct {
	// Operation names the protected operation, such as "POST /products".
	Operation string
	// Principal is the authenticated caller (a JWT sub, an IAM ARN), or
	// Anonymous.
	Principal string
	// Key is the client's idempotency key.
	Key string
}

// NewScope validates the client key and returns the scope. An empty
// principal is ErrInvalidKey: a caller that cannot be named would
// otherwise share a scope with every other such caller, and be served
// their stored responses. Pass Anonymous to choose that shared scope.
func NewScope(operation, principal, key string) (Scope, error) {
	if err := scopeid.ValidateKey(key); err != nil {
		return Scope{}, err
	}
	if operation == "" {
		return Scope{}, fmt.Errorf("%w: empty operation", ErrInvalidKey)
	}
	if principal == "" {
		return Scope{}, fmt.Errorf("%w: empty principal: name the caller, or pass idem.Anonymous to share one anonymous scope", ErrInvalidKey)
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
	if err := scopeid.ValidateKey(s.Key); err != nil {
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

// check is scope.check, and that the scope's ID fits the key of the
// store's layout (a sort key holds 1024 bytes, a prefix takes its share).
func (s *Store) check(scope Scope) error {
	if err := scope.check(); err != nil {
		return err
	}
	if n, limit := len(scope.ID()), s.layout.MaxIDLength(); n > limit {
		return fmt.Errorf("%w: scoped id is %d bytes, at most %d in this table's layout", ErrInvalidKey, n, limit)
	}
	return nil
}

// ID is the record's partition key (in the default layout; see
// idemtable.Layout for the others): "v1", then operation, principal and
// key, each prefixed by its length in bytes, so the encoding is injective
// whatever the parts contain.
func (s Scope) ID() string { return scopeid.Encode(s.Operation, s.Principal, s.Key) }
