package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// Run runs fn, an effect outside DynamoDB (an e-mail, a payment API call),
// at most once per scope and payload fingerprint, and stores the response
// it returns for every retry: it reserves the key, runs fn, then completes
// the key with a fenced UpdateItem. If fn fails, the key is released,
// unless fn's error wraps ErrNotRecorded (its effect happened) or fn
// panics. A completion that could not be recorded is an error wrapping
// ErrNotRecorded, with fn's response in the Result: the one window of an
// effect outside DynamoDB (the package documentation's "Run's window").
func (s *Store) Run(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Response, error), opts ...CallOption) (Result, error) {
	return s.admit(ctx, idemtrace.WayRun, scope, fingerprint, opts, s.claiming(fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
		return s.run(ctx, id, fingerprint, claim, fn)
	}), nil)
}

// run is Run once its key is claimed: run, record. A response that cannot
// be stored as it is is recorded as its stand-in.
func (s *Store) run(ctx context.Context, id, fingerprint string, claim claimed, fn func(context.Context) (Response, error)) (Result, error) {
	resp, err := keepAlive(ctx, claim.Lease, fn)
	if errors.Is(err, ErrNotRecorded) {
		return Result{Response: resp, Outcome: OutcomeNotRecorded}, err
	}
	if err != nil {
		return s.abandon(ctx, claim.Lease, err, false)
	}
	stored := resp
	if verr := resp.check(s.maxResponseBytes); verr != nil {
		stored = s.standIn(resp, verr)
	}
	t := traceOf(ctx)
	cctx := start(ctx, t.CommitStart, idemtrace.CommitStartInfo{Request: "UpdateItem"})
	expires, err := claim.Lease.record(cctx, stored)
	event(cctx, t.CommitDone, idemtrace.CommitDoneInfo{Err: err})
	if err != nil {
		return Result{Response: resp, Outcome: OutcomeNotRecorded}, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	s.remember(id, fingerprint, stored, expires)
	s.executed(ctx, claim.Lease)
	return Result{Response: resp, Outcome: claim.Outcome}, nil
}
