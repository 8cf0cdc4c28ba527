package idem

import (
	"context"
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/home"
)

// ValidateCall reports why s would refuse a call with opts, or nil: for
// an adapter to refuse its configuration when it is built rather than at
// its first call.
func (s *Store) ValidateCall(opts ...CallOption) error {
	_, err := s.settings(opts)
	return err
}

// settings is the settings of a call with opts: the store's, with opts
// applied.
func (s *Store) settings(opts []CallOption) (callSettings, error) {
	c := s.defaults()
	for _, o := range opts {
		if o.set != nil {
			o.set(&c)
		}
	}
	if c.retention < s.lease+s.margin {
		return c, fmt.Errorf("idem: retention %v shorter than a lease (%v)", c.retention, s.lease+s.margin)
	}
	return c, nil
}

// settingsFor is the settings of the call whose phases run with ctx; the
// store's outside a call.
func (s *Store) settingsFor(ctx context.Context) callSettings {
	if c, ok := settingsOf(ctx); ok {
		return c
	}
	return s.defaults()
}

// defaults is the settings of a call with no CallOption: the store's.
func (s *Store) defaults() callSettings {
	return callSettings{wait: s.wait, retention: s.retention}
}

// admit is the one admission step of every way in (see the package
// documentation): enter, then call with the scope, the trace and the
// call's settings in its context, then finish (when set) to turn its
// result into the way in's own, reported to the trace's CallDone.
func (s *Store) admit(ctx context.Context, way idemtrace.Way, scope Scope, fingerprint string, opts []CallOption,
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
	settings, err := s.settings(opts) // a configuration's error: OutcomeError
	id, res, done := "", Result{Outcome: OutcomeError}, err != nil
	if !done {
		id, res, err, done = s.enter(ctx, t, scope, fingerprint, nil)
	}
	if !done {
		cctx := withCall(ctx, scope, true, t, settings)
		if cctx, err = s.routeTo(cctx, scope); err != nil {
			res = Result{Outcome: outcomeOf(err)}
		} else {
			res, err = call(cctx, id)
		}
	}
	if finish != nil {
		res, err = finish(res, err)
	}
	panicking = false
	event(ctx, t.CallDone, idemtrace.CallDoneInfo{Way: way, Operation: scope.Operation, ScopeID: sid, Outcome: string(res.Outcome), Err: err})
	return res, err
}

// enter is admission's first step: a scope NewScope would not have made,
// or whose ID its layout cannot hold, is rejected, and so is a
// fingerprint no record should hold and a call valid (when set) refuses
// (each bound keeps the record within DynamoDB's item); a key the
// cache holds answers from it (reported to t). The refusals come before
// the cache, so a cached key never answers a call the table would
// refuse. done is true when res and err are the call's answer; else id
// is the scope's record id.
func (s *Store) enter(ctx context.Context, t *idemtrace.Trace, scope Scope, fingerprint string, valid func() error) (id string, res Result, err error, done bool) {
	if err := s.check(scope); err != nil {
		return "", Result{Outcome: OutcomeRejected}, err, true
	}
	if err := checkFingerprint(fingerprint); err != nil {
		return "", Result{Outcome: OutcomeRejected}, err, true
	}
	if valid != nil {
		if err := valid(); err != nil {
			return "", Result{Outcome: OutcomeRejected}, err, true
		}
	}
	id = scope.ID()
	if res, err, hit := s.cache.answer(id, fingerprint, s.now()); hit {
		event(ctx, t.CacheHit, idemtrace.CacheHitInfo{Operation: scope.Operation, ScopeID: id, Outcome: string(res.Outcome)})
		return id, res, err, true
	}
	return id, Result{}, nil, false
}

// routeTo is ctx routed to scope's home, with Homes (WithHomes); ctx
// as it is without, naming the store's Region for its operation if it
// has one (WithRegion). The table's kind is learned first, once per
// store, and a call the store cannot make safe on it refused (ready).
func (s *Store) routeTo(ctx context.Context, scope Scope) (context.Context, error) {
	if err := s.ready(ctx); err != nil {
		return ctx, err
	}
	if s.homes == nil {
		if s.region != "" {
			ctx = home.WithWriter(ctx, home.Writer{Region: s.region})
		}
		return ctx, nil
	}
	r, err := s.homes.route(ctx, scope)
	if err != nil {
		return ctx, err
	}
	return routed(ctx, r), nil
}

// check is Scope.check, and that the scope's ID fits the key of the
// store's layout (a sort key holds 1024 bytes, a prefix takes its share).
func (s *Store) check(scope Scope) error {
	if err := scope.check(); err != nil {
		return err
	}
	return scope.fits(s.layout.MaxIDLength(), " in this table's layout")
}
