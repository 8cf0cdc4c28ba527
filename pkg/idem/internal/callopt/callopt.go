// Package callopt carries per-call settings of pkg/idem in a context, so
// its sub-packages (pkg/idem/idemhttp) can set them for one call without
// pkg/idem exporting another name.
package callopt

import (
	"context"
	"time"
)

type waitKey struct{}

// wait is the value under waitKey; set is false after Clear.
type wait struct {
	d   time.Duration
	set bool
}

// WithWait returns ctx with a call's maximum wait for a live holder of
// its key: it replaces the store's WithWait for calls made with it. A
// wait of 0 or less turns waiting off for them.
func WithWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, waitKey{}, wait{d: max(d, 0), set: true})
}

// Clear returns ctx without a call's wait, so the calls an operation
// makes in its own right (a handler calling the store) use the store's.
func Clear(ctx context.Context) context.Context {
	if _, ok := Wait(ctx); !ok {
		return ctx
	}
	return context.WithValue(ctx, waitKey{}, wait{})
}

// Wait returns the wait WithWait set on ctx; ok is false when none is.
func Wait(ctx context.Context) (d time.Duration, ok bool) {
	w, _ := ctx.Value(waitKey{}).(wait)
	return w.d, w.set
}
