package idem

import "context"

// CacheLen exposes the number of cached records to the external tests.
func CacheLen(s *Store) int {
	if s.cache == nil {
		return 0
	}
	return s.cache.len()
}

// The low-level pieces, unexported for adopters, that the external tests
// drive directly.
type (
	Lease  = hold
	Claim  = claimed
	Record = record
)

const (
	StatusCompleted  = statusCompleted
	StatusInProgress = statusInProgress
	DefaultRetention = defaultRetention
)

var (
	ExplainTx = explainTx
	ParseID   = parseID
	OutcomeOf = outcomeOf
)

// Reserve is the claim Execute, Run and Do begin with.
func (s *Store) Reserve(ctx context.Context, scope Scope, fingerprint string) (Claim, error) {
	return s.reserve(ctx, scope, fingerprint)
}

// Get reads a scope's record, treating an expired one as absent.
func (s *Store) Get(ctx context.Context, scope Scope) (Record, bool, error) {
	return s.get(ctx, scope)
}

const MaxKeyLength = maxKeyLength
