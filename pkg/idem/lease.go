package idem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
)

// hold is this caller's lease on a key. Every write it makes is fenced by
// its token: once another caller takes the key over, none of them lands.
type hold struct {
	store     *Store
	id        string
	token     string
	expiresAt time.Time // when others may take the key over
	// claimedAt is the claim's created_at, completedAt the completed_at
	// of its last completion written: how long the execution took.
	claimedAt, completedAt time.Time
}

// fence is the condition on every write a holder makes.
const fence = "#lt = :mine AND #st = :in_progress"

func (l *hold) fenceNames() map[string]string {
	return map[string]string{"#lt": l.store.attr.LeaseToken, "#st": l.store.attr.Status}
}

func (l *hold) fenceValues() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{":mine": str(l.token), ":in_progress": str(statusInProgress)}
}

func (l *hold) key() map[string]types.AttributeValue {
	return l.store.key(l.id)
}

// validate applies the store's limits to a response before it is stored.
func (s *Store) validate(resp Response) error {
	if n := resp.size(); n > s.maxResponseBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResponseTooLarge, n, s.maxResponseBytes)
	}
	// Metadata keys and values are DynamoDB strings, which must be UTF-8;
	// the body is stored as binary when it is not.
	for k, v := range resp.Meta {
		if !utf8.ValidString(k) || !utf8.ValidString(v) || k == "" {
			return fmt.Errorf("%w: metadata %q", errInvalidResponse, k)
		}
	}
	return nil
}

// completion is the fenced update that marks the key COMPLETED with resp
// and the number of DynamoDB writes committed with it, the record's new
// expiry, and the completion's own id: a call that meets a completed
// record finds its id there only if its own write landed.
func (l *hold) completion(resp Response, writes int) (*types.Update, time.Time, string, error) {
	if err := l.store.validate(resp); err != nil {
		return nil, time.Time{}, "", err
	}
	now := l.store.now()
	l.completedAt = now
	expires := time.Unix(now.Add(l.store.retention).Unix(), 0)
	completionID := l.store.newToken()
	values := l.fenceValues()
	values[":cid"] = str(completionID)
	values[":completed"] = str(statusCompleted)
	values[":cat"] = ddbitem.Time(now)
	values[":exp"] = num(expires.Unix())
	names := l.fenceNames()
	attr := l.store.attr
	names["#cat"], names["#exp"], names["#cid"] = attr.CompletedAt, attr.ExpiresAt, attr.CompletionID
	set := "SET #st = :completed, #cat = :cat, #exp = :exp, #cid = :cid"
	result := stored.Item(attr, resp.Body, resp.Meta, writes)
	for i, name := range slices.Sorted(maps.Keys(result)) {
		n, v := "#r"+strconv.Itoa(i), ":r"+strconv.Itoa(i)
		names[n], values[v] = name, result[name]
		set += ", " + n + " = " + v
	}
	return &types.Update{
		TableName:                 aws.String(l.store.table),
		Key:                       l.key(),
		UpdateExpression:          aws.String(set),
		ConditionExpression:       aws.String(fence),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		// Tells a lost fence apart from other failures without a read.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, expires, completionID, nil
}

// commit writes items and the fenced completion in one
// TransactWriteItems, and returns the completed record's expiry and the
// completion's id. It retries a transaction cancelled by a conflict or
// throttling a bounded number of times. Errors wrap ErrLeaseLost (fenced
// out: nothing written), ErrConditionFailed (a business condition:
// nothing written), errConflict or errThrottled (retries spent: nothing
// written), or the DynamoDB error; on the last, whether the transaction
// landed is unknown, and release is still safe to call because it cannot
// delete a completed record.
func (l *hold) commit(ctx context.Context, resp Response, items []types.TransactWriteItem) (time.Time, string, error) {
	done, expires, cid, err := l.completion(resp, len(items))
	if err != nil {
		return time.Time{}, "", err
	}
	// The completion goes first: a backend that stops at the first failed
	// condition (minidyn does) then still says whether the lease was lost.
	all := append([]types.TransactWriteItem{{Update: done}}, items...)
	for attempt := 1; ; attempt++ {
		// A fresh input per attempt: the SDK fills in a ClientRequestToken,
		// and a cancelled transaction's token is not one to reuse.
		start := time.Now()
		_, err = l.store.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: all})
		if err == nil {
			l.store.tookTx(start)
			return expires, cid, nil
		}
		err = explainTx(err, 0)
		if (errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrConditionFailed)) && l.landed(ctx, err, cid) {
			// An earlier attempt of this call landed and its answer was
			// lost; the SDK's retry then failed on its own writes.
			// (DynamoDB answers such a retry from its ClientRequestToken;
			// not every backend does.)
			return expires, cid, nil
		}
		if !retryableTx(err) || attempt >= l.store.maxTxAttempts {
			return time.Time{}, cid, err
		}
		traceRetry(ctx, attempt, err)
		if werr := backoff(ctx, attempt); werr != nil {
			return time.Time{}, cid, fmt.Errorf("%w: %w", err, werr)
		}
	}
}

