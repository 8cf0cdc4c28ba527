package idem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Lease is this caller's hold on a key. Every write it makes is fenced by
// Token: once another caller takes the key over, none of them lands.
type Lease struct {
	store *Store
	id    string
	// Token is this holder's fencing token, unique per reservation.
	Token string
	// ExpiresAt is when others may take the key over.
	ExpiresAt time.Time
	// Takeover is true when this lease replaced a dead holder's.
	Takeover bool
}

// fence is the condition on every write a holder makes.
const fence = "#lt = :mine AND #st = :in_progress"

func (l *Lease) fenceNames() map[string]string {
	return map[string]string{"#lt": attrLeaseToken, "#st": attrStatus}
}

func (l *Lease) fenceValues() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{":mine": str(l.Token), ":in_progress": str(StatusInProgress)}
}

func (l *Lease) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrID: str(l.id)}
}

// validate applies the store's limits to a response before it is stored.
func (l *Lease) validate(resp Response) error {
	if resp.Status < 100 || resp.Status > 599 {
		return fmt.Errorf("%w: status %d", ErrInvalidResponse, resp.Status)
	}
	if n := resp.size(); n > l.store.maxResponseBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResponseTooLarge, n, l.store.maxResponseBytes)
	}
	// The body is stored as a DynamoDB string, which must be UTF-8.
	if !utf8.Valid(resp.Body) {
		return fmt.Errorf("%w: body is not valid UTF-8", ErrInvalidResponse)
	}
	for k, v := range resp.Headers {
		if !utf8.ValidString(k) || !utf8.ValidString(v) || k == "" {
			return fmt.Errorf("%w: header %q", ErrInvalidResponse, k)
		}
	}
	return nil
}

// completion is the fenced update that marks the key COMPLETED with resp.
func (l *Lease) completion(resp Response) (*types.Update, error) {
	if err := l.validate(resp); err != nil {
		return nil, err
	}
	now := l.store.now()
	values := l.fenceValues()
	values[":completed"] = str(StatusCompleted)
	values[":rs"] = num(int64(resp.Status))
	values[":rh"] = headersAttr(resp.Headers)
	values[":rb"] = str(string(resp.Body))
	values[":cat"] = timeAttr(now)
	values[":exp"] = num(now.Add(l.store.retention).Unix())
	names := l.fenceNames()
	names["#rs"], names["#rh"], names["#rb"] = attrResponseStatus, attrResponseHeaders, attrResponseBody
	names["#cat"], names["#exp"] = attrCompletedAt, attrExpiresAt
	return &types.Update{
		TableName:                 aws.String(l.store.table),
		Key:                       l.key(),
		UpdateExpression:          aws.String("SET #st = :completed, #rs = :rs, #rh = :rh, #rb = :rb, #cat = :cat, #exp = :exp"),
		ConditionExpression:       aws.String(fence),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		// Tells a lost fence apart from other failures without a read.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// CompletionItem returns the fenced update, as a transaction item, that
// marks the key COMPLETED with resp. Add it to the TransactWriteItems that
// carries the business writes, so both land or neither does; read a
// failure with ExplainTx. Commit does all of this.
func (l *Lease) CompletionItem(resp Response) (types.TransactWriteItem, error) {
	u, err := l.completion(resp)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: u}, nil
}

// Commit writes items and the fenced completion in one TransactWriteItems.
// It retries a transaction cancelled by a conflict or throttling a bounded
// number of times. Errors wrap ErrLeaseLost (fenced out: nothing written),
// ErrConditionFailed (a business condition: nothing written), ErrConflict
// or ErrThrottled (retries spent: nothing written), or the DynamoDB error;
// on the last, whether the transaction landed is unknown, and Release is
// still safe to call because it cannot delete a completed record.
func (l *Lease) Commit(ctx context.Context, resp Response, items ...types.TransactWriteItem) error {
	done, err := l.CompletionItem(resp)
	if err != nil {
		return err
	}
	all := append(items[:len(items):len(items)], done)
	for attempt := 1; ; attempt++ {
		// A fresh input per attempt: the SDK fills in a ClientRequestToken,
		// and a cancelled transaction's token is not one to reuse.
		_, err = l.store.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: all})
		if err == nil {
			return nil
		}
		err = ExplainTx(err, len(items))
		if (errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrConditionFailed)) && l.landed(ctx) {
			// An earlier attempt landed and its answer was lost; the SDK's
			// retry then failed on its own writes. (DynamoDB answers such
			// a retry from its ClientRequestToken; not every backend does.)
			return nil
		}
		retryable := errors.Is(err, ErrConflict) || errors.Is(err, ErrThrottled)
		if !retryable || attempt >= l.store.maxTxAttempts {
			return err
		}
		// Full jitter: conflicting writers should not retry in step.
		backoff := time.Duration(rand.Int64N(int64(10*time.Millisecond) << attempt))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", err, ctx.Err())
		case <-time.After(backoff):
		}
	}
}

