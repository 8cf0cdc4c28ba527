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
)

// Effect is what a transactional operation does: the response it answers
// with, stored for replay, and the DynamoDB writes that make its effect.
// The writes commit with the key's completion in one TransactWriteItems,
// so they land together or not at all. They must not touch the
// idempotency record's own item; a DynamoDB transaction holds at most 100
// items, one of which is the record.
type Effect struct {
	Response Response
	Writes   []types.TransactWriteItem
}

// Result is the answer to one call.
type Result struct {
	// Response is the response to send: fresh, or replayed byte for byte.
	// It is empty when the call failed, except for Run and Do on
	// ErrNotRecorded, where it is the response of the effect that ran.
	Response Response
	// Outcome is what happened, set on failure too.
	Outcome Outcome
}

// Execute runs an operation whose effect is DynamoDB writes at most once
// per scope and payload fingerprint, and answers every retry with the
// stored response. fn builds the response and the writes; Execute owns the
// rest, in the store's mode:
//
//   - ModeReserve: claim the key (one conditional PutItem; a duplicate in
//     flight gets ErrInFlight), run fn, commit its writes with the fenced
//     completion (one TransactWriteItems), and release the key if fn or
//     the commit fails, unless the lease was lost to a takeover.
//   - ModeTransact: run fn, then commit its writes together with the
//     record, already COMPLETED, under the claim's condition, in one
//     TransactWriteItems; a duplicate finds the record and replays it.
//
// With the cache on, a key this store completed or replayed before answers
// from memory, with no DynamoDB call.
//
// Errors wrap ErrInFlight, ErrKeyReuse, ErrLeaseLost, ErrConditionFailed,
// ErrConflict, ErrThrottled, ErrCorruptRecord, fn's own error, or the
// DynamoDB error (IsUnavailable tells a retryable one). Result.Outcome is
// set in every case.
func (s *Store) Execute(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Effect, error)) (Result, error) {
	id := scope.ID()
	if res, err, hit := s.fromCache(id, fingerprint); hit {
		return res, err
	}
	if s.mode == ModeTransact {
		return s.transact(ctx, id, fingerprint, fn)
	}
	claim, err := s.Reserve(ctx, scope, fingerprint)
	if err != nil {
		return Result{Outcome: OutcomeOf(err)}, err
	}
	if claim.Replay != nil {
		return s.replayed(id, fingerprint, claim), nil
	}
	eff, err := fn(ctx)
	if err != nil {
		return s.abandon(ctx, claim.Lease, err, false)
	}
	expires, err := claim.Lease.commit(ctx, eff.Response, eff.Writes)
	if errors.Is(err, ErrLeaseLost) {
		return Result{Outcome: OutcomeLeaseLost}, err // not ours to release
	}
	if err != nil {
		return s.abandon(ctx, claim.Lease, err, true)
	}
	s.remember(id, fingerprint, eff.Response, expires)
	return Result{Response: eff.Response, Outcome: claim.Outcome}, nil
}

