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
// while fn runs. If the lease is lost, or cannot be renewed before it
// ends (less the margin, which covers clock skew), fn's context is
// cancelled with a cause wrapping ErrLeaseLost: fn should stop, and
// whatever it returns can no longer be recorded (the completion is
// fenced).
func keepAlive[T any](ctx context.Context, l *hold, fn func(context.Context) (T, error)) (T, error) {
	if _, ok := ctx.Deadline(); ok {
		return fn(ctx)
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
	return fn(ctx)
}

// heartbeat renews l until stop closes or ctx ends; see keepAlive.
func (l *hold) heartbeat(ctx context.Context, stop <-chan struct{}, lost context.CancelCauseFunc) {
	every := l.store.lease / 3
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		err := l.renew(ctx, every)
		if errors.Is(err, ErrLeaseLost) {
			lost(err)
			return
		}
		// A renewal that failed otherwise (throttled, a timeout) is tried
		// again while the lease lasts.
		left := l.expiresAt.Add(-l.store.margin).Sub(l.store.now())
		if left <= 0 {
			lost(fmt.Errorf("%w: the lease ended before it could be renewed: %w", ErrLeaseLost, err))
			return
		}
		timer.Reset(min(every, left))
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
