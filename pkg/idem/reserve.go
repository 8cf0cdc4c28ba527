package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// claimed is a successful reserve: either a Lease (the caller executes) or
// a completed record to replay.
type claimed struct {
	// Lease is set when this caller holds the key and must execute.
	Lease *hold
	// Outcome is OutcomeExecuted, OutcomeTakeover or OutcomeReplayed.
	Outcome Outcome

	replay    *record   // the completed record to replay
	deadLease time.Time // a takeover's: when the dead holder's lease ended
}

// attempt is one conditional put of a reserve: what it wrote and met.
type attempt struct {
	claim    claimed   // set when the put succeeded
	met      met       // what beat the condition, when it failed
	leaseEnd time.Time // the lease the put wrote
	// sentOnce is true when the SDK sent the put once: a refusal then
	// means that it did not land.
	sentOnce bool
}

// claiming is the call of Execute, Run and Do after admission: the key
// reserved, then then with the lease; or the call's answer without then
// (a replay, or why the claim failed).
func (s *Store) claiming(fingerprint string, then func(ctx context.Context, id string, claim claimed) (Result, error)) func(context.Context, string) (Result, error) {
	return func(ctx context.Context, id string) (Result, error) {
		t, cctx := traceOf(ctx), ctx
		if t.ClaimStart != nil {
			cctx = start(ctx, t.ClaimStart, idemtrace.ClaimStartInfo{Wait: s.waitOf(ctx).max})
		}
		claim, err := s.reserve(cctx, id, fingerprint)
		claimDone(cctx, t, claim, err)
		switch {
		case err != nil:
			return Result{Outcome: outcomeOf(err)}, err
		case claim.replay != nil:
			// A completion whose writes are not all applied yet (a table
			// with multi-Region strong consistency) is answered once they
			// are.
			rec, err := s.applyPending(ctx, *claim.replay)
			if err != nil {
				return Result{Outcome: outcomeOf(err)}, err
			}
			return s.replay(id, fingerprint, rec), nil
		}
		return then(ctx, id, claim)
	}
}

// reserve claims the key of the record id for this caller with one
// conditional PutItem, again while the record it meets is gone, expired
// or a dead holder's (decide, retry). It returns a claimed with a Lease
// or a replay, or an error that wraps ErrInFlight, ErrKeyReuse,
// errCorruptRecord or the DynamoDB error. It does not use the cache.
func (s *Store) reserve(ctx context.Context, id, fingerprint string) (claimed, error) {
	w := s.waitOf(ctx)
	// One token for every attempt of this call: finding it on the record
	// means an earlier attempt landed, whatever its answer said.
	c := &claim{s: s, id: id, fingerprint: fingerprint, token: s.newToken(), waits: w.on(), follows: w.follows(),
		retention: s.settingsFor(ctx).retention}
	replicated := 0
	for n := 1; ; n++ {
		a, err := s.tryReserve(ctx, c)
		traceAttempt(ctx, n, a, err, c)
		switch {
		case isConflict(err):
			// The record is in another request's running transaction: its
			// holder is committing, or a transact-mode caller is claiming.
			a.met = met{held: true}
		case isReplicated(err):
			// Another Region is writing the record at this moment (a
			// duplicate's claim, its holder's completion or release):
			// claim again after a pause; past the attempts, read it.
			if replicated++; replicated < s.maxTxAttempts {
				traceRetry(ctx, replicated, err)
				if werr := backoff(ctx, replicated); werr != nil {
					return claimed{}, fmt.Errorf("%w: %w", err, werr)
				}
				continue
			}
			a.met = met{held: true, read: true}
		case err != nil || a.claim.Outcome != "":
			return a.claim, err
		}
		c.sentOnce = a.sentOnce
		got, err, again := s.lostReserve(ctx, c, w, a.met)
		if !again {
			return got, err
		}
		if err := c.retry(); err != nil {
			return claimed{}, err
		}
	}
}

// lostReserve answers a reserve whose put met m instead of winning its
// condition, step by step as decide says; again is true when the key is
// to be claimed again.
func (s *Store) lostReserve(ctx context.Context, c *claim, w *waiting, m met) (got claimed, err error, again bool) {
	step, err := c.decide(m)
	for {
		switch step {
		case stepRead:
			m, step, err = s.follow(ctx, c, w)
			continue
		case stepAwait:
			if m, err = s.awaitHolder(ctx, c.id, c.fingerprint, c.token, w, m.rec); err != nil {
				return claimed{}, err, false
			}
			step, err = c.decide(m)
			continue
		case stepAgain:
			return claimed{}, nil, true
		case stepOwn:
			// Our own write: an attempt whose answer was lost had landed.
			return s.leased(c, m.rec.ID, m.at, m.rec.LeaseExpiresAt, false), nil, false
		case stepReplay:
			return claimed{Outcome: OutcomeReplayed, replay: &m.rec}, nil, false
		}
		return claimed{}, err, false
	}
}

