package idem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// keepAlive runs fn, an operation under lease l, so that a live holder is
// never taken over. With a context deadline (every Lambda invocation has
// one) the lease already ends after it, and fn runs as it is. Without
// one, the lease lasts the store's default lease, which fn may outrun: a
// heartbeat then renews it every third of a lease with a fenced write
// while fn runs. If the lease is lost, or is not renewed before it ends
// (less the margin, which covers clock skew), fn's context is cancelled
// with a cause wrapping ErrLeaseLost: fn should stop, since another
// caller may take the key over, and then whatever fn returns is fenced
// out. fn is the call's effect, for its trace (callEffect).
func keepAlive[T any](ctx context.Context, l *hold, fn func(context.Context) (T, error)) (T, error) {
	lease := l.expiresAt // read before the heartbeat renews it
	if _, ok := ctx.Deadline(); ok {
		return callEffect(ctx, lease, fn)
	}
	ctx, lost := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { l.heartbeat(ctx, stop, lost) })
	defer func() {
		close(stop)
		wg.Wait()
		lost(nil)
	}()
	return callEffect(ctx, lease, fn)
}

// heartbeat renews l every third of a lease until stop closes or ctx
// ends; see keepAlive. A watchdog cancels the operation when the lease,
// less the margin, ends before a renewal has landed, whatever a renewal
// in flight is doing: past that point another caller may hold the key,
// and this holder must have stopped.
func (l *hold) heartbeat(ctx context.Context, stop <-chan struct{}, lost context.CancelCauseFunc) {
	every := l.store.lease / 3
	// left is how long this holder may still act on its lease.
	left := func() time.Duration { return l.expiresAt.Add(-l.store.margin).Sub(l.store.now()) }
	ended := func(err error) error {
		if err == nil {
			err = errors.New("no renewal landed in time")
		}
		return fmt.Errorf("%w: the lease ended before it could be renewed: %w", ErrLeaseLost, err)
	}
	watchdog := time.AfterFunc(left(), func() { lost(ended(nil)) })
	defer watchdog.Stop()
	timer := time.NewTimer(min(every, left()))
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		d := left()
		if d <= 0 {
			lost(ended(nil))
			return
		}
		// A renewal never outlives the lease it renews.
		err := l.renew(ctx, min(every, d))
		switch {
		case errors.Is(err, ErrLeaseLost):
			lost(err)
			return
		case err == nil:
			if !watchdog.Stop() {
				return // too late: the operation was already cancelled
			}
			watchdog.Reset(left())
		}
		// A renewal that failed otherwise (throttled, a timeout) is tried
		// again while the lease lasts.
		d = left()
		if d <= 0 {
			lost(ended(err))
			return
		}
		timer.Reset(min(every, d))
	}
}

// renew extends l by a default lease from now, fenced by its token: it
// fails with ErrLeaseLost once another caller holds the key.
func (l *hold) renew(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	now := l.store.now()
	end := now.Add(l.store.lease + l.store.margin)
	values := l.fenceValues()
	values[":le"] = num(end.UnixMilli())
	values[":exp"] = num(now.Add(max(l.store.retention, end.Sub(now))).Unix())
	names := l.fenceNames()
	names["#le"], names["#exp"] = l.store.attr.LeaseExpiresAt, l.store.attr.ExpiresAt
	_, err := l.store.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.store.table),
		Key:                       l.key(),
		UpdateExpression:          aws.String("SET #le = :le, #exp = :exp"),
		ConditionExpression:       aws.String(fence),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return fmt.Errorf("%w: renewal refused: %w", ErrLeaseLost, err)
	case err != nil:
		return fmt.Errorf("idem: renew lease: %w", err)
	}
	l.expiresAt = end
	return nil
}
