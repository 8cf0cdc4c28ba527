package idem

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// The trace hook (pkg/idem/idemtrace) at the seams every way in shares:
// admission (admit, enter, and ExecuteBatch's), the claim (claiming,
// reserve's attempts), the waits (waitOut, awaitHolder), the effect, the
// commits (execute, run, transact, lease.commit and record), retries
// (retryConflicts), the release, and a batch's transactions.

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

// claimResult is what a claim makes of a record judged v.
func claimResult(v verdict) idemtrace.ClaimResult {
	switch v {
	case verdictOwn:
		return idemtrace.ClaimWon
	case verdictReplay:
		return idemtrace.ClaimReplayed
	case verdictKeyReuse:
		return idemtrace.ClaimKeyReuse
	case verdictInFlight:
		return idemtrace.ClaimInFlight
	}
	return idemtrace.ClaimExpired
}

// seenRecord is what a claim attempt or a poll that read rec (found
// false: none) at now makes of it, for a trace.
func seenRecord(rec record, found bool, fingerprint, token string, now time.Time) (idemtrace.ClaimResult, time.Time, time.Duration) {
	if !found {
		return idemtrace.ClaimGone, time.Time{}, 0
	}
	switch v := judge(rec, fingerprint, token, now); v {
	case verdictInFlight:
		return idemtrace.ClaimInFlight, rec.LeaseExpiresAt, untilFree(rec, now)
	case verdictAbsent:
		if rec.Status == statusInProgress {
			return idemtrace.ClaimExpired, rec.LeaseExpiresAt, 0 // a dead holder's
		}
		return idemtrace.ClaimExpired, time.Time{}, 0
	default:
		return claimResult(v), time.Time{}, 0
	}
}

// errResult is the claim result of a claim, wait or transaction that
// failed with err.
func errResult(err error) (idemtrace.ClaimResult, time.Duration) {
	var inflight *InFlightError
	switch {
	case errors.As(err, &inflight):
		return idemtrace.ClaimInFlight, inflight.RetryAfter
	case errors.Is(err, ErrKeyReuse):
		return idemtrace.ClaimKeyReuse, 0
	case isConflict(err):
		return idemtrace.ClaimConflict, 0
	}
	return idemtrace.ClaimError, 0
}

// traceAttempt reports a reserve-mode claim's attempt-th conditional
// write, a, which returned err.
func traceAttempt(ctx context.Context, n int, a attempt, err error, fingerprint string) {
	t := traceOf(ctx)
	if t.ClaimAttempt == nil {
		return
	}
	info := idemtrace.ClaimAttemptInfo{Attempt: n, Err: err}
	switch {
	case err != nil:
		info.Result, info.RetryAfter = errResult(err)
	case a.claim.Outcome == OutcomeTakeover:
		info.Result, info.HolderLeaseExpiresAt = idemtrace.ClaimTakeover, a.claim.deadLease
	case a.claim.Outcome != "":
		info.Result = idemtrace.ClaimWon
	default:
		var rec record
		if a.current != nil {
			rec = *a.current
		}
		info.Result, info.HolderLeaseExpiresAt, info.RetryAfter = seenRecord(rec, a.current != nil, fingerprint, a.token, a.now)
	}
	t.ClaimAttempt(ctx, info)
}

// claimDone reports the end of a reserve-mode claim.
func claimDone(ctx context.Context, t *idemtrace.Trace, c claimed, err error) {
	if t.ClaimDone == nil {
		return
	}
	info := idemtrace.ClaimDoneInfo{Err: err}
	switch {
	case err != nil:
		info.Result, info.RetryAfter = errResult(err)
	case c.Outcome == OutcomeTakeover:
		info.Result, info.HolderLeaseExpiresAt = idemtrace.ClaimTakeover, c.deadLease
	case c.Replay != nil:
		info.Result = idemtrace.ClaimReplayed
	default:
		info.Result = idemtrace.ClaimWon
	}
	t.ClaimDone(ctx, info)
}

// traceDecided reports the n-th transaction of a Transact call, which a
// read of its record decided after a conflict: its answer res, err.
func traceDecided(ctx context.Context, t *idemtrace.Trace, n int, res Result, err error) {
	if t.ClaimAttempt == nil {
		return
	}
	info := idemtrace.ClaimAttemptInfo{Attempt: n, Err: err}
	switch res.Outcome {
	case OutcomeExecuted:
		info.Result = idemtrace.ClaimWon
	case OutcomeReplayed:
		info.Result = idemtrace.ClaimReplayed
	default:
		info.Result, info.RetryAfter = errResult(err)
	}
	t.ClaimAttempt(ctx, info)
}

// traceRetry reports that the attempt-th write of the current phase was
// refused with err and is tried again.
func traceRetry(ctx context.Context, attempt int, err error) {
	t := traceOf(ctx)
	if t.Retry == nil {
		return
	}
	info := idemtrace.RetryInfo{Attempt: attempt, Index: -1, Err: err}
	var txErr *txError
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &txErr):
		info.Reason, info.Index = txErr.Code, txErr.Index
	case errors.As(err, &apiErr):
		info.Reason = apiErr.ErrorCode()
	}
	t.Retry(ctx, info)
}

// waitTrace is one wait's report to its call's trace.
type waitTrace struct {
	t     *idemtrace.Trace
	ctx   context.Context
	polls int
	last  idemtrace.ClaimResult
}

// startWait begins a wait's report, and returns the context of the wait.
func startWait(ctx context.Context, info idemtrace.WaitStartInfo) (context.Context, *waitTrace) {
	t := traceOf(ctx)
	if t.WaitStart == nil && t.WaitPoll == nil && t.WaitDone == nil {
		return ctx, nil
	}
	ctx = start(ctx, t.WaitStart, info)
	return ctx, &waitTrace{t: t, ctx: ctx}
}

// poll reports one read of the wait: rec (found false: none), judged at
// now(), or the read's err.
func (w *waitTrace) poll(rec record, found bool, err error, fingerprint, token string, now func() time.Time) {
	if w == nil {
		return
	}
	w.polls++
	info := idemtrace.WaitPollInfo{Poll: w.polls, Err: err}
	if err != nil {
		info.Result = idemtrace.ClaimError
	} else {
		info.Result, _, _ = seenRecord(rec, found, fingerprint, token, now())
	}
	w.last = info.Result
	event(w.ctx, w.t.WaitPoll, info)
}

// done reports the wait's end, with the error the wait returns.
func (w *waitTrace) done(err error) {
	if w == nil {
		return
	}
	info := idemtrace.WaitDoneInfo{Polls: w.polls, Result: w.last, Err: err}
	if err != nil {
		info.Result, info.RetryAfter = errResult(err)
	}
	event(w.ctx, w.t.WaitDone, info)
}

// txReasons are the cancellation reason codes of a TransactWriteItems
// error; nil when it was no cancellation.
func txReasons(err error) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	reasons := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		reasons[i] = aws.ToString(r.Code)
	}
	return reasons
}