// tryReserve sends the conditional put. On a lost condition it returns
// what the put met.
func (s *Store) tryReserve(ctx context.Context, c *claim) (attempt, error) {
	now := s.now()
	a := attempt{leaseEnd: s.leaseEnd(ctx, now), met: met{at: now}}
	var sent sends
	out, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: s.stamp(ctx, s.withKey(c.id, map[string]types.AttributeValue{
			s.attr.Status:         str(statusInProgress),
			s.attr.Fingerprint:    str(c.fingerprint),
			s.attr.LeaseToken:     str(c.token),
			s.attr.LeaseExpiresAt: num(a.leaseEnd.UnixMilli()),
			s.attr.CreatedAt:      ddbitem.Time(now),
			s.attr.ExpiresAt:      num(heldExpiry(now, a.leaseEnd, c.retention).Unix()),
		})),
		ConditionExpression:       aws.String(claimCondition),
		ExpressionAttributeNames:  s.claimNames(),
		ExpressionAttributeValues: claimValues(now, c.fingerprint),
		// On success: the item we replaced, if any, tells a takeover apart.
		ReturnValues: types.ReturnValueAllOld,
		// On failure: the item that beat us, so no second read is needed.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, sent.option)
	a.sentOnce = sent.once()
	if err == nil {
		a.claim = s.leased(c, c.id, now, a.leaseEnd, s.wasHeldByAnother(out.Attributes, c.token))
		if a.claim.Outcome == OutcomeTakeover {
			if old, err := s.decodeRecord(out.Attributes); err == nil {
				a.claim.deadLease = old.LeaseExpiresAt
			}
		}
		return a, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if isConflict(err) || isReplicated(err) {
		return a, fmt.Errorf("idem: reserve: %w", err)
	}
	if !errors.As(err, &ccf) {
		// Whatever the last answer, an earlier attempt of the SDK's may
		// have landed with its answer lost (a 5xx, then throttling):
		// remove it, fenced by this call's token, so the client's retry
		// is not told its own request is in flight.
		lost := &hold{store: s, id: c.id, token: c.token}
		_ = lost.free(ctx)
		return a, fmt.Errorf("idem: reserve: %w", err)
	}
	a.met.rec, a.met.found, err = s.current(ctx, c.id, ccf.Item)
	return a, err
}

// follow answers a reserve that met its record in another request's
// running transaction (TransactionConflictException, which the SDK does
// not retry): a holder committing the key, or a transact-mode caller
// claiming it. It reads the record once, consistently (a read never
// conflicts), after about a transaction's time if the call follows, at
// once if not (an earlier attempt may have landed), and decides on what
// it shows. A pause or read that fails releases an attempt that may have
// landed (fenced by the call's token).
func (s *Store) follow(ctx context.Context, c *claim, w *waiting) (m met, next step, err error) {
	retryAfter := s.learned.txTime()
	ctx, wt := startWait(ctx, idemtrace.WaitStartInfo{Reason: idemtrace.WaitTransaction})
	defer func() { wt.done(err) }()
	giveUp := func(err error) (met, step, error) {
		if !c.sentOnce {
			_ = (&hold{store: s, id: c.id, token: c.token}).free(ctx)
		}
		return met{}, stepRefuse, err
	}
	if c.follows {
		if werr := w.pause(ctx, retryAfter, retryAfter); werr != nil {
			return giveUp(werr)
		}
	}
	rec, found, rerr := s.current(ctx, c.id, nil)
	wt.poll(rec, found, rerr, c.fingerprint, c.token, s.now)
	if rerr != nil {
		return giveUp(rerr)
	}
	m = met{rec: rec, found: found, at: s.now()}
	next, err = c.decide(m)
	if c.follows && next != stepAgain && next != stepAwait {
		s.learned.sawExec(ctx, rec) // a commit this call watched land
	}
	return m, next, err
}

// leased is the claim of the call c, which holds the key from at until
// leaseEnd.
func (s *Store) leased(c *claim, id string, at, leaseEnd time.Time, takeover bool) claimed {
	outcome := OutcomeExecuted
	if takeover {
		outcome = OutcomeTakeover
	}
	return claimed{
		Lease:   &hold{store: s, id: id, token: c.token, expiresAt: leaseEnd, claimedAt: at, retention: c.retention},
		Outcome: outcome,
	}
}

// wasHeldByAnother reads PutItem's ALL_OLD attributes. A backend that
// echoes the new item instead (minidyn) shows our own token: no takeover
// can be seen there, and the outcome stays "executed"; the fencing, not
// this label, is what keeps the takeover safe.
func (s *Store) wasHeldByAnother(old map[string]types.AttributeValue, token string) bool {
	st, ok := old[s.attr.Status].(*types.AttributeValueMemberS)
	if !ok || st.Value != statusInProgress {
		return false
	}
	lt, ok := old[s.attr.LeaseToken].(*types.AttributeValueMemberS)
	return ok && lt.Value != token
}

// executed learns how long the execution under l took, for the waiters
// of the same operation.
func (s *Store) executed(ctx context.Context, l *hold) {
	if scope, ok := ScopeFrom(ctx); ok {
		s.learned.tookExec(scope.Operation, l.claimedAt, l.completedAt)
	}
}

// traceAttempt reports a reserve's n-th conditional write, a, which
// returned err.
func traceAttempt(ctx context.Context, n int, a attempt, err error, c *claim) {
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
		info.Result, info.HolderLeaseExpiresAt, info.RetryAfter = seenRecord(a.met.rec, a.met.found, c.fingerprint, c.token, a.met.at)
	}
	t.ClaimAttempt(ctx, info)
}

// claimDone reports the end of a reserve.
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
	case c.replay != nil:
		info.Result = idemtrace.ClaimReplayed
	default:
		info.Result = idemtrace.ClaimWon
	}
	t.ClaimDone(ctx, info)
}
