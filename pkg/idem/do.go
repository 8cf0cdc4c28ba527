package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Do runs fn at most once per scope and payload fingerprint, for effects
// outside DynamoDB, and stores the value fn returns as JSON: every later
// call with the same key and payload gets it back, decoded, without
// running fn. It is Run for a typed value; Run's documentation gives the
// guarantees and the one window an outside effect leaves open. A value
// that cannot be encoded is returned with an error wrapping
// ErrNotRecorded, like a completion that failed. A value too large to
// store is returned to the first call; its replays get ErrResponseTooLarge,
// and the effect still runs once.
func Do[T any](ctx context.Context, s *Store, scope Scope, fingerprint string, fn func(context.Context) (T, error)) (T, Outcome, error) {
	v, outcome, err := do(ctx, s, scope, fingerprint, fn)
	s.observe(ctx, scope, outcome, err)
	return v, outcome, err
}

func do[T any](ctx context.Context, s *Store, scope Scope, fingerprint string, fn func(context.Context) (T, error)) (T, Outcome, error) {
	var v T
	res, err := s.run(ctx, scope, fingerprint, func(ctx context.Context) (Response, error) {
		out, err := fn(ctx)
		if errors.Is(err, ErrNotRecorded) {
			v = out // its effect happened: the caller gets what it made
		}
		if err != nil {
			return Response{}, err
		}
		v = out
		body, err := json.Marshal(out)
		if err != nil {
			return Response{}, fmt.Errorf("%w: encode result: %w", ErrNotRecorded, err)
		}
		return Response{Status: http.StatusOK, Headers: map[string]string{"Content-Type": "application/json"}, Body: body}, nil
	})
	if res.Outcome != OutcomeReplayed {
		return v, res.Outcome, err
	}
	var stored T
	if why := res.Response.Headers[headerBodyOmitted]; why != "" {
		return stored, OutcomeReplayed, fmt.Errorf("%w: the first call's value was not stored (%s); it ran once", ErrResponseTooLarge, why)
	}
	if err := json.Unmarshal(res.Response.Body, &stored); err != nil {
		return stored, OutcomeReplayed, fmt.Errorf("%w: stored value: %w", errCorruptRecord, err)
	}
	return stored, OutcomeReplayed, nil
}
