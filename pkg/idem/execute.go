package idem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
)

// maxWrites is the most writes an Effect may carry: a DynamoDB transaction
// holds at most 100 items, and one of them is the key's record.
const maxWrites = 99

// metaOmitted marks a stored response whose body (or metadata) could not
// be stored: too large for the record, or not storable. Run records such
// a response without them rather than leave its key open to run the
// effect again; a replay then carries this entry, whose value ("too
// large" or "not storable") says why. idemhttp replays it as the
// Idempotent-Body-Omitted header.
const metaOmitted = stored.MetaOmitted

// Effect is what a transactional operation does: the response it answers
// with, stored for replay, and the DynamoDB writes that make its effect.
// The writes commit with the key's completion in one TransactWriteItems,
// so they land together or not at all. They may go to any table, the
// idempotency table included (single-table designs), but not to the
// key's own record, and there may be at most 99 of them.
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
// stored response. It claims the key first (one conditional PutItem; a
// duplicate in flight gets ErrInFlight, or with WithWait waits for the
// first's response), runs fn, commits fn's writes with
// the fenced completion (one TransactWriteItems), and releases the key if
// fn or the commit fails (or fn panics), unless the lease was lost to a
// takeover: two calls on a first execution, right for operations that
// take time or must not start twice. Transact does it in one call when fn
// only computes its writes.
//
// With the cache on, a key this store completed or replayed before answers
// from memory, with no DynamoDB call.
//
// Errors wrap ErrInvalidKey (a scope that was not built by NewScope),
// ErrInvalidEffect, ErrInFlight, ErrKeyReuse, ErrLeaseLost,
// ErrConditionFailed, fn's own error, or the store's (IsUnavailable tells
// one a retry later can fix). Result.Outcome is set in every case.
func (s *Store) Execute(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Effect, error)) (Result, error) {
	if s.executeTransacts {
		return s.Transact(ctx, scope, fingerprint, fn)
	}
	return s.admit(ctx, idemtrace.WayExecute, scope, fingerprint, s.claiming(fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
		return s.execute(ctx, id, fingerprint, claim, fn)
	}), nil)
}

// execute is Execute once its key is claimed: run, commit.
func (s *Store) execute(ctx context.Context, id, fingerprint string, claim claimed, fn func(context.Context) (Effect, error)) (Result, error) {
	lease := claim.Lease
	eff, err := runReleasing(ctx, lease, func(ctx context.Context) (Effect, error) { return keepAlive(ctx, lease, fn) })
	if err == nil {
		err = s.checkEffect(id, eff)
	}
	if err != nil {
		return s.abandon(ctx, lease, err, false)
	}
	t := traceOf(ctx)
	cctx := start(ctx, t.CommitStart, idemtrace.CommitStartInfo{Request: "TransactWriteItems", Writes: len(eff.Writes)})
	expires, cid, err := lease.commit(cctx, eff.Response, eff.Writes)
	event(cctx, t.CommitDone, idemtrace.CommitDoneInfo{Err: err})
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseLost):
		return Result{Outcome: OutcomeLeaseLost}, err // not ours to release
	default:
		// A commit whose answer never came may have landed: the release,
		// fenced, finds out, and answers like the commit would have.
		landed, rerr := lease.release(ctx, cid)
		if !landed {
			return s.released(err, rerr, true)
		}
	}
	s.remember(id, fingerprint, eff.Response, expires)
	s.executed(ctx, lease)
	return Result{Response: eff.Response, Outcome: claim.Outcome}, nil
}

// executed learns how long the execution under l took, for the waiters
// of the same operation.
func (s *Store) executed(ctx context.Context, l *hold) {
	if scope, ok := ScopeFrom(ctx); ok {
		s.tookExec(scope.Operation, l.claimedAt, l.completedAt)
	}
}

