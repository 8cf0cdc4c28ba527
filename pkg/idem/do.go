package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Do runs fn at most once per scope and payload fingerprint, for effects
// outside DynamoDB (an e-mail, a payment API call). The value fn returns is
// stored as JSON and replayed, decoded, to every later call with the same
// key and payload.
//
// Do reserves the key, runs fn, then completes the key with a fenced
// UpdateItem. If fn fails, the reservation is released (on a context
// detached from ctx's cancellation) so a retry can run at once, and Do
// returns fn's error with the outcome OutcomeReleased.
//
// The one window Do cannot close: fn's effect happened but the completion
// did not land (the process died, the write failed, or the lease ended and
// another caller took over). A retry after the lease ends runs fn again.
// Do reports the lost completion as an error wrapping ErrNotRecorded and
// still returns fn's value, because the effect did happen. Only an effect
// that is itself idempotent (pass the scope's key to the payment API) or
// that commits with the completion, as Lease.Commit does for DynamoDB
// writes, closes it.
func Do[T any](ctx context.Context, s *Store, scope Scope, fingerprint string, fn func(context.Context) (T, error)) (T, Outcome, error) {
	var zero T
	claim, err := s.Reserve(ctx, scope, fingerprint)
	if err != nil {
		return zero, OutcomeOf(err), err
	}
	if claim.Replay != nil {
		var v T
		if err := json.Unmarshal(claim.Replay.Body, &v); err != nil {
			return zero, OutcomeReplayed, fmt.Errorf("%w: stored value: %w", ErrCorruptRecord, err)
		}
		return v, OutcomeReplayed, nil
	}
	lease := claim.Lease
	v, err := fn(ctx)
	if err != nil {
		if rerr := lease.Release(ctx); rerr != nil {
			return zero, OutcomeOf(rerr), errors.Join(err, rerr)
		}
		return zero, OutcomeReleased, err
	}
	body, err := json.Marshal(v)
	if err != nil {
		return v, claim.Outcome, fmt.Errorf("%w: encode result: %w", ErrNotRecorded, err)
	}
	// The effect is done: record it even if the caller has gone away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.releaseTimeout)
	defer cancel()
	resp := Response{Status: http.StatusOK, Headers: map[string]string{"Content-Type": "application/json"}, Body: body}
	if err := lease.Complete(ctx, resp); err != nil {
		return v, OutcomeOf(err), fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return v, claim.Outcome, nil
}
