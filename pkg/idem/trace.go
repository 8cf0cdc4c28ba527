package idem

import (
	"context"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// WithTrace has the store report every call's phases to t (see
// pkg/idem/idemtrace), after a trace the call's context carries
// (idemtrace.WithTrace). A nil hook of t costs nothing.
func WithTrace(t *idemtrace.Trace) Option { return func(s *Store) { s.trace = t } }

// traceFor is the trace of a call made with ctx: its context's, the
// store's, or both; noTrace when neither.
func (s *Store) traceFor(ctx context.Context) *idemtrace.Trace {
	t := idemtrace.ContextTrace(ctx)
	switch {
	case t == nil && s.trace == nil:
		return noTrace
	case t == nil:
		return s.trace
	case s.trace == nil:
		return t
	}
	return idemtrace.Compose(t, s.trace)
}

// noTrace is the trace of a call that has none: every hook nil.
var noTrace = &idemtrace.Trace{}

// traceOf is the trace of the call whose phases run with ctx (admit puts
// it there), never nil.
func traceOf(ctx context.Context) *idemtrace.Trace {
	if c, ok := ctx.Value(scopeKey{}).(*callCtx); ok {
		return c.trace
	}
	return noTrace
}

// start calls a Start hook, if set, and returns the phase's context.
func start[I any](ctx context.Context, hook func(context.Context, I) context.Context, info I) context.Context {
	if hook == nil {
		return ctx
	}
	if got := hook(ctx, info); got != nil {
		return got
	}
	return ctx
}

// event calls a Done or event hook, if set.
func event[I any](ctx context.Context, hook func(context.Context, I), info I) {
	if hook != nil {
		hook(ctx, info)
	}
}

// callEffect calls fn, the call's operation, reported to ctx's trace as
// its effect.
func callEffect[T any](ctx context.Context, lease time.Time, fn func(context.Context) (T, error)) (T, error) {
	t := traceOf(ctx)
	if t.EffectStart == nil && t.EffectDone == nil {
		return fn(ctx)
	}
	ctx = start(ctx, t.EffectStart, idemtrace.EffectStartInfo{LeaseExpiresAt: lease})
	panicking := true
	defer func() {
		if panicking {
			event(ctx, t.EffectDone, idemtrace.EffectDoneInfo{Panicked: true})
		}
	}()
	v, err := fn(ctx)
	panicking = false
	event(ctx, t.EffectDone, idemtrace.EffectDoneInfo{Err: err})
	return v, err
}