// Run runs fn, an effect outside DynamoDB (an e-mail, a payment API call),
// at most once per scope and payload fingerprint, and stores the response
// it returns for every retry. It always reserves, whatever the store's
// mode: the key is claimed, fn runs, then a fenced UpdateItem completes
// the key. If fn fails, the key is released (on a context detached from
// ctx's cancellation) so a retry can run at once, unless fn's error wraps
// ErrNotRecorded: then the effect happened and the key stays held until
// its lease ends.
//
// The one window Run cannot close: fn's effect happened but the completion
// did not land (the process died, the write failed, or the lease ended and
// another caller took over). A retry after the lease ends runs fn again.
// Run reports a completion that failed as an error wrapping ErrNotRecorded,
// with fn's response in the Result, because the effect did happen. Only
// an effect that is itself idempotent (pass the scope's key to the payment
// API), or one made of DynamoDB writes (use Execute), closes it.
func (s *Store) Run(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Response, error)) (Result, error) {
	id := scope.ID()
	if res, err, hit := s.fromCache(id, fingerprint); hit {
		return res, err
	}
	claim, err := s.Reserve(ctx, scope, fingerprint)
	if err != nil {
		return Result{Outcome: OutcomeOf(err)}, err
	}
	if claim.Replay != nil {
		return s.replayed(id, fingerprint, claim), nil
	}
	resp, err := fn(ctx)
	if errors.Is(err, ErrNotRecorded) {
		return Result{Response: resp, Outcome: claim.Outcome}, err
	}
	if err != nil {
		return s.abandon(ctx, claim.Lease, err, false)
	}
	// The effect is done: record it even if the caller has gone away.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.releaseTimeout)
	defer cancel()
	expires, err := claim.Lease.complete(cctx, resp)
	if err != nil {
		return Result{Response: resp, Outcome: OutcomeOf(err)}, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	s.remember(id, fingerprint, resp, expires)
	return Result{Response: resp, Outcome: claim.Outcome}, nil
}

// abandon releases a lease after the operation (or, with store set, its
// commit) failed with cause, joining a failed release to it.
func (s *Store) abandon(ctx context.Context, l *Lease, cause error, store bool) (Result, error) {
	rerr := l.Release(ctx)
	if rerr != nil && !errors.Is(rerr, ErrLeaseLost) {
		err := errors.Join(cause, rerr)
		return Result{Outcome: failed(err, store, false)}, err
	}
	return Result{Outcome: failed(cause, store, true)}, cause
}

// failed is the outcome of a call that failed with err, where store says
// the error came from the store rather than the operation: unavailable
// when the store was, released when the key is free again, else error.
func failed(err error, store, free bool) Outcome {
	switch {
	case store && IsUnavailable(err):
		return OutcomeUnavailable
	case free:
		return OutcomeReleased
	default:
		return OutcomeError
	}
}

// fromCache answers from the cache: a replay, or ErrKeyReuse for another
// payload. hit is false when the cache is off or has no live entry.
func (s *Store) fromCache(id, fingerprint string) (res Result, err error, hit bool) {
	if s.cache == nil {
		return Result{}, nil, false
	}
	e, ok := s.cache.get(id, s.now())
	switch {
	case !ok:
		return Result{}, nil, false
	case e.fingerprint != fingerprint:
		return Result{Outcome: OutcomeKeyReuse}, ErrKeyReuse, true
	default:
		return Result{Response: e.response.clone(), Outcome: OutcomeReplayed}, nil, true
	}
}

// remember caches a completed record.
func (s *Store) remember(id, fingerprint string, resp Response, expiresAt time.Time) {
	if s.cache != nil {
		s.cache.put(id, fingerprint, resp, expiresAt)
	}
}

// replayed answers with a stored record found in the table, and caches it.
func (s *Store) replayed(id, fingerprint string, c Claim) Result {
	s.remember(id, fingerprint, *c.Replay, c.expiresAt)
	return Result{Response: *c.Replay, Outcome: OutcomeReplayed}
}

// transact is Execute in ModeTransact: one TransactWriteItems carries the
// writes and the completed record, under the claim's condition.
func (s *Store) transact(ctx context.Context, id, fingerprint string, fn func(context.Context) (Effect, error)) (Result, error) {
	eff, err := fn(ctx)
	if err != nil {
		return Result{Outcome: OutcomeReleased}, err // nothing was claimed
	}
	if err := s.validate(eff.Response); err != nil {
		return Result{Outcome: OutcomeError}, err
	}
	// One token for every attempt of this call: finding it on the record
	// means an earlier attempt landed.
	token := s.newToken()
	var lastErr error
	for attempt := 1; attempt <= max(s.maxTxAttempts, s.maxAttempts); attempt++ {
		now := s.now()
		put, expires := s.completedPut(id, fingerprint, token, eff.Response, now)
		// A fresh input per attempt: the SDK gives each a ClientRequestToken,
		// which makes its own retries of one attempt safe on DynamoDB.
		// The claim goes first: a backend that stops at the first failed
		// condition (minidyn does) then still says whether the key is taken.
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: append([]types.TransactWriteItem{{Put: put}}, eff.Writes...),
		})
		if err == nil {
			s.remember(id, fingerprint, eff.Response, expires)
			return Result{Response: eff.Response, Outcome: OutcomeExecuted}, nil
		}
		err = ExplainTx(err, 0)
		var txErr *TxError
		switch {
		case errors.Is(err, ErrLeaseLost) && errors.As(err, &txErr):
			// The claim's condition failed: the record decides.
			rec, found, rerr := s.current(ctx, id, txErr.Item)
			if rerr != nil {
				return Result{Outcome: OutcomeOf(rerr)}, rerr
			}
			if !found {
				lastErr = err
				continue // released between our write and our read
			}
			switch judge(rec, fingerprint, token, now) {
			case verdictOwn:
				// An earlier attempt landed; the SDK's retry of it met our
				// own record (backends that ignore ClientRequestToken).
				s.remember(id, fingerprint, eff.Response, expires)
				return Result{Response: eff.Response, Outcome: OutcomeExecuted}, nil
			case verdictReplay:
				s.remember(id, fingerprint, rec.Response, rec.ExpiresAt)
				return Result{Response: rec.Response, Outcome: OutcomeReplayed}, nil
			case verdictKeyReuse:
				return Result{Outcome: OutcomeKeyReuse}, ErrKeyReuse
			case verdictInFlight:
				ierr := &InFlightError{RetryAfter: max(rec.LeaseExpiresAt.Sub(now), 0)}
				return Result{Outcome: OutcomeInFlight}, ierr
			}
			lastErr = err // expired or a dead holder since our read: claim again
		case retryableTx(err):
			lastErr = err
			if werr := backoff(ctx, attempt); werr != nil {
				err = fmt.Errorf("%w: %w", err, werr)
				return Result{Outcome: failed(err, true, true)}, err
			}
		default:
			// A business condition, or an error after the SDK's retries
			// (then the transaction may have landed: the client's retry
			// finds the record and replays it).
			return Result{Outcome: failed(err, true, true)}, err
		}
	}
	if errors.Is(lastErr, ErrLeaseLost) {
		// The key kept changing hands under us: busy, as Reserve says.
		return Result{Outcome: OutcomeInFlight}, &InFlightError{RetryAfter: time.Second}
	}
	return Result{Outcome: failed(lastErr, true, true)}, lastErr
}

// completedPut is the transact-mode claim: a Put of the record, COMPLETED
// with resp and carrying this call's token, under the claim condition.
func (s *Store) completedPut(id, fingerprint, token string, resp Response, now time.Time) (*types.Put, time.Time) {
	expires := time.Unix(now.Add(s.retention).Unix(), 0)
	item := map[string]types.AttributeValue{
		attrID:             str(id),
		attrStatus:         str(StatusCompleted),
		attrFingerprint:    str(fingerprint),
		attrLeaseToken:     str(token),
		attrResponseStatus: num(int64(resp.Status)),
		attrResponseBody:   ddbitem.Blob(resp.Body),
		attrCreatedAt:      ddbitem.Time(now),
		attrCompletedAt:    ddbitem.Time(now),
		attrExpiresAt:      num(expires.Unix()),
	}
	// An empty map is left out: some DynamoDB-compatible servers give one
	// back as something else (minidyn), and no headers read back as none.
	if len(resp.Headers) > 0 {
		item[attrResponseHeaders] = ddbitem.StringMap(resp.Headers)
	}
	return &types.Put{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String(claimCondition),
		ExpressionAttributeNames:            claimNames(),
		ExpressionAttributeValues:           claimValues(now, fingerprint),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, expires
}
