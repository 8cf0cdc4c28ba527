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

// Scope is who asked for what: the operation, the caller principal and the
// client's key. Two different scopes never share a record. Build one with
// NewScope, or NewAnonymousScope for callers that cannot be named.
type Scope struct {
	// Operation names the protected operation, such as "POST /products".
	Operation string
	// Principal is the authenticated caller (a JWT sub, an IAM ARN);
	// empty in the anonymous scope.
	Principal string
	// Key is the client's idempotency key.
	Key string
	// anonymous marks the scope of callers that cannot be named: a kind
	// of scope, not a principal's name, so no named caller shares it.
	anonymous bool
}

// NewScope validates the client key and returns the scope of a named
// caller. An empty principal is ErrInvalidKey: a caller that cannot be
// named would otherwise share a scope with every other such caller, and
// be served their stored responses. Any other principal, "anonymous"
// included, names one caller, never the anonymous scope.
func NewScope(operation, principal, key string) (Scope, error) {
	if principal == "" {
		return Scope{}, fmt.Errorf("%w: empty principal: name the caller, or choose the one anonymous scope with idem.NewAnonymousScope", ErrInvalidKey)
	}
	return Scope{Operation: operation, Principal: principal, Key: key}.checked()
}

// NewAnonymousScope validates the client key and returns the anonymous
// scope of operation: the one scope every caller that cannot be named
// shares, where any caller who learns a key replays its stored response
// (cookies included) and can use it up. Choose it only where callers may
// see each other's responses. No named caller (NewScope) ever shares it.
func NewAnonymousScope(operation, key string) (Scope, error) {
	return Scope{Operation: operation, Key: key, anonymous: true}.checked()
}

// Anonymous reports whether s is the anonymous scope (NewAnonymousScope).
func (s Scope) Anonymous() bool { return s.anonymous }

// checked is s, or the zero Scope and check's error.
func (s Scope) checked() (Scope, error) {
	if err := s.check(); err != nil {
		return Scope{}, err
	}
	return s, nil
}

// check refuses a scope NewScope or NewAnonymousScope would not have
// made (a zero Scope, or one whose fields were set by hand), which could
// share a record with others or overflow DynamoDB's key.
func (s Scope) check() error {
	if err := scopeid.ValidateKey(s.Key); err != nil {
		return err
	}
	if s.Operation == "" {
		return fmt.Errorf("%w: empty operation", ErrInvalidKey)
	}
	if (s.Principal == "") != s.anonymous {
		return fmt.Errorf("%w: a scope without a principal, or an anonymous one with one; build it with NewScope or NewAnonymousScope", ErrInvalidKey)
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
// whatever the parts contain. The anonymous scope's principal is spelled
// "anonymous", as before it was a kind of its own; a caller named
// "anonymous" is marked ("n9:anonymous"), so the two never meet.
func (s Scope) ID() string {
	return scopeid.Encode(scopeid.Parts{Operation: s.Operation, Principal: s.Principal, Key: s.Key, Anonymous: s.anonymous})
}
