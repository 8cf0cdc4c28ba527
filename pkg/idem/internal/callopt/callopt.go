// Package callopt carries per-call settings of pkg/idem in a context, so
// its sub-packages (pkg/idem/idemhttp, pkg/idem/idemevent, the queue and
// stream ways in) can set them for one call without pkg/idem exporting
// another name.
package callopt

import (
	"context"
	"time"
)

type key struct{}

// opts is the value under key.
type opts struct {
	wait    time.Duration
	waitSet bool
	follow  bool
}

func get(ctx context.Context) opts {
	o, _ := ctx.Value(key{}).(opts)
	return o
}

// WithWait returns ctx with a call's maximum wait for a live holder of
// its key: it replaces the store's WithWait for calls made with it. A
// wait of 0 or less turns waiting off for them.
func WithWait(ctx context.Context, d time.Duration) context.Context {
	o := get(ctx)
	o.wait, o.waitSet = max(d, 0), true
	return context.WithValue(ctx, key{}, o)
}

// WithFollow returns ctx for a call whose answer "in flight" costs more
// than a read: a way in whose source delivers the call again later (an
// event, a queue message). A claim that meets its key in another
// request's running transaction then waits about what a transaction
// takes and reads the record once, rather than answer in flight at
// once.
func WithFollow(ctx context.Context) context.Context {
	o := get(ctx)
	o.follow = true
	return context.WithValue(ctx, key{}, o)
}

// Clear returns ctx without a call's settings, so the calls an operation
// makes in its own right (a handler calling the store) use the store's.
func Clear(ctx context.Context) context.Context {
	if get(ctx) == (opts{}) {
		return ctx
	}
	return context.WithValue(ctx, key{}, opts{})
}

// Wait returns the wait WithWait set on ctx; ok is false when none is.
func Wait(ctx context.Context) (d time.Duration, ok bool) {
	o := get(ctx)
	return o.wait, o.waitSet
}

// Follow reports whether WithFollow set ctx.
func Follow(ctx context.Context) bool { return get(ctx).follow }