// claiming is the call of Execute, Run and Do after admission: the key
// claimed with one conditional PutItem, then way with the lease; or the
// call's answer without way (a replay, or why the claim failed).
func (s *Store) claiming(fingerprint string, way func(ctx context.Context, id string, claim claimed) (Result, error)) func(context.Context, string) (Result, error) {
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
		case claim.Replay != nil:
			return s.replayed(id, fingerprint, claim), nil
		}
		return way(ctx, id, claim)
	}
}

// runReleasing runs fn; if it panics, the lease is released (nothing was
// committed) and the panic goes on.
func runReleasing[T any](ctx context.Context, l *hold, fn func(context.Context) (T, error)) (T, error) {
	defer func() {
		if p := recover(); p != nil {
			_ = l.free(ctx)
			panic(p)
		}
	}()
	return fn(ctx)
}

// Run runs fn, an effect outside DynamoDB (an e-mail, a payment API call),
// at most once per scope and payload fingerprint, and stores the response
// it returns for every retry. It always reserves, whatever the store's
// mode: the key is claimed, fn runs, then a fenced UpdateItem completes
// the key. If fn fails, the key is released (on a context detached from
// ctx's cancellation) so a retry can run at once, unless fn's error wraps
// ErrNotRecorded: then the effect happened and the key stays held until
// its lease ends. A panic in fn also leaves the key held: the effect may
// have happened.
//
// A response that cannot be stored as it is (over the store's response
// limit, metadata that is not UTF-8) is recorded without its body, and
// its metadata if they are the problem, marked with the reserved
// metadata entry ":omitted" saying why, so the effect still never runs
// twice.
//
// A completion refused for a reason a retry can fix (throttling past the
// SDK's retries, a 5xx, a timeout) is tried again until the lease ends
// (less the margin), detached from ctx's cancellation: until then no other
// caller can run fn again for this key. Under a deadline, the tries end a
// margin before it, so Run still answers in time (a Lambda invocation
// that runs into its deadline is a failed delivery, delivered again).
//
// The one window Run cannot close: fn's effect happened but the completion
// did not land (the process died, the write kept failing until the lease
// ended, or the lease ended and another caller took over). A retry after
// the lease ends runs fn again.
// Run reports a completion that failed as an error wrapping ErrNotRecorded,
// with fn's response in the Result, because the effect did happen. Only
// an effect that is itself idempotent (pass the scope's key to the payment
// API), or one made of DynamoDB writes (use Execute), closes it.
func (s *Store) Run(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Response, error)) (Result, error) {
	return s.admit(ctx, idemtrace.WayRun, scope, fingerprint, s.claiming(fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
		return s.run(ctx, id, fingerprint, claim, fn)
	}), nil)
}

