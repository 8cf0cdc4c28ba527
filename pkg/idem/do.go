package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// Do is Run for a typed value: fn runs at most once per scope and
// payload fingerprint, and the value it returns is stored as JSON, so
// every later call with the same key and payload gets it back, decoded,
// without running fn. A value that cannot be encoded is returned with an
// error wrapping ErrNotRecorded; one too large to store is returned to
// the first call, and its replays get ErrResponseTooLarge.
func Do[T any](ctx context.Context, s *Store, scope Scope, fingerprint string, fn func(context.Context) (T, error), opts ...CallOption) (T, Outcome, error) {
	var v T
	res, err := s.admit(ctx, idemtrace.WayDo, scope, fingerprint, opts, s.claiming(fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
		return s.run(ctx, id, fingerprint, claim, encode(fn, &v))
	}), func(res Result, err error) (Result, error) {
		if res.Outcome == OutcomeReplayed {
			v, err = decode[T](res.Response)
		}
		return res, err
	})
	return v, res.Outcome, err
}

// encode is Run's function for Do's fn: it runs fn, keeps its value in v
// (also when fn says its effect happened unrecorded), and stores the
// value's JSON.
func encode[T any](fn func(context.Context) (T, error), v *T) func(context.Context) (Response, error) {
	return func(ctx context.Context) (Response, error) {
		out, err := fn(ctx)
		if errors.Is(err, ErrNotRecorded) {
			*v = out // its effect happened: the caller gets what it made
		}
		if err != nil {
			return Response{}, err
		}
		*v = out
		body, err := json.Marshal(out)
		if err != nil {
			return Response{}, fmt.Errorf("%w: encode result: %w", ErrNotRecorded, err)
		}
		return Response{Body: body}, nil
	}
}

// decode is the value a replay of Do's stored JSON gives back.
func decode[T any](stored Response) (T, error) {
	var v T
	if why := stored.Omitted; why != "" {
		return v, fmt.Errorf("%w: the first call's value was not stored (%s); it ran once", ErrResponseTooLarge, why)
	}
	if err := json.Unmarshal(stored.Body, &v); err != nil {
		return v, fmt.Errorf("%w: stored value: %w", errCorruptRecord, err)
	}
	return v, nil
}
