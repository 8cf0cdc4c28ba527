package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// Transact is Execute with the claim in the operation's own transaction:
// fn only computes its Effect, then one TransactWriteItems commits its
// writes with the key's record, already COMPLETED. One call on a first
// execution, nothing left IN_PROGRESS; fn may run in callers that lose
// the race, so it must have no effect outside its writes. Errors are
// Execute's.
//
// On a table with multi-Region strong consistency, which has no
// transactions, Transact claims the key first and commits as Execute
// does there (the package documentation's "Global tables"): fn runs
// only in the caller that holds the key.
func (s *Store) Transact(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Effect, error), opts ...CallOption) (Result, error) {
	return s.admit(ctx, idemtrace.WayTransact, scope, fingerprint, opts, func(ctx context.Context, id string) (Result, error) {
		if s.strong(ctx) {
			return s.claiming(fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
				return s.execute(ctx, id, fingerprint, claim, fn)
			})(ctx, id)
		}
		return s.transact(ctx, id, fingerprint, fn)
	}, nil)
}

// transaction is one Transact call after admission: its claim, its wait,
// its effect, and the transactions conflicts cancelled.
type transaction struct {
	s         *Store
	c         *claim
	w         *waiting
	t         *idemtrace.Trace
	eff       Effect
	conflicts int
}

// transact is Transact after admission: one TransactWriteItems carries
// the writes and the completed record, under the claim's condition, again
// as long as decide says to claim again or a conflict may be retried.
func (s *Store) transact(ctx context.Context, id, fingerprint string, fn func(context.Context) (Effect, error)) (_ Result, err error) {
	eff, err := callEffect(ctx, time.Time{}, fn)
	if err == nil {
		err = s.checkEffect(id, eff)
	}
	if err == nil {
		err = eff.Response.check(s.maxResponseBytes)
	}
	if err != nil {
		return Result{Outcome: OutcomeReleased}, err // nothing was claimed
	}
	t := traceOf(ctx)
	if t.CommitStart != nil || t.CommitDone != nil {
		ctx = start(ctx, t.CommitStart, idemtrace.CommitStartInfo{Request: "TransactWriteItems", Writes: len(eff.Writes), Claims: true})
		defer func() { event(ctx, t.CommitDone, idemtrace.CommitDoneInfo{Err: err}) }()
	}
	w := s.waitOf(ctx)
	// One token for every attempt of this call: finding it on the record
	// means an earlier attempt landed. sentOnce: the SDK sent every
	// transaction of this call once, so none refused can have landed (one
	// sent again, its answer lost, then refused, may have).
	c := &claim{s: s, id: id, fingerprint: fingerprint, token: s.newToken(), waits: w.on(), follows: w.follows(), sentOnce: true,
		retention: s.settingsFor(ctx).retention}
	tx := &transaction{s: s, c: c, w: w, t: t, eff: eff}
	for {
		if res, err, again := tx.attempt(ctx); !again {
			return res, err
		}
	}
}

// n is the number of the transaction being answered, for the trace.
func (tx *transaction) n() int { return tx.conflicts + tx.c.again + 1 }

