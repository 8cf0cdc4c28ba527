package idem

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/callopt"
)

// The polls of a waiting duplicate. When the store knows how long the
// holder's operation takes (the executions of its scope's operation it
// ran, or watched complete), they aim at the holder's expected
// completion: the claim's created_at, plus that time, plus a
// transaction's; they get there in steps of at most waitMaxPoll, and past
// it the steps start at waitFirstPoll and double up to waitMaxPoll. When
// it knows nothing, the pauses are full jitter under a limit that starts
// at waitFirstPoll and doubles up to waitMaxPoll. Either way no pause is
// longer than waitMaxPoll, so a waiter sees a completion at most that
// long after it lands.
const (
	waitFirstPoll = 25 * time.Millisecond
	waitMaxPoll   = 500 * time.Millisecond
	// waitAnswerTime is what a wait leaves before the caller's context
	// deadline, to answer (a 409, a replay) before the caller gives up.
	waitAnswerTime = 100 * time.Millisecond
)

// WithWait makes a duplicate that finds its key held by a live holder
// wait up to max for the holder's response instead of answering
// ErrInFlight at once: it polls the record with consistent reads and
// replays the response when the holder completes (ErrKeyReuse if the
// holder's payload differs). The polls aim at when the holder should be
// done: the store learns how long each operation's executions take
// (those it runs, and those it watches complete), so a waiter polls
// about once per 500 ms until the holder's claim plus that time, then
// more often; for an operation it knows nothing of yet, it polls at
// full jitter under a limit of 25 ms doubling to 500 ms. No two polls are
// more than 500 ms apart. It answers ErrInFlight (409 with Retry-After)
// only when the wait runs out, or when the holder dies (its lease ends
// without a completion): the key is then taken over by the client's
// retry, never inside the wait. A wait never runs past the caller's
// context deadline: it stops 100 ms before it.
//
// A duplicate that meets the key in a running transaction (its holder
// committing, or another Transact caller claiming it) waits about what
// a transaction takes (the store's average), then reads the record once
// rather than send its own write again: one consistent GetItem, which
// costs a read unit where a transaction cancelled on the record costs a
// write unit per item. Without a wait it answers ErrInFlight at once.
//
// It applies to Execute, Run and Do, and to Transact meeting a live
// Execute or Run holder or a running commit; ExecuteBatch reports
// in-flight items at once. Each read is one consistent GetItem. 0 (the
// default) means no wait; idemhttp.Middleware's Wait sets it per request.
func WithWait(max time.Duration) Option { return func(s *Store) { s.wait = max } }

// waiting is one call's budget for waiting out live holders, across the
// claims it makes: it starts at the first wait and ends at the call's
// maximum wait or before ctx's deadline, whichever comes first.
type waiting struct {
	max   time.Duration
	end   time.Time
	begun bool
	// follow: without a wait, a claim that meets its key in a running
	// transaction still follows it once (callopt.WithFollow).
	follow bool
}

// waitOf is the wait of a call made with ctx: idemhttp's per-call setting,
// else the store's.
func (s *Store) waitOf(ctx context.Context) *waiting {
	d := s.wait
	if cd, ok := callopt.Wait(ctx); ok {
		d = cd
	}
	return &waiting{max: d, follow: callopt.Follow(ctx)}
}

// on reports whether the call waits at all.
func (w *waiting) on() bool { return w.max > 0 }

// follows reports whether a claim that meets its key in a running
// transaction follows it (waits about a transaction's time, then reads
// the record once) rather than answer in flight at once: with a wait,
// or for a way in whose source would deliver the call again
// (callopt.WithFollow).
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

// seen is the record a wait ended on, and the time it was judged at.
type seen struct {
	rec   record
	found bool
	at    time.Time
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
// schedule described above WithWait, until it no longer shows a live
// holder: then it returns the record as read (found is false when it is
// gone: claim again), for the caller to judge. It returns an
// *InFlightError when the wait runs out or ctx ends first, or when the
// holder dies: its lease ends without a completion. A takeover is left
// to the client's retry, so a waiter never runs the operation in a dead
// holder's place.
func (s *Store) awaitHolder(ctx context.Context, id, fingerprint, token string, w *waiting, last record) (_ seen, err error) {
	w.start(ctx)
	ctx, wt := startWait(ctx, idemtrace.WaitStartInfo{Reason: idemtrace.WaitHolder, HolderLeaseExpiresAt: last.LeaseExpiresAt, Until: w.end})
	defer func() { wt.done(err) }()
	retryAfter := untilFree(last, s.now())
	polls := s.pollsFor(ctx, last)
	for {
		if err := w.pause(ctx, polls.next(), retryAfter); err != nil {
			return seen{}, err
		}
		rec, found, err := s.poll(ctx, id)
		wt.poll(rec, found, err, fingerprint, token, s.now)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
				// Out of time mid-read: the holder was live when last seen.
				return seen{}, &InFlightError{RetryAfter: retryAfter}
			}
			return seen{}, err
		}
		now := s.now()
		if !found {
			return seen{at: now}, nil // released: the key is free
		}
		switch v := judge(rec, fingerprint, token, now); {
		case v == verdictInFlight:
			retryAfter = untilFree(rec, now)
			continue
		case v == verdictAbsent && !rec.Expired(now):
			// The holder died: its lease ended with no completion.
			return seen{}, &InFlightError{RetryAfter: untilFree(rec, now)}
		}
		s.learnExec(ctx, rec)
		return seen{rec: rec, found: true, at: now}, nil
	}
}

// polls is a waiter's schedule (see above WithWait): due is the holder's
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
	exec, ok := s.execTime(scope.Operation)
	if !ok {
		return &polls{}
	}
	// created_at is on the holder's clock, as s.now is on this store's;
	// the wait itself runs on time.Now.
	until := holder.CreatedAt.Add(exec + s.txTime()).Sub(s.now())
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
