package idem

import (
	"context"
	"errors"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// execute is a claimed key's Effect: run, commit. The commit is one
// TransactWriteItems, or on a table with multi-Region strong consistency
// (which has no transactions) the guards, the decision and the intents
// (intent.go); a transaction refused by such a table teaches the store
// its kind, and the same lease commits the other way.
func (s *Store) execute(ctx context.Context, id, fingerprint string, claim claimed, fn func(context.Context) (Effect, error)) (Result, error) {
	lease := claim.Lease
	eff, err := runReleasing(ctx, lease, func(ctx context.Context) (Effect, error) { return keepAlive(ctx, lease, fn) })
	if err == nil {
		err = s.checkEffect(id, eff)
	}
	if err != nil {
		return s.abandon(ctx, lease, err, false)
	}
	return s.commitEffect(ctx, id, fingerprint, claim, eff)
}

// commitEffect commits eff, the Effect of the key claim holds, and
// answers the call.
func (s *Store) commitEffect(ctx context.Context, id, fingerprint string, claim claimed, eff Effect) (Result, error) {
	lease := claim.Lease
	strong := s.strong(ctx)
	t := traceOf(ctx)
	request := "TransactWriteItems"
	if strong {
		request = "UpdateItem"
	}
	cctx := start(ctx, t.CommitStart, idemtrace.CommitStartInfo{Request: request, Writes: len(eff.Writes)})
	var expires time.Time
	var cid string
	var d decided
	var err error
	if !strong {
		expires, cid, err = lease.commit(cctx, eff.Response, eff.Writes)
		strong = s.learnRefusal(cctx, err)
	}
	if strong {
		d, expires, err = lease.commitStrong(cctx, eff)
		cid = d.cid
	}
	event(cctx, t.CommitDone, idemtrace.CommitDoneInfo{Err: err})
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseLost):
		return Result{Outcome: OutcomeLeaseLost}, err // not ours to release
	case d.landed:
		// Decided: the writes left apply with the key's next call.
		return Result{Outcome: outcomeOf(err)}, err
	default:
		// A commit whose answer never came may have landed: the release,
		// fenced, finds out, and answers like the commit would have.
		landed, rerr := lease.release(ctx, cid)
		if !landed {
			return s.released(err, rerr, true)
		}
		if strong {
			if err := s.apply(ctx, d, false); err != nil {
				return Result{Outcome: outcomeOf(err)}, err
			}
			expires = d.expires()
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