// attempt sends the call's transaction once and answers what came of it;
// again is true when another should follow.
func (tx *transaction) attempt(ctx context.Context) (res Result, err error, again bool) {
	s, c := tx.s, tx.c
	now := s.now()
	put, expires := s.completedPut(ctx, c, tx.eff.Response, len(tx.eff.Writes), now)
	// The claim goes first: a backend that stops at the first failed
	// condition (minidyn does) then still says whether the key is taken.
	// A fresh input per attempt: the SDK gives each its own
	// ClientRequestToken, which makes its retries of one attempt safe.
	var sent sends
	begun := time.Now()
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: append([]types.TransactWriteItem{{Put: put}}, tx.eff.Writes...),
	}, sent.option)
	c.sentOnce = c.sentOnce && sent.once()
	if err == nil {
		s.learned.tookTx(begun)
		event(ctx, tx.t.ClaimAttempt, idemtrace.ClaimAttemptInfo{Attempt: tx.n(), Result: idemtrace.ClaimWon})
		return tx.executed(expires), nil, false
	}
	if s.learnRefusal(ctx, err) {
		// A table with multi-Region strong consistency, which the store
		// had not learned: nothing was written; claim the key, and commit
		// the Effect as such a table allows.
		res, err := s.claiming(c.fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
			return s.commitEffect(ctx, id, c.fingerprint, claim, tx.eff)
		})(ctx, c.id)
		return res, err, false
	}
	err = explainTx(err, 0)
	var txErr *txError
	switch {
	case errors.Is(err, ErrLeaseLost) && errors.As(err, &txErr):
		return tx.lost(ctx, txErr.Item, now, expires)
	case retryableTx(err):
		return tx.conflicted(ctx, err, expires)
	}
	// A business condition, or an error after the SDK's retries: then the
	// transaction may have landed with every answer lost, and the record
	// says whether it did.
	if s.landed(ctx, c.id, c.token) {
		return tx.executed(expires), nil, false
	}
	return Result{Outcome: failed(err, true, true)}, err, false
}

// executed is the answer of a call whose transaction landed.
func (tx *transaction) executed(expires time.Time) Result {
	tx.s.remember(tx.c.id, tx.c.fingerprint, tx.eff.Response, expires)
	return Result{Response: tx.eff.Response, Outcome: OutcomeExecuted}
}

// answer is the answer to a record the claim met, by decide's step; done
// is false for stepAgain.
func (tx *transaction) answer(st step, err error, m met, expires time.Time) (_ Result, _ error, done bool) {
	switch st {
	case stepOwn:
		// Our own record: an earlier attempt landed, and the SDK's retry
		// of it met it (backends that ignore ClientRequestToken).
		return tx.executed(expires), nil, true
	case stepReplay:
		return tx.s.replay(tx.c.id, tx.c.fingerprint, m.rec), nil, true
	case stepRefuse:
		return Result{Outcome: outcomeOf(err)}, err, true
	}
	return Result{}, nil, false
}

// lost answers a transaction whose claim's condition failed, at now: the
// record it met (item, or read) decides.
func (tx *transaction) lost(ctx context.Context, item map[string]types.AttributeValue, now, expires time.Time) (Result, error, bool) {
	s, c := tx.s, tx.c
	rec, found, err := s.current(ctx, c.id, item)
	if err != nil {
		return Result{Outcome: outcomeOf(err)}, err, false
	}
	if tx.t.ClaimAttempt != nil {
		info := idemtrace.ClaimAttemptInfo{Attempt: tx.n()}
		info.Result, info.HolderLeaseExpiresAt, info.RetryAfter = seenRecord(rec, found, c.fingerprint, c.token, now)
		tx.t.ClaimAttempt(ctx, info)
	}
	m := met{rec: rec, found: found, at: now}
	st, err := c.decide(m)
	if st == stepAwait {
		// A live Execute or Run holder: wait for its response.
		if m, err = s.awaitHolder(ctx, c.id, c.fingerprint, c.token, tx.w, rec); err != nil {
			return Result{Outcome: outcomeOf(err)}, err, false
		}
		st, err = c.decide(m)
	}
	if res, err, done := tx.answer(st, err, m, expires); done {
		return res, err, false
	}
	// Gone, expired or a dead holder since the claim: claim again.
	if err := c.retry(); err != nil {
		return Result{Outcome: OutcomeInFlight}, err, false
	}
	return Result{}, nil, true
}

