package idem

import (
	"context"
	"errors"

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
// is set in every case.
func (s *Store) Execute(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Effect, error), opts ...CallOption) (Result, error) {
	if s.executeTransacts {
		return s.Transact(ctx, scope, fingerprint, fn, opts...)
	}
	return s.admit(ctx, idemtrace.WayExecute, scope, fingerprint, opts, s.claiming(fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
		return s.execute(ctx, id, fingerprint, claim, fn)
	}), nil)
}

// execute is Execute once its key is claimed: run, commit.
func (s *Store) execute(ctx context.Context, id, fingerprint string, claim claimed, fn func(context.Context) (Effect, error)) (Result, error) {
	lease := claim.Lease
	eff, err := runReleasing(ctx, lease, func(ctx context.Context) (Effect, error) { return keepAlive(ctx, lease, fn) })
	if err == nil {
		err = s.checkEffect(id, eff)
	}
	if err != nil {
		return s.abandon(ctx, lease, err, false)
	}
	t := traceOf(ctx)
	cctx := start(ctx, t.CommitStart, idemtrace.CommitStartInfo{Request: "TransactWriteItems", Writes: len(eff.Writes)})
	expires, cid, err := lease.commit(cctx, eff.Response, eff.Writes)
	event(cctx, t.CommitDone, idemtrace.CommitDoneInfo{Err: err})
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseLost):
		return Result{Outcome: OutcomeLeaseLost}, err // not ours to release
	default:
		// A commit whose answer never came may have landed: the release,
		// fenced, finds out, and answers like the commit would have.
		landed, rerr := lease.release(ctx, cid)
		if !landed {
			return s.released(err, rerr, true)
		}
	}
	s.remember(id, fingerprint, eff.Response, expires)
	s.executed(ctx, lease)
	return Result{Response: eff.Response, Outcome: claim.Outcome}, nil
}

// runReleasing runs fn; if it panics, the lease is released (nothing was
// committed) and the panic goes on.
func runReleasing[T any](ctx context.Context, l *hold, fn func(context.Context) (T, error)) (T, error) {
	defer func() {
		if p := recover(); p != nil {
			_ = l.free(ctx)
			panic(p)
		}
	}()
	return fn(ctx)
}
