package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

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
	switch {
	case errors.As(err, &ccf):
		if cid != "" && l.store.completedBy(l.found(ctx, ccf.Item), cid) {
			return true, nil
		}
		return false, fmt.Errorf("%w: nothing to release", ErrLeaseLost)
	case errors.Is(err, ErrNoHome):
		// The key's home moved (WithHomes): the claim there ends with its
		// lease, and nothing this holder writes lands any more.
		return false, fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	if err != nil {
		return false, fmt.Errorf("idem: release: %w", err)
	}
	return false, nil
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