// landed reads the record back: is it this lease's own completed record?
func (l *Lease) landed(ctx context.Context) bool {
	out, err := l.store.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(l.store.table), Key: l.key(), ConsistentRead: aws.Bool(true),
	})
	return err == nil && l.completedByUs(out.Item)
}

// completedByUs reports whether item, the record a fenced write found, is
// this lease's own completed record: the write had already landed.
func (l *Lease) completedByUs(item map[string]types.AttributeValue) bool {
	st, ok := item[attrStatus].(*types.AttributeValueMemberS)
	if !ok || st.Value != StatusCompleted {
		return false
	}
	lt, ok := item[attrLeaseToken].(*types.AttributeValueMemberS)
	return ok && lt.Value == l.Token
}

// Complete marks the key COMPLETED with resp in its own fenced UpdateItem,
// for effects outside DynamoDB. ErrLeaseLost means another holder has the
// key (or it already completed).
func (l *Lease) Complete(ctx context.Context, resp Response) error {
	u, err := l.completion(resp)
	if err != nil {
		return err
	}
	_, err = l.store.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key,
		UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if l.completedByUs(ccf.Item) {
			return nil // the SDK retried an update that had landed
		}
		return fmt.Errorf("%w: completion refused: %w", ErrLeaseLost, err)
	}
	if err != nil {
		return fmt.Errorf("idem: complete: %w", err)
	}
	return nil
}

// Release deletes this holder's reservation so a retry can run at once.
// It runs on a context detached from ctx's cancellation (a cancelled
// request is the usual reason to release) with the store's own timeout.
// The delete is fenced: it never removes another holder's reservation or a
// completed record; then it returns ErrLeaseLost and changes nothing.
func (l *Lease) Release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.store.releaseTimeout)
	defer cancel()
	_, err := l.store.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(l.store.table),
		Key:                       l.key(),
		ConditionExpression:       aws.String(fence),
		ExpressionAttributeNames:  l.fenceNames(),
		ExpressionAttributeValues: l.fenceValues(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%w: nothing to release", ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("idem: release: %w", err)
	}
	return nil
}

// TxError says which item of a cancelled transaction failed and why.
type TxError struct {
	// Index is the failed item's position in TransactItems, or -1.
	Index int
	// Code is DynamoDB's cancellation code, e.g. "ConditionalCheckFailed".
	Code string
	// Item is the failed item's current value when DynamoDB returned it.
	Item map[string]types.AttributeValue
	kind error
	err  error
}

func (e *TxError) Error() string {
	return fmt.Sprintf("%v: transaction item %d: %s", e.kind, e.Index, e.Code)
}

// Unwrap exposes the kind (ErrLeaseLost, ErrConditionFailed, ErrConflict)
// and the SDK error.
func (e *TxError) Unwrap() []error { return []error{e.kind, e.err} }

// ExplainTx reads a TransactWriteItems error whose item at fenceIndex is a
// lease's completion. A failed fence wraps ErrLeaseLost; another item's
// failed condition wraps ErrConditionFailed; a TransactionConflict wraps
// ErrConflict; a cancellation for throttling wraps ErrThrottled. Other
// errors come back wrapped unchanged.
func ExplainTx(err error, fenceIndex int) error {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var conflict *types.TransactionConflictException
		if errors.As(err, &conflict) {
			return &TxError{Index: -1, Code: "TransactionConflict", kind: ErrConflict, err: err}
		}
		return fmt.Errorf("idem: transaction: %w", err)
	}
	var conflict *TxError
	for i, r := range tce.CancellationReasons {
		code := aws.ToString(r.Code)
		switch code {
		case "", "None":
			continue
		case "ConditionalCheckFailed":
			if i == fenceIndex {
				return &TxError{Index: i, Code: code, Item: r.Item, kind: ErrLeaseLost, err: err}
			}
			return &TxError{Index: i, Code: code, Item: r.Item, kind: ErrConditionFailed, err: err}
		case "TransactionConflict":
			if conflict == nil {
				conflict = &TxError{Index: i, Code: code, kind: ErrConflict, err: err}
			}
		case "ThrottlingError", "ProvisionedThroughputExceeded":
			if conflict == nil {
				conflict = &TxError{Index: i, Code: code, kind: ErrThrottled, err: err}
			}
		default:
			// Throttling, validation, capacity: report the first such item.
			if conflict == nil {
				return &TxError{Index: i, Code: code, kind: errTxOther, err: err}
			}
		}
	}
	if conflict != nil {
		return conflict
	}
	return fmt.Errorf("idem: transaction cancelled: %w", err)
}

// errTxOther marks a cancellation that is neither a condition nor a conflict.
var errTxOther = errors.New("idem: transaction cancelled")
