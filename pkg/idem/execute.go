package idem

import (
	"context"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// Execute runs an operation whose effect is DynamoDB writes at most once
// per scope and payload fingerprint, and answers every retry with the
// stored response: it reserves the key (one conditional PutItem), runs
// fn, and commits fn's writes with the fenced completion (one
// TransactWriteItems), releasing the key if fn or the commit fails or fn
// panics. Errors wrap ErrInvalidKey, ErrInvalidEffect, ErrInFlight,
// ErrKeyReuse, ErrLeaseLost, ErrConditionFailed, fn's own error, or the
// store's (IsUnavailable tells one a retry later can fix); Result.Outcome
// is set in every case. On a table with multi-Region strong consistency
// the writes commit without a transaction (the package documentation's
// "Global tables").
func (s *Store) Execute(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Effect, error), opts ...CallOption) (Result, error) {
	if s.executeTransacts {
		return s.Transact(ctx, scope, fingerprint, fn, opts...)
	}
	return s.admit(ctx, idemtrace.WayExecute, scope, fingerprint, opts, s.claiming(fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
		return s.execute(ctx, id, fingerprint, claim, fn)
	}), nil)
}