// retryConflicts runs a single-item write on the key's record, again
// (with full jitter, a bounded number of times) while DynamoDB refuses it
// with TransactionConflictException: another request's transaction holds
// the record for a moment. The SDK does not retry that refusal.
func (s *Store) retryConflicts(ctx context.Context, write func() error) error {
	for attempt := 1; ; attempt++ {
		err := write()
		if !isConflict(err) || attempt >= s.maxTxAttempts {
			return err
		}
		traceRetry(ctx, attempt, err)
		if werr := backoff(ctx, attempt); werr != nil {
			return fmt.Errorf("%w: %w", err, werr)
		}
	}
}

// retryableTx reports whether a transaction error is worth another
// attempt: a conflict with concurrent transactions, or throttling.
func retryableTx(err error) bool { return errors.Is(err, errConflict) || errors.Is(err, errThrottled) }

// backoff waits after the attempt-th failed transaction, with full
// jitter: a random wait below 20 ms, doubling per attempt up to 320 ms, so
// conflicting writers do not retry in step.
func backoff(ctx context.Context, attempt int) error {
	return jitter(ctx, 10*time.Millisecond, attempt)
}

// jitter waits a random time below base doubled attempt times (at most
// five), or until ctx ends.
func jitter(ctx context.Context, base time.Duration, attempt int) error {
	limit := base << min(attempt, 5)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(rand.Int64N(int64(limit)))):
		return nil
	}
}

// landed reports whether the record is completed by the completion cid,
// after a transaction failed with err: from the record the fence returned,
// or else read back.
func (l *hold) landed(ctx context.Context, err error, cid string) bool {
	var txErr *txError
	if errors.Is(err, ErrLeaseLost) && errors.As(err, &txErr) && len(txErr.Item) > 0 {
		return l.store.completedBy(txErr.Item, cid)
	}
	out, gerr := l.store.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(l.store.table), Key: l.key(), ConsistentRead: aws.Bool(true),
	})
	return gerr == nil && l.store.completedBy(out.Item, cid)
}

// completedBy reports whether item, the record a fenced write found, was
// completed by the completion cid: this call's own write had landed.
func (s *Store) completedBy(item map[string]types.AttributeValue, cid string) bool {
	r := ddbitem.Read(item)
	st, _ := r.OptS(s.attr.Status)
	id, _ := r.OptS(s.attr.CompletionID)
	return r.Err() == nil && st == statusCompleted && id == cid
}