// conflicted answers a transaction cancelled by a conflict or throttling.
// One that met its record held by another request's transaction (a
// duplicate committing) is decided at once, unless the call follows it:
// then, like any other, it is retried, the held record read after about
// a transaction's time. Attempts spent, the record settles the call.
func (tx *transaction) conflicted(ctx context.Context, err error, expires time.Time) (Result, error, bool) {
	s, c := tx.s, tx.c
	tx.conflicts++
	held := recordHeld(err)
	if held && !c.follows {
		st, derr := c.decide(met{held: true})
		res := Result{Outcome: outcomeOf(derr)}
		if st == stepRead {
			// An earlier attempt of this call may have landed: the record says.
			res, derr = tx.settle(ctx, err, expires)
		}
		return tx.decided(ctx, res, derr)
	}
	if tx.conflicts < s.maxTxAttempts {
		traceRetry(ctx, tx.conflicts, err)
		var werr error
		if held {
			// About what a transaction takes, then one read.
			werr = tx.w.pause(ctx, s.learned.txTime(), s.learned.txTime())
		} else {
			werr = backoff(ctx, tx.conflicts)
		}
		if werr == nil {
			if held {
				if res, err, done := tx.peek(ctx, expires); done {
					return tx.decided(ctx, res, err)
				}
			}
			return Result{}, nil, true
		}
		err = fmt.Errorf("%w: %w", err, werr)
	}
	res, err := tx.settle(ctx, err, expires)
	return tx.decided(ctx, res, err)
}

// decided reports the transaction a read of its record decided, and
// answers the call with res and err.
func (tx *transaction) decided(ctx context.Context, res Result, err error) (Result, error, bool) {
	traceDecided(ctx, tx.t, tx.conflicts+tx.c.again, res, err)
	return res, err, false
}

// recordHeld reports whether a transaction was cancelled because another
// request's running transaction held the key's record (reason
// TransactionConflict on the claim, its first item): most often a
// duplicate committing the same key.
func recordHeld(err error) bool {
	var txErr *txError
	return errors.As(err, &txErr) && txErr.Index == 0 && txErr.Code == "TransactionConflict"
}

// peek reads the record once, consistently, after this call's transaction
// met it held by another request's and waited about what a transaction
// takes: a read never conflicts, and costs one read unit where another
// cancelled transaction would cost a write unit per item. done is false
// when the record is still absent or dead (only another transaction can
// settle that) or the read failed.
func (tx *transaction) peek(ctx context.Context, expires time.Time) (_ Result, _ error, done bool) {
	s, c := tx.s, tx.c
	rec, found, rerr := s.current(ctx, c.id, nil)
	if rerr != nil || !found {
		return Result{}, nil, false
	}
	m := met{rec: rec, found: true, at: s.now()}
	st, err := c.decide(m)
	if st == stepAwait {
		if m, err = s.awaitHolder(ctx, c.id, c.fingerprint, c.token, tx.w, rec); err != nil {
			return Result{Outcome: outcomeOf(err)}, err, true
		}
		st, err = c.decide(m)
	} else {
		s.learned.sawExec(ctx, rec) // a commit this call watched land
	}
	return tx.answer(st, err, m, expires)
}

// settle answers a call whose transaction was still cancelled by
// conflicts or throttling after its attempts, or met its record held
// with no attempt it may make: the record as last committed decides,
// with no more waiting. A record whose own item was the contended one,
// and is still absent or unreadable, is in flight (a duplicate
// committing it), not a 503; anything else is err.
func (tx *transaction) settle(ctx context.Context, err error, expires time.Time) (Result, error) {
	s, c := tx.s, tx.c
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.releaseTimeout)
	defer cancel()
	contended := recordHeld(err)
	rec, found, rerr := s.current(rctx, c.id, nil)
	if rerr != nil {
		if contended {
			return Result{Outcome: OutcomeInFlight}, busy()
		}
		err = errors.Join(err, rerr)
		return Result{Outcome: failed(err, true, true)}, err
	}
	if found {
		c.waits = false
		st, derr := c.decide(met{rec: rec, found: true, at: s.now()})
		if res, derr, done := tx.answer(st, derr, met{rec: rec}, expires); done {
			return res, derr
		}
	}
	if contended {
		return Result{Outcome: OutcomeInFlight}, busy()
	}
	return Result{Outcome: failed(err, true, true)}, err
}

// landed reads the record, on a context detached from ctx's cancellation:
// does it carry this call's token?
func (s *Store) landed(ctx context.Context, id, token string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.releaseTimeout)
	defer cancel()
	rec, found, err := s.current(ctx, id, nil)
	return err == nil && found && rec.Status == statusCompleted && rec.LeaseToken == token
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