// run is Run once its key is claimed: run, complete.
func (s *Store) run(ctx context.Context, id, fingerprint string, claim claimed, fn func(context.Context) (Response, error)) (Result, error) {
	resp, err := keepAlive(ctx, claim.Lease, fn)
	if errors.Is(err, ErrNotRecorded) {
		return Result{Response: resp, Outcome: OutcomeNotRecorded}, err
	}
	if err != nil {
		return s.abandon(ctx, claim.Lease, err, false)
	}
	stored := resp
	if verr := s.validate(resp); verr != nil {
		stored = s.standIn(resp, verr)
	}
	t := traceOf(ctx)
	cctx := start(ctx, t.CommitStart, idemtrace.CommitStartInfo{Request: "UpdateItem"})
	expires, err := claim.Lease.record(cctx, stored)
	event(cctx, t.CommitDone, idemtrace.CommitDoneInfo{Err: err})
	if err != nil {
		return Result{Response: resp, Outcome: OutcomeNotRecorded}, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	s.remember(id, fingerprint, stored, expires)
	s.executed(ctx, claim.Lease)
	return Result{Response: resp, Outcome: claim.Outcome}, nil
}

// standIn is what Run stores for a response that cannot be stored as it
// is: its metadata if they are storable, else only the library's own
// entries (keys beginning with ':', such as idemhttp's status, without
// which a replay could not say what the first call answered), no body,
// and metaOmitted saying why. Each is checked with the reason it will
// carry: a stand-in the limit refused at its completion would leave the
// key open, and the effect would run again after the lease.
func (s *Store) standIn(resp Response, why error) Response {
	reason := "not storable"
	if errors.Is(why, ErrResponseTooLarge) {
		reason = "too large"
	}
	out := Response{Meta: maps.Clone(resp.Meta)}
	if out.Meta == nil {
		out.Meta = map[string]string{}
	}
	out.Meta[metaOmitted] = reason
	if s.validate(out) == nil {
		return out
	}
	out.Meta = map[string]string{}
	for k, v := range resp.Meta {
		if strings.HasPrefix(k, ":") {
			out.Meta[k] = v
		}
	}
	out.Meta[metaOmitted] = reason
	if s.validate(out) == nil {
		return out
	}
	return Response{Meta: map[string]string{metaOmitted: reason}}
}

// abandon releases a lease after the operation (or, with store set, its
// commit) failed with cause.
func (s *Store) abandon(ctx context.Context, l *hold, cause error, store bool) (Result, error) {
	return s.released(cause, l.free(ctx), store)
}

// released is the answer to a call that failed with cause, given what the
// release of its lease returned: lease_lost when another holder had the
// key by then, a joined error when the release itself failed.
func (s *Store) released(cause, rerr error, store bool) (Result, error) {
	switch {
	case rerr == nil:
		return Result{Outcome: failed(cause, store, true)}, cause
	case errors.Is(rerr, ErrLeaseLost):
		return Result{Outcome: OutcomeLeaseLost}, cause
	default:
		err := errors.Join(cause, rerr)
		return Result{Outcome: failed(err, store, false)}, err
	}
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
func (s *Store) replayed(id, fingerprint string, c claimed) Result {
	s.remember(id, fingerprint, *c.Replay, c.expiresAt)
	return Result{Response: *c.Replay, Outcome: OutcomeReplayed}
}

// checkEffect refuses an Effect DynamoDB would refuse only after the key
// was claimed: too many items for one transaction, or a write to the
// key's own record.
func (s *Store) checkEffect(id string, eff Effect) error {
	if n := len(eff.Writes); n > maxWrites {
		return fmt.Errorf("%w: %d writes, at most %d (a transaction holds 100 items with the key's record)", ErrInvalidEffect, n, maxWrites)
	}
	for i, w := range eff.Writes {
		table, key := writeTarget(w)
		if table == nil {
			return fmt.Errorf("%w: write %d has no Put, Update, Delete or ConditionCheck", ErrInvalidEffect, i)
		}
		if aws.ToString(table) != s.table {
			continue
		}
		if s.isOwnKey(key, id) {
			return fmt.Errorf("%w: write %d is to the key's own record", ErrInvalidEffect, i)
		}
	}
	return nil
}

// writeTarget returns a transaction item's table and key (a Put's item,
// which holds the key).
func writeTarget(w types.TransactWriteItem) (*string, map[string]types.AttributeValue) {
	switch {
	case w.Put != nil:
		return w.Put.TableName, w.Put.Item
	case w.Update != nil:
		return w.Update.TableName, w.Update.Key
	case w.Delete != nil:
		return w.Delete.TableName, w.Delete.Key
	case w.ConditionCheck != nil:
		return w.ConditionCheck.TableName, w.ConditionCheck.Key
	}
	return nil, nil
}

// Transact is Execute with the claim in the operation's own transaction:
// fn runs first and only computes its response and writes, then one
// TransactWriteItems commits them with the key's record, already
// COMPLETED, under the claim's condition. One call on a first execution;
// no IN_PROGRESS state, so nothing can wedge or needs releasing. A
// duplicate whose transaction comes after the winner's commit gets the
// winner's response, in its one call; one whose transaction meets the
// winner's still running is ErrInFlight at once, or with WithWait reads
// the record once the commit should have landed and replays it. A live
// Execute or Run holder of the same key is ErrInFlight, or with WithWait
// waited for; a dead one's key is taken over in its one transaction. fn
// may run in callers that lose the race, so it must have no effect
// outside its writes. Errors are Execute's.
func (s *Store) Transact(ctx context.Context, scope Scope, fingerprint string, fn func(context.Context) (Effect, error)) (Result, error) {
	return s.admit(ctx, idemtrace.WayTransact, scope, fingerprint, func(ctx context.Context, id string) (Result, error) {
		return s.transact(ctx, id, fingerprint, fn)
	}, nil)
}

// transact is Transact after admission: one TransactWriteItems carries
// the writes and the completed record, under the claim's condition.
func (s *Store) transact(ctx context.Context, id, fingerprint string, fn func(context.Context) (Effect, error)) (_ Result, err error) {
	eff, err := callEffect(ctx, time.Time{}, fn)
	if err == nil {
		err = s.checkEffect(id, eff)
	}
	if err == nil {
		err = s.validate(eff.Response)
	}
	if err != nil {
		return Result{Outcome: OutcomeReleased}, err // nothing was claimed
	}
	t := traceOf(ctx)
	if t.CommitStart != nil || t.CommitDone != nil {
		ctx = start(ctx, t.CommitStart, idemtrace.CommitStartInfo{Request: "TransactWriteItems", Writes: len(eff.Writes), Claims: true})
		defer func() { event(ctx, t.CommitDone, idemtrace.CommitDoneInfo{Err: err}) }()
	}
	// One token for every attempt of this call: finding it on the record
	// means an earlier attempt landed.
	token := s.newToken()
	wait := s.waitOf(ctx)
	conflicts, vanished := 0, 0
	// sentOnce: the SDK sent every transaction of this call once, so
	// none refused can have landed. They all write the same token: one
	// sent again (its answer lost, then refused) may have landed, and a
	// later refusal says nothing of it.
	sentOnce := true
	for {
		now := s.now()
		put, expires := s.completedPut(id, fingerprint, token, eff.Response, len(eff.Writes), now)
		// The claim goes first: a backend that stops at the first failed
		// condition (minidyn does) then still says whether the key is
		// taken. A fresh input per attempt: the SDK gives each its own
		// ClientRequestToken, which makes its retries of one attempt safe.
		var sent sends
		start := time.Now()
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: append([]types.TransactWriteItem{{Put: put}}, eff.Writes...),
		}, sent.option)
		sentOnce = sentOnce && sent.once()
		if err == nil {
			s.tookTx(start)
			event(ctx, t.ClaimAttempt, idemtrace.ClaimAttemptInfo{Attempt: conflicts + vanished + 1, Result: idemtrace.ClaimWon})
			s.remember(id, fingerprint, eff.Response, expires)
			return Result{Response: eff.Response, Outcome: OutcomeExecuted}, nil
		}
		err = explainTx(err, 0)
		var txErr *txError
		switch {
		case errors.Is(err, ErrLeaseLost) && errors.As(err, &txErr):
			// The claim's condition failed: the record decides.
			rec, found, rerr := s.current(ctx, id, txErr.Item)
			if rerr != nil {
				return Result{Outcome: outcomeOf(rerr)}, rerr
			}
			v := verdictAbsent // released between our write and our read
			if found {
				v = judge(rec, fingerprint, token, now)
			}
			if t.ClaimAttempt != nil {
				info := idemtrace.ClaimAttemptInfo{Attempt: conflicts + vanished + 1}
				info.Result, info.HolderLeaseExpiresAt, info.RetryAfter = seenRecord(rec, found, fingerprint, token, now)
				t.ClaimAttempt(ctx, info)
			}
			if v == verdictInFlight && wait.on() {
				// A live Execute or Run holder: wait for its response.
				got, err := s.awaitHolder(ctx, id, fingerprint, token, wait, rec)
				if err != nil {
					return Result{Outcome: outcomeOf(err)}, err
				}
				rec, now, v = got.rec, got.at, verdictAbsent
				if got.found {
					v = judge(rec, fingerprint, token, now)
				}
			}
			// Our own record: an earlier attempt landed, and the SDK's
			// retry of it met it (backends that ignore ClientRequestToken).
			if res, err, done := s.verdictAnswer(v, id, fingerprint, eff.Response, expires, rec, now); done {
				return res, err
			}
			// Gone, expired or a dead holder since the claim: claim again.
			if vanished++; vanished >= s.maxAttempts {
				// The key keeps changing hands under us: busy, as a reserve-mode claim says.
				return Result{Outcome: OutcomeInFlight}, &InFlightError{RetryAfter: time.Second}
			}
		case retryableTx(err):
			conflicts++
			held := recordHeld(err)
			if held && !wait.follows() {
				// A concurrent duplicate of a request still committing:
				// in flight at once, with no other call, unless an
				// earlier attempt of this call may have landed (the SDK
				// sent this transaction or an earlier one more than
				// once): then the record says.
				res, derr := Result{Outcome: OutcomeInFlight}, error(&InFlightError{RetryAfter: s.txTime()})
				if !sentOnce {
					res, derr = s.settle(ctx, id, fingerprint, token, eff.Response, expires, err)
				}
				traceDecided(ctx, t, conflicts+vanished, res, derr)
				return res, derr
			}
			if conflicts < s.maxTxAttempts {
				traceRetry(ctx, conflicts, err)
				var werr error
				if held {
					// About what a transaction takes, then one read.
					werr = wait.pause(ctx, s.txTime(), s.txTime())
				} else {
					werr = backoff(ctx, conflicts)
				}
				if werr == nil {
					if held {
						if res, err, done := s.peek(ctx, id, fingerprint, token, eff.Response, expires, wait); done {
							traceDecided(ctx, t, conflicts+vanished, res, err)
							return res, err
						}
					}
					continue
				}
				err = fmt.Errorf("%w: %w", err, werr)
			}
			res, err := s.settle(ctx, id, fingerprint, token, eff.Response, expires, err)
			traceDecided(ctx, t, conflicts+vanished, res, err)
			return res, err
		default:
			// A business condition, or an error after the SDK's retries:
			// then the transaction may have landed with every answer lost,
			// and the record says whether it did.
			if s.landed(ctx, id, token) {
				s.remember(id, fingerprint, eff.Response, expires)
				return Result{Response: eff.Response, Outcome: OutcomeExecuted}, nil
			}
			return Result{Outcome: failed(err, true, true)}, err
		}
	}
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
// met the record held by another request's and waited about what a
// transaction takes: the read never conflicts, and costs one read unit
// where another transaction cancelled on a completed record would cost a
// write unit per item it carries. It answers the call when that commit
// has landed (a replay, key reuse, or this call's own earlier attempt)
// or a reserve-mode holder is live (its response once it completes,
// waited for); done is false when the record is still absent or dead,
// which only another transaction can settle, or when the read failed.
func (s *Store) peek(ctx context.Context, id, fingerprint, token string, resp Response, expires time.Time, wait *waiting) (res Result, _ error, done bool) {
	rec, found, rerr := s.current(ctx, id, nil)
	if rerr != nil || !found {
		return Result{}, nil, false
	}
	now := s.now()
	v := judge(rec, fingerprint, token, now)
	if v == verdictInFlight && wait.on() {
		got, err := s.awaitHolder(ctx, id, fingerprint, token, wait, rec)
		if err != nil {
			return Result{Outcome: outcomeOf(err)}, err, true
		}
		if !got.found {
			return Result{}, nil, false
		}
		rec, now = got.rec, got.at
		v = judge(rec, fingerprint, token, now)
	} else if v != verdictInFlight {
		s.learnExec(ctx, rec) // a commit this call watched land
	}
	return s.verdictAnswer(v, id, fingerprint, resp, expires, rec, now)
}

// verdictAnswer is a transact-mode call's answer to the record it met,
// judged v at now: its own (an attempt of its own landed), a replay, key
// reuse, or in flight. done is false when the record no longer stands in
// the way: claim again.
func (s *Store) verdictAnswer(v verdict, id, fingerprint string, own Response, ownExpires time.Time, rec record, now time.Time) (res Result, _ error, done bool) {
	switch v {
	case verdictOwn:
		s.remember(id, fingerprint, own, ownExpires)
		return Result{Response: own, Outcome: OutcomeExecuted}, nil, true
	case verdictReplay:
		s.remember(id, fingerprint, responseOf(rec), rec.ExpiresAt)
		return Result{Response: responseOf(rec), Outcome: OutcomeReplayed}, nil, true
	case verdictKeyReuse:
		return Result{Outcome: OutcomeKeyReuse}, ErrKeyReuse, true
	case verdictInFlight:
		return Result{Outcome: OutcomeInFlight}, &InFlightError{RetryAfter: untilFree(rec, now)}, true
	}
	return Result{}, nil, false
}

// settle answers a transact-mode call whose transaction was still
// cancelled by conflicts or throttling after its attempts: the record as
// last committed decides. Its own token: an attempt landed. Another
// caller's completed record: replay (or key reuse). A live holder, or a
// record whose own item was the one contended: the key is in flight
// (409), not a 503. Anything else: err, a conflict or throttling that
// IsUnavailable reports.
func (s *Store) settle(ctx context.Context, id, fingerprint, token string, resp Response, expires time.Time, err error) (Result, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.releaseTimeout)
	defer cancel()
	var txErr *txError
	recordContended := errors.As(err, &txErr) && txErr.Index == 0 && txErr.Code == "TransactionConflict"
	rec, found, rerr := s.current(rctx, id, nil)
	if rerr != nil {
		if recordContended {
			// Another request's transaction held the record: the key is
			// in flight, whether or not the record can be read now.
			return Result{Outcome: OutcomeInFlight}, &InFlightError{RetryAfter: time.Second}
		}
		err = errors.Join(err, rerr)
		return Result{Outcome: failed(err, true, true)}, err
	}
	now := s.now()
	if found {
		if res, err, done := s.verdictAnswer(judge(rec, fingerprint, token, now), id, fingerprint, resp, expires, rec, now); done {
			return res, err
		}
	}
	if recordContended {
		// Another request's transaction holds the record: a duplicate
		// committing this key now.
		return Result{Outcome: OutcomeInFlight}, &InFlightError{RetryAfter: time.Second}
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

// completedPut is the transact-mode claim: a Put of the record, COMPLETED
// with resp and the number of writes that commit with it, and carrying
// this call's token, under the claim condition.
func (s *Store) completedPut(id, fingerprint, token string, resp Response, writes int, now time.Time) (*types.Put, time.Time) {
	expires := time.Unix(now.Add(s.retention).Unix(), 0)
	item := s.withKey(id, map[string]types.AttributeValue{
		s.attr.Status:       str(statusCompleted),
		s.attr.Fingerprint:  str(fingerprint),
		s.attr.LeaseToken:   str(token),
		s.attr.CompletionID: str(token),
		s.attr.CreatedAt:    ddbitem.Time(now),
		s.attr.CompletedAt:  ddbitem.Time(now),
		s.attr.ExpiresAt:    num(expires.Unix()),
	})
	maps.Copy(item, stored.Item(s.attr, resp.Body, resp.Meta, writes))
	return &types.Put{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String(claimCondition),
		ExpressionAttributeNames:            s.claimNames(),
		ExpressionAttributeValues:           claimValues(now, fingerprint),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, expires
}