// complete marks the key COMPLETED with resp in its own fenced
// UpdateItem, for effects outside DynamoDB, and returns the completed
// record's expiry. ErrLeaseLost means another holder has the key (or it
// already completed).
func (l *hold) complete(ctx context.Context, resp Response) (time.Time, error) {
	u, expires, cid, err := l.completion(resp, 0)
	if err != nil {
		return time.Time{}, err
	}
	err = l.store.retryConflicts(ctx, func() error {
		_, err := l.store.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: u.TableName, Key: u.Key,
			UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if l.store.completedBy(ccf.Item, cid) {
			return expires, nil // the SDK retried an update that had landed
		}
		return time.Time{}, fmt.Errorf("%w: completion refused: %w", ErrLeaseLost, err)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("idem: complete: %w", err)
	}
	return expires, nil
}

// record completes the key after an effect that happened, even if the
// caller has gone away: each attempt runs detached from ctx's
// cancellation, bounded by the release timeout. A completion refused for
// a reason a retry can fix (throttling past the SDK's retries, a 5xx, a
// timeout) is tried again, with full jitter, until the lease ends less
// the margin: until then no other caller can take the key over and run
// the effect again; after it, one may, and the record would be too late.
// Under a deadline (the lease then ends a margin after it) the tries end
// a margin before the deadline instead, so the caller still answers in
// time: a Lambda invocation that runs into its deadline is a failed
// delivery, which its source delivers again once the lease has ended,
// and the effect runs again.
func (l *hold) record(ctx context.Context, resp Response) (time.Time, error) {
	until := l.expiresAt.Add(-l.store.margin)
	if deadline, ok := ctx.Deadline(); ok && deadline.Add(-l.store.margin).Before(until) {
		until = deadline.Add(-l.store.margin)
	}
	ctx = context.WithoutCancel(ctx)
	for attempt := 1; ; attempt++ {
		// The first attempt always gets the release timeout (the write is
		// fenced, so a late one is safe); later ones only what is left.
		timeout := l.store.releaseTimeout
		if attempt > 1 {
			timeout = min(timeout, until.Sub(l.store.now()))
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		expires, err := l.complete(actx, resp)
		cancel()
		if err == nil || errors.Is(err, ErrLeaseLost) || !IsUnavailable(err) {
			return expires, err
		}
		pause := time.Duration(rand.Int64N(int64(10 * time.Millisecond << min(attempt, 5))))
		if until.Sub(l.store.now()) <= pause {
			return expires, err
		}
		traceRetry(ctx, attempt, err)
		time.Sleep(pause)
	}
}

// free deletes this holder's reservation so a retry can run at once; see
// release.
func (l *hold) free(ctx context.Context) error {
	_, err := l.release(ctx, "")
	return err
}

// release deletes this holder's reservation so a retry can run at once.
// It runs on a context detached from ctx's cancellation (a cancelled
// request is the usual reason to release) with the store's own timeout.
// The delete is fenced: it never removes another holder's reservation or
// a completed record; then it returns ErrLeaseLost and changes nothing.
// landed is true when the record turns out to be completed by the
// completion cid (a commit whose answer was lost had landed), and then
// the error is nil.
func (l *hold) release(ctx context.Context, cid string) (landed bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.store.releaseTimeout)
	defer cancel()
	if t := traceOf(ctx); t.ReleaseStart != nil || t.ReleaseDone != nil {
		ctx = start(ctx, t.ReleaseStart, idemtrace.ReleaseStartInfo{LeaseExpiresAt: l.expiresAt})
		defer func() { event(ctx, t.ReleaseDone, idemtrace.ReleaseDoneInfo{Landed: landed, Err: err}) }()
	}
	err = l.store.retryConflicts(ctx, func() error {
		_, err := l.store.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                           aws.String(l.store.table),
			Key:                                 l.key(),
			ConditionExpression:                 aws.String(fence),
			ExpressionAttributeNames:            l.fenceNames(),
			ExpressionAttributeValues:           l.fenceValues(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if cid != "" {
			item := ccf.Item
			if len(item) == 0 { // backends that return none (minidyn)
				if out, gerr := l.store.db.GetItem(ctx, &dynamodb.GetItemInput{
					TableName: aws.String(l.store.table), Key: l.key(), ConsistentRead: aws.Bool(true),
				}); gerr == nil {
					item = out.Item
				}
			}
			if l.store.completedBy(item, cid) {
				return true, nil
			}
		}
		return false, fmt.Errorf("%w: nothing to release", ErrLeaseLost)
	}
	if err != nil {
		return false, fmt.Errorf("idem: release: %w", err)
	}
	return false, nil
}

// TxError says which item of a cancelled transaction failed and why.
type txError struct {
	// Index is the failed item's position in TransactItems, or -1.
	Index int
	// Code is DynamoDB's cancellation code, e.g. "ConditionalCheckFailed".
	Code string
	// Message is DynamoDB's message for that item, if any.
	Message string
	// Item is the failed item's current value when DynamoDB returned it.
	Item map[string]types.AttributeValue
	kind error
	err  error
}

func (e *txError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%v: transaction item %d: %s: %s", e.kind, e.Index, e.Code, e.Message)
	}
	return fmt.Sprintf("%v: transaction item %d: %s", e.kind, e.Index, e.Code)
}

// Unwrap exposes the kind (ErrLeaseLost, ErrConditionFailed, errConflict,
// errThrottled, errTxRefused) and the SDK error.
func (e *txError) Unwrap() []error { return []error{e.kind, e.err} }

// explainTx reads a TransactWriteItems error whose item at fenceIndex is a
// lease's completion (or, in transact mode, the claim). A failed fence
// wraps ErrLeaseLost, whatever else failed: the key decides first. Then
// another item's failed condition wraps ErrConditionFailed, and a reason
// no retry can help (a validation error, an item too large) wraps
// ErrTxRefused, wherever they stand; only when every reason is one a retry
// can help does it wrap errConflict (TransactionConflict) or errThrottled.
// Other errors come back wrapped unchanged.
func explainTx(err error, fenceIndex int) error {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var conflict *types.TransactionConflictException
		if errors.As(err, &conflict) {
			return &txError{Index: -1, Code: "TransactionConflict", kind: errConflict, err: err}
		}
		return fmt.Errorf("idem: transaction: %w", err)
	}
	reasons := tce.CancellationReasons
	at := func(i int, kind error) *txError {
		r := reasons[i]
		return &txError{Index: i, Code: aws.ToString(r.Code), Message: aws.ToString(r.Message), Item: r.Item, kind: kind, err: err}
	}
	if fenceIndex >= 0 && fenceIndex < len(reasons) && aws.ToString(reasons[fenceIndex].Code) == "ConditionalCheckFailed" {
		return at(fenceIndex, ErrLeaseLost)
	}
	var refused, retry *txError
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "ConditionalCheckFailed":
			return at(i, ErrConditionFailed)
		case "TransactionConflict":
			if retry == nil {
				retry = at(i, errConflict)
			}
		case "ThrottlingError", "ProvisionedThroughputExceeded":
			if retry == nil {
				retry = at(i, errThrottled)
			}
		default:
			if refused == nil {
				refused = at(i, errTxRefused)
			}
		}
	}
	switch {
	case refused != nil:
		return refused
	case retry != nil:
		return retry
	}
	return fmt.Errorf("idem: transaction cancelled: %w", err)
}
