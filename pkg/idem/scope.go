package idem

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/scopeid"
)

// maxIDLength keeps the record id inside DynamoDB's 2048-byte partition key
// limit.
const maxIDLength = 2048

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

// NewScope validates the scope's parts and returns the scope of a named
// caller: the key (1 to 255 bytes of printable ASCII), an operation and a
// principal (UTF-8, their ID within 2048 bytes). An empty principal is
// ErrInvalidKey: a caller that cannot be named would otherwise share a
// scope with every other such caller, and be served their stored
// responses. Any other principal, "anonymous" included, names one caller,
// never the anonymous scope.
func NewScope(operation, principal, key string) (Scope, error) {
	if principal == "" {
		return Scope{}, fmt.Errorf("%w: empty principal: name the caller, or choose the one anonymous scope with idem.NewAnonymousScope", ErrInvalidKey)
	}
	return Scope{Operation: operation, Principal: principal, Key: key}.checked()
}

// NewAnonymousScope validates the key and operation and returns the
// anonymous scope of operation: the one scope every caller that cannot be
// named shares, where any caller who learns a key replays its stored
// response (cookies included) and can use it up. Choose it only where
// callers may see each other's responses. No named caller (NewScope) ever
// shares it.
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
	return s.fits(maxIDLength, "")
}

// fits refuses a scope DynamoDB could not store as its record's key: an
// operation or principal that is not UTF-8, or an ID over limit bytes
// (where, if set, says whose limit); the error says what each part takes.
func (s Scope) fits(limit int, where string) error {
	if !utf8.ValidString(s.Operation) || !utf8.ValidString(s.Principal) {
		return fmt.Errorf("%w: operation or principal is not UTF-8", ErrInvalidKey)
	}
	if n := len(s.ID()); n > limit {
		return fmt.Errorf("%w: scoped id is %d bytes, at most %d%s (operation %d, principal %d, key %d bytes)",
			ErrInvalidKey, n, limit, where, len(s.Operation), len(s.Principal), len(s.Key))
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

// scopeKey is the context key of a call's callCtx.
type scopeKey struct{}

// callCtx is the context of a call's phases: the caller's, with the
// call's scope (none for a batch), trace and settings. It answers
// scopeKey with itself, and every other key as the caller's context does.
type callCtx struct {
	context.Context
	scope    Scope
	scoped   bool
	trace    *idemtrace.Trace
	settings callSettings
}

// Value answers scopeKey with c itself.
func (c *callCtx) Value(key any) any {
	if key == (scopeKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// withCall is ctx with the call's scope (when scoped), trace t and
// settings.
func withCall(ctx context.Context, scope Scope, scoped bool, t *idemtrace.Trace, settings callSettings) context.Context {
	return &callCtx{Context: ctx, scope: scope, scoped: scoped, trace: t, settings: settings}
}

// settingsOf is the settings of the call whose phases run with ctx
// (admit puts them there); ok is false outside a call.
func settingsOf(ctx context.Context) (callSettings, bool) {
	if c, ok := ctx.Value(scopeKey{}).(*callCtx); ok {
		return c.settings, true
	}
	return callSettings{}, false
}

// ScopeFrom returns the scope of the call whose operation runs with ctx:
// every way in passes it to the function it runs. Its Key is the one to
// pass to a downstream API that takes idempotency keys of its own, which
// closes Run's window. ok is false outside such a function.
func ScopeFrom(ctx context.Context) (Scope, bool) {
	c, ok := ctx.Value(scopeKey{}).(*callCtx)
	if !ok || !c.scoped {
		return Scope{}, false
	}
	return c.scope, true
}
