package idem

import (
	"context"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// admit is the one admission step of every way in: Execute, Transact,
// Run and Do make their call through it, ExecuteBatch each item through
// enter and leave, and the packages built on them (idemhttp, idemevent,
// idemsqs, idemstream) through those calls. It checks the scope (one
// NewScope made, which refused a caller it could not name, or
// NewAnonymousScope, which the way in chose), answers from the cache,
// makes the call with the scope and the call's trace in its context
// (ScopeFrom, traceOf), lets finish (when set) turn its result into the
// way in's own, and reports the outcome to the hook and the trace.
func (s *Store) admit(ctx context.Context, way idemtrace.Way, scope Scope, fingerprint string,
	call func(ctx context.Context, id string) (Result, error),
	finish func(Result, error) (Result, error),
) (Result, error) {
	t := s.traceFor(ctx)
	var sid string // the scope's ID, for the trace's infos
	if t.CallStart != nil || t.CallDone != nil {
		sid = scope.ID()
	}
	ctx = start(ctx, t.CallStart, idemtrace.CallStartInfo{Way: way, Operation: scope.Operation, ScopeID: sid, Items: 1})
	// An operation that panics skips the rest: its CallDone comes from
	// here, and the panic goes on.
	panicking := t.CallDone != nil
	if panicking {
		defer func() {
			if panicking {
				t.CallDone(ctx, idemtrace.CallDoneInfo{Way: way, Operation: scope.Operation, ScopeID: sid, Panicked: true})
			}
		}()
	}
	id, res, err, done := s.enter(ctx, t, scope, fingerprint, nil)
	if !done {
		res, err = call(withCall(ctx, scope, true, t), id)
	}
	if finish != nil {
		res, err = finish(res, err)
	}
	s.leave(ctx, scope, res.Outcome, err)
	panicking = false
	event(ctx, t.CallDone, idemtrace.CallDoneInfo{Way: way, Operation: scope.Operation, ScopeID: sid, Outcome: string(res.Outcome), Err: err})
	return res, err
}

// enter is admission's first half: a scope NewScope would not have made
// is rejected, and so is a call valid (when set) refuses; a key the
// cache holds answers from it (reported to t). The refusals come before
// the cache, so a cached key never answers a call the table would
// refuse. done is true when res and err are the call's answer; else id
// is the scope's record id.
func (s *Store) enter(ctx context.Context, t *idemtrace.Trace, scope Scope, fingerprint string, valid func() error) (id string, res Result, err error, done bool) {
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
		event(ctx, t.CacheHit, idemtrace.CacheHitInfo{Operation: scope.Operation, ScopeID: id, Outcome: string(res.Outcome)})
		return id, res, err, true
	}
	return id, Result{}, nil, false
}

// leave is admission's second half: the call's outcome goes to the
// outcome hook (the trace's CallDone or BatchItem follows it).
func (s *Store) leave(ctx context.Context, scope Scope, outcome Outcome, err error) {
	if s.outcomeHook != nil {
		s.outcomeHook(ctx, scope, outcome, err)
	}
}

type scopeKey struct{}

// callCtx is the context of a call's phases: the caller's, with the
// call's scope (none for a batch) and trace. It answers scopeKey with
// itself, and every other key as the caller's context does.
type callCtx struct {
	context.Context
	scope  Scope
	scoped bool
	trace  *idemtrace.Trace
}

func (c *callCtx) Value(key any) any {
	if key == (scopeKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// withCall is ctx with the call's scope (when scoped) and trace t.
func withCall(ctx context.Context, scope Scope, scoped bool, t *idemtrace.Trace) context.Context {
	return &callCtx{Context: ctx, scope: scope, scoped: scoped, trace: t}
}

// ScopeFrom returns the scope of the call whose operation runs with ctx:
// every way in passes it in the context of the function it runs
// (Execute's and Transact's fn, Run's and Do's fn, and so the handlers
// idemhttp, idemevent, idemsqs and idemstream run). Its Key is the one to
// pass to a downstream API that takes idempotency keys of its own, which
// closes Run's window. ok is false outside such a function.
func ScopeFrom(ctx context.Context) (Scope, bool) {
	c, ok := ctx.Value(scopeKey{}).(*callCtx)
	if !ok || !c.scoped {
		return Scope{}, false
	}
	return c.scope, true
}
