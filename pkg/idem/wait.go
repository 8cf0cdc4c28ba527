package idem

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/callopt"
)

// The polling of a waiting duplicate: full jitter under a limit that
// starts at waitFirstPoll and doubles up to waitMaxPoll, so a holder that
// finishes soon is seen soon, and a slow one costs a read every quarter
// second on average.
const (
	waitFirstPoll = 25 * time.Millisecond
	waitMaxPoll   = 500 * time.Millisecond
	// waitAnswerTime is what a wait leaves before the caller's context
	// deadline, to answer (a 409, a replay) before the caller gives up.
	waitAnswerTime = 100 * time.Millisecond
)

// WithWait makes a duplicate that finds its key held by a live holder
// wait up to max for the holder's response instead of answering
// ErrInFlight at once: it polls the record with consistent reads (full
// jitter, 25 ms doubling to 500 ms) and replays the response when the
// holder completes (ErrKeyReuse if the holder's payload differs). It
// answers ErrInFlight (409 with Retry-After) only when the wait runs out,
// or when the holder dies (its lease ends without a completion): the key
// is then taken over by the client's retry, never inside the wait. A wait
// never runs past the caller's context deadline: it stops 100 ms before
// it. It applies to Execute, Run and Do, and to Transact meeting a live
// Execute or Run holder; ExecuteBatch reports in-flight items at once.
// Each read is one consistent GetItem. 0 (the default) means no wait;
// idemhttp.Middleware's Wait sets it per request.
func WithWait(max time.Duration) Option { return func(s *Store) { s.wait = max } }

// waiting is one call's budget for waiting out live holders, across the
// claims it makes: it starts at the first wait and ends at the call's
// maximum wait or before ctx's deadline, whichever comes first.
type waiting struct {
	max   time.Duration
	end   time.Time
	begun bool
}

// waitOf is the wait of a call made with ctx: idemhttp's per-call setting,
// else the store's.
func (s *Store) waitOf(ctx context.Context) *waiting {
	d := s.wait
	if cd, ok := callopt.Wait(ctx); ok {
		d = cd
	}
	return &waiting{max: d}
}

// on reports whether the call waits at all.
func (w *waiting) on() bool { return w.max > 0 }

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

// awaitHolder follows a record that a live holder has IN_PROGRESS, with
// consistent reads (they never conflict with the holder's writes) and
// full jitter, until it no longer shows a live holder: then it returns
// the record as read (found is false when it is gone: claim again), for
// the caller to judge. It returns an *InFlightError when the wait runs
// out or ctx ends first, or when the holder dies: its lease ends without
// a completion. A takeover is left to the client's retry, so a waiter
// never runs the operation in a dead holder's place.
func (s *Store) awaitHolder(ctx context.Context, id, fingerprint, token string, w *waiting, last record) (_ seen, err error) {
	w.start(ctx)
	ctx, wt := startWait(ctx, idemtrace.WaitStartInfo{Reason: idemtrace.WaitHolder, HolderLeaseExpiresAt: last.LeaseExpiresAt, Until: w.end})
	defer func() { wt.done(err) }()
	retryAfter := untilFree(last, s.now())
	for i := 0; ; i++ {
		left := time.Until(w.end)
		if left <= 0 {
			return seen{}, &InFlightError{RetryAfter: retryAfter}
		}
		limit := min(waitFirstPoll<<min(i, 5), waitMaxPoll)
		pause := min(time.Duration(rand.Int64N(int64(limit))), left)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return seen{}, &InFlightError{RetryAfter: retryAfter}
		case <-t.C:
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
		return seen{rec: rec, found: true, at: now}, nil
	}
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
