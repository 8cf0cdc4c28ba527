package idem

import "context"

// WithOutcomeHook has the store call fn with every call's outcome and its
// scope, for the caller's own metrics, logs or response headers: once per
// Execute, Transact, Run and Do call, and once per item of ExecuteBatch
// (with that item's scope), whatever happened: executed, replayed (from
// the table or the cache), in flight, key reuse, rejected (err wraps
// ErrInvalidKey, or for a batch item a response that cannot be stored;
// the scope is the one passed, as it was), failed. err is
// the error the call returns (for a batch item, its BatchResult.Err). A
// call whose operation panics reports nothing: the panic goes on.
//
// fn runs on the calling goroutine, after the call's last DynamoDB request
// and before it returns, so it must not block: count, log or record, and
// hand anything slow to another goroutine. It is called concurrently by
// concurrent calls, so it must be safe for that.
func WithOutcomeHook(fn func(ctx context.Context, scope Scope, outcome Outcome, err error)) Option {
	return func(s *Store) { s.outcomeHook = fn }
}
