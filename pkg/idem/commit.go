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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
)

// maxWrites is the most writes an Effect may carry: a DynamoDB transaction
// holds at most 100 items, and one of them is the key's record.
const maxWrites = 99

// Effect is what a transactional operation does: the response it answers
// with, stored for replay, and at most 99 DynamoDB writes, to any table
// but not to the key's own record, which commit with the key's completion
// in one TransactWriteItems.
type Effect struct {
	Response Response
	Writes   []types.TransactWriteItem
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

// completion is the fenced update that marks the key COMPLETED with resp
// and the number of DynamoDB writes committed with it, the record's new
// expiry, and the completion's own id: a call that meets a completed
// record finds its id there only if its own write landed.
func (l *hold) completion(resp Response, writes int) (*types.Update, time.Time, string, error) {
	if err := resp.check(l.store.maxResponseBytes); err != nil {
		return nil, time.Time{}, "", err
	}
	now := l.store.now()
	l.completedAt = now
	expires := time.Unix(now.Add(l.retention).Unix(), 0)
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
	result := stored.Item(attr, stored.Result(resp), writes)
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
// TransactWriteItems, retried while it is cancelled by a conflict or
// throttling, and returns the completed record's expiry and the
// completion's id. Errors wrap ErrLeaseLost, ErrConditionFailed,
// errConflict or errThrottled (nothing written), or the DynamoDB error:
// then whether it landed is unknown, and release finds out.
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
			l.store.learned.tookTx(start)
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

// FailedWrite returns the index, in the Effect's Writes, of the write
// whose condition failed when err, from Execute or Transact, wraps
// ErrConditionFailed: so an operation whose transaction holds several
// conditions (a product that must be new, a grant that must exist, a
// quota that must have room) answers each with its own error. ok is false
// for any other error, and for ExecuteBatch's, whose writes are shared.
// When several writes failed, it is the first of them.
func FailedWrite(err error) (index int, ok bool) {
	var txErr *txError
	if !errors.Is(err, ErrConditionFailed) || !errors.As(err, &txErr) || txErr.write < 0 {
		return 0, false
	}
	return txErr.write, true
}

// landed reports whether the record is completed by the completion cid,
// after a transaction failed with err: from the record the fence returned,
// or else read back.
func (l *hold) landed(ctx context.Context, err error, cid string) bool {
	var item map[string]types.AttributeValue
	var txErr *txError
	if errors.Is(err, ErrLeaseLost) && errors.As(err, &txErr) {
		item = txErr.Item
	}
	return l.store.completedBy(l.found(ctx, item), cid)
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
	if err := l.update(ctx, u, cid); err != nil {
		return time.Time{}, err
	}
	return expires, nil
}

// update sends u, a fenced completion whose id is cid, in its own
// UpdateItem. ErrLeaseLost means another holder has the key (or it
// already completed); another error leaves unknown whether it landed.
func (l *hold) update(ctx context.Context, u *types.Update, cid string) error {
	err := l.store.retryConflicts(ctx, func() error {
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
			return nil // the SDK retried an update that had landed
		}
		return fmt.Errorf("%w: completion refused: %w", ErrLeaseLost, err)
	}
	if err != nil {
		return fmt.Errorf("idem: complete: %w", err)
	}
	return nil
}

// record completes the key after an effect that happened, even if the
// caller has gone away: each attempt runs detached from ctx's
// cancellation, bounded by the release timeout, and a completion refused
// for a reason a retry can fix (IsUnavailable) is tried again, with full
// jitter, until the holder must stop acting on its lease (actUntil).
func (l *hold) record(ctx context.Context, resp Response) (time.Time, error) {
	until := l.actUntil(ctx)
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

// standIn is what Run stores for a response that cannot be stored as it
// is: its status and metadata if they are storable, else its status
// alone (without which a replay could not say what the first call
// answered), no body, and Omitted saying why. Each is checked with the
// reason it will carry: a stand-in the limit refused at its completion
// would leave the key open, and the effect would run again after the
// lease.
func (s *Store) standIn(resp Response, why error) Response {
	reason := "not storable"
	if errors.Is(why, ErrResponseTooLarge) {
		reason = "too large"
	}
	for _, out := range []Response{
		{Status: resp.Status, Meta: resp.Meta, Omitted: reason},
		{Status: resp.Status, Omitted: reason},
	} {
		if out.check(s.maxResponseBytes) == nil {
			return out
		}
	}
	return Response{Omitted: reason}
}
