package idem

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// A waiting duplicate's polls (the package documentation's "Waits") go
// toward its holder's expected completion in steps of at most
// waitMaxPoll, then from waitFirstPoll doubling up to waitMaxPoll; with
// nothing learned of the operation, at full jitter under that limit.
const (
	waitFirstPoll = 25 * time.Millisecond
	waitMaxPoll   = 500 * time.Millisecond
	// waitAnswerTime is what a wait leaves before the caller's context
	// deadline, to answer (a 409, a replay) before the caller gives up.
	waitAnswerTime = 100 * time.Millisecond
)

// WithWait makes a duplicate that finds its key held by a live holder
// wait up to max for the holder's response (a replay, or ErrKeyReuse)
// instead of answering ErrInFlight at once, reading the record with
// consistent GetItems; it answers ErrInFlight when the wait runs out or
// the holder dies. It applies to Execute, Run, Do and Transact, not to
// ExecuteBatch; 0 (the default) means no wait. The package
// documentation's "Waits" gives the schedule.
func WithWait(max time.Duration) Option { return func(s *Store) { s.wait = max } }

// waiting is one call's budget for waiting out live holders, across the
// claims it makes: it starts at the first wait and ends at the call's
// maximum wait or before ctx's deadline, whichever comes first.
type waiting struct {
	max   time.Duration
	end   time.Time
	begun bool
	// follow: without a wait, a claim that meets its key in a running
	// transaction still follows it once (CallRedelivers).
	follow bool
}

// waitOf is the wait of a call made with ctx: its CallWait, else the
// store's.
func (s *Store) waitOf(ctx context.Context) *waiting {
	c := s.settingsFor(ctx)
	return &waiting{max: c.wait, follow: c.redelivers}
}

// on reports whether the call waits at all.
func (w *waiting) on() bool { return w.max > 0 }

// follows reports whether a claim that meets its key in a running
// transaction follows it (waits about a transaction's time, then reads
// the record once) rather than answer in flight at once: with a wait,
// or for a way in whose source would deliver the call again
// (CallRedelivers).
func (w *waiting) follows() bool { return w.on() || w.follow }

// start fixes the end of the wait at its first use.
func (w *waiting) start(ctx context.Context) {
	if w.begun {
		return
	}
	w.begun = true
	w.end = time.Now().Add(w.max)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-waitAnswerTime).Before(w.end) {
		w.end = dl.Add(-waitAnswerTime)
	}
}

// pause waits d, or with a wait what is left of it if that is less; it
// returns an *InFlightError when the wait has run out or ctx ends first,
// with retryAfter in it.
func (w *waiting) pause(ctx context.Context, d, retryAfter time.Duration) error {
	if w.on() {
		w.start(ctx)
		left := time.Until(w.end)
		if left <= 0 {
			return &InFlightError{RetryAfter: retryAfter}
		}
		d = min(d, left)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return &InFlightError{RetryAfter: retryAfter}
	case <-t.C:
		return nil
	}
}

// awaitHolder follows a record that a live holder has IN_PROGRESS, with
// consistent reads (they never conflict with the holder's writes) on the
// schedule the poll constants describe, until it no longer shows a live
// holder: then it returns the record as read (found is false when it is
// gone: claim again), for the caller to judge. It returns an
// *InFlightError when the wait runs out or ctx ends first, or when the
// holder dies: its lease ends without a completion. A takeover is left
// to the client's retry, so a waiter never runs the operation in a dead
// holder's place.
func (s *Store) awaitHolder(ctx context.Context, id, fingerprint, token string, w *waiting, last record) (_ met, err error) {
	w.start(ctx)
	ctx, wt := startWait(ctx, idemtrace.WaitStartInfo{Reason: idemtrace.WaitHolder, HolderLeaseExpiresAt: last.LeaseExpiresAt, Until: w.end})
	defer func() { wt.done(err) }()
	retryAfter := untilFree(last, s.now())
	polls := s.pollsFor(ctx, last)
	for {
		if err := w.pause(ctx, polls.next(), retryAfter); err != nil {
			return met{}, err
		}
		rec, found, err := s.poll(ctx, id)
		wt.poll(rec, found, err, fingerprint, token, s.now)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
				// Out of time mid-read: the holder was live when last seen.
				return met{}, &InFlightError{RetryAfter: retryAfter}
			}
			return met{}, err
		}
		now := s.now()
		if !found {
			return met{at: now}, nil // released: the key is free
		}
		switch v := judge(rec, fingerprint, token, now); {
		case v == verdictInFlight:
			retryAfter = untilFree(rec, now)
			continue
		case v == verdictAbsent && !rec.Expired(now):
			// The holder died: its lease ended with no completion.
			return met{}, &InFlightError{RetryAfter: untilFree(rec, now)}
		}
		s.learned.sawExec(ctx, rec)
		return met{rec: rec, found: true, at: now}, nil
	}
}

// polls is a waiter's schedule (the poll constants): due is the holder's
// expected completion on time.Now's clock, zero when unknown; n counts
// the polls of the blind schedule, or those past due.
type polls struct {
	due time.Time
	n   int
}

// pollsFor is the schedule of a wait for holder, the record of a claim
// made by a call of ctx's scope's operation.
func (s *Store) pollsFor(ctx context.Context, holder record) *polls {
	scope, ok := ScopeFrom(ctx)
	if !ok || holder.Status != statusInProgress || holder.CreatedAt.IsZero() {
		return &polls{}
	}
	exec, ok := s.learned.execTime(scope.Operation)
	if !ok {
		return &polls{}
	}
	// created_at is on the holder's clock, as s.now is on this store's;
	// the wait itself runs on time.Now.
	until := holder.CreatedAt.Add(exec + s.learned.txTime()).Sub(s.now())
	return &polls{due: time.Now().Add(until)}
}

// next is the pause before the next poll.
func (p *polls) next() time.Duration {
	if !p.due.IsZero() {
		if until := time.Until(p.due); until > 0 {
			return min(until, waitMaxPoll)
		}
	}
	limit := min(waitFirstPoll<<min(p.n, 5), waitMaxPoll)
	p.n++
	if p.due.IsZero() {
		return time.Duration(rand.Int64N(int64(limit)))
	}
	return limit
}

// poll reads the record once, consistently; with a deadline on ctx, the
// read ends half the answer time before it, so a slow read still leaves
// time to answer.
func (s *Store) poll(ctx context.Context, id string) (record, bool, error) {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-waitAnswerTime/2))
		defer cancel()
	}
	return s.current(ctx, id, nil)
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
