package idem

import "context"

// admit is the one admission step of every way in: Execute, Transact,
// Run and Do make their call through it, ExecuteBatch each item through
// enter and leave, and the packages built on them (idemhttp, idemevent,
// idemsqs, idemstream) through those calls. It checks the scope (one
// NewScope made, which refused a caller it could not name unless the
// way in chose Anonymous), answers from the cache, makes the call with
// the scope in its context (ScopeFrom), lets finish (when set) turn its
// result into the way in's own, and reports the outcome to the hook.
func (s *Store) admit(ctx context.Context, scope Scope, fingerprint string,
	call func(ctx context.Context, id string) (Result, error),
	finish func(Result, error) (Result, error),
) (Result, error) {
	id, res, err, done := s.enter(scope, fingerprint, nil)
	if !done {
		res, err = call(withScope(ctx, scope), id)
	}
	if finish != nil {
		res, err = finish(res, err)
	}
	s.leave(ctx, scope, res.Outcome, err)
	return res, err
}

// enter is admission's first half: a scope NewScope would not have made
// is rejected, and so is a call valid (when set) refuses; a key the
// cache holds answers from it. The refusals come before the cache, so a
// cached key never answers a call the table would refuse. done is true
// when res and err are the call's answer; else id is the scope's record
// id.
func (s *Store) enter(scope Scope, fingerprint string, valid func() error) (id string, res Result, err error, done bool) {
	if err := s.check(scope); err != nil {
		return "", Result{Outcome: OutcomeRejected}, err, true
	}
	if valid != nil {
		if err := valid(); err != nil {
			return "", Result{Outcome: OutcomeRejected}, err, true
		}
	}
	id = scope.ID()
	if res, err, hit := s.fromCache(id, fingerprint); hit {
		return id, res, err, true
	}
	return id, Result{}, nil, false
}

// leave is admission's second half: the call's outcome goes to the
// outcome hook (a trace hook belongs here too, beside it).
func (s *Store) leave(ctx context.Context, scope Scope, outcome Outcome, err error) {
	if s.outcomeHook != nil {
		s.outcomeHook(ctx, scope, outcome, err)
	}
}

type scopeKey struct{}

func withScope(ctx context.Context, scope Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// ScopeFrom returns the scope of the call whose operation runs with ctx:
// every way in passes it in the context of the function it runs
// (Execute's and Transact's fn, Run's and Do's fn, and so the handlers
// idemhttp, idemevent, idemsqs and idemstream run). Its Key is the one to
// pass to a downstream API that takes idempotency keys of its own, which
// closes Run's window. ok is false outside such a function.
func ScopeFrom(ctx context.Context) (Scope, bool) {
	scope, ok := ctx.Value(scopeKey{}).(Scope)
	return scope, ok
}
