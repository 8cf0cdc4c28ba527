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

// WithLease sets the lease of a holder whose context has no deadline
// (default 60 s), and the margin a lease lasts past the deadline of one
// that has (default 2 s; it covers clock skew between hosts and the
// release after a timeout). The package documentation's "Leases" says
// how a lease ends and is renewed.
func WithLease(lease, margin time.Duration) Option {
	return func(s *Store) { s.lease, s.margin = lease, margin }
}

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
	// retention is how long the record replays once completed.
	retention time.Duration
}

// fence is the condition on every write a holder makes.
const fence = "#lt = :mine AND #st = :in_progress"

// fenceNames are fence's attribute names in the store's layout.
func (l *hold) fenceNames() map[string]string {
	return map[string]string{"#lt": l.store.attr.LeaseToken, "#st": l.store.attr.Status}
}

// fenceValues are fence's values for this holder.
func (l *hold) fenceValues() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{":mine": str(l.token), ":in_progress": str(statusInProgress)}
}

// key is the primary key of the held record.
func (l *hold) key() map[string]types.AttributeValue {
	return l.store.key(l.id)
}

// found is the record a fenced write found: item, as the failed condition
// returned it, or read where the backend returned none (minidyn).
func (l *hold) found(ctx context.Context, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if len(item) > 0 {
		return item
	}
	out, err := l.store.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(l.store.table), Key: l.key(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil
	}
	return out.Item
}

// leaseEnd is when the lease of a claim made at now, by a call with ctx,
// ends: at ctx's deadline (every Lambda invocation has one), or without
// one a lease from now, plus the margin.
func (s *Store) leaseEnd(ctx context.Context, now time.Time) time.Time {
	end := now.Add(s.lease)
	if dl, ok := ctx.Deadline(); ok {
		end = dl
	}
	return end.Add(s.margin)
}

// heldExpiry is the expires_at of a record held from now until leaseEnd:
// the retention, or the lease if it is longer, so that a record never
// expires under its holder.
func heldExpiry(now, leaseEnd time.Time, retention time.Duration) time.Time {
	return now.Add(max(retention, leaseEnd.Sub(now)))
}

// keyUntil is when the holder must have stopped acting on its lease: its
// end less the margin, and under a deadline on ctx no later than the
// deadline less the margin, so that the caller still answers in time.
func (l *hold) keyUntil(ctx context.Context) time.Time {
	until := l.expiresAt.Add(-l.store.margin)
	if deadline, ok := ctx.Deadline(); ok && deadline.Add(-l.store.margin).Before(until) {
		until = deadline.Add(-l.store.margin)
	}
	return until
}

// actUntil is keyUntil, and on a global table (WithHomes) no later than
// the margin before the lease of the call's home ends, as the store last
// renewed it.
func (l *hold) actUntil(ctx context.Context) time.Time {
	until := l.keyUntil(ctx)
	if r := routeOf(ctx); r != nil {
		if home := l.store.homes.until(r); home.Before(until) {
			until = home
		}
	}
	return until
}

// keepAlive runs fn, the call's effect under lease l, so that a live
// holder is never taken over. With a context deadline the lease already
// ends after it, and fn runs as it is. Without one, a heartbeat renews
// the lease while fn runs, and fn's context is cancelled with a cause
// wrapping ErrLeaseLost when the lease is lost or not renewed in time.
// On a global table (WithHomes), fn's context is cancelled so too when
// the call's home no longer holds the key (watchHome).
func keepAlive[T any](ctx context.Context, l *hold, fn func(context.Context) (T, error)) (T, error) {
	lease := l.expiresAt // read before the heartbeat renews it
	_, deadline := ctx.Deadline()
	r := routeOf(ctx)
	if deadline && r == nil {
		return callEffect(ctx, lease, fn)
	}
	ctx, lost := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if !deadline {
		wg.Go(func() { l.heartbeat(ctx, stop, lost) })
	}
	if r != nil {
		wg.Go(func() { l.watchHome(ctx, r, stop, lost) })
	}
	defer func() {
		close(stop)
		wg.Wait()
		lost(nil)
	}()
	return callEffect(ctx, lease, fn)
}

// heartbeat renews l every third of a lease until stop closes or ctx
// ends. A watchdog cancels the operation when the lease, less the
// margin, ends before a renewal has landed, whatever a renewal in flight
// is doing: past that point another caller may hold the key, and this
// holder must have stopped.
func (l *hold) heartbeat(ctx context.Context, stop <-chan struct{}, lost context.CancelCauseFunc) {
	every := l.store.lease / 3
	// left is how long this holder may still act on its lease.
	left := func() time.Duration { return l.keyUntil(ctx).Sub(l.store.now()) }
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

// watchHome cancels the holder's operation once the home of its call,
// r, no longer holds the key's slot: it checks the slot's view (renewing
// its lease when due) every quarter of a home lease, and by the margin
// before the lease it knows ends, until stop closes or ctx ends.
func (l *hold) watchHome(ctx context.Context, r *route, stop <-chan struct{}, lost context.CancelCauseFunc) {
	h := l.store.homes
	every := h.cfg.Lease / 4
	// At least a few milliseconds apart: a check that renews nothing
	// (the voters out of reach) keeps a lease with time left.
	next := func() time.Duration { return max(min(every, h.until(r).Sub(l.store.now())), 10*time.Millisecond) }
	timer := time.NewTimer(next())
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if err := h.check(ctx, r); err != nil {
			lost(fmt.Errorf("%w: the key's home no longer holds it: %w", ErrLeaseLost, err))
			return
		}
		timer.Reset(next())
	}
}

// renew extends l by a lease from now, fenced by its token: it fails with
// ErrLeaseLost once another caller holds the key.
func (l *hold) renew(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := l.store
	now := s.now()
	end := now.Add(s.lease + s.margin)
	values := l.fenceValues()
	values[":le"] = num(end.UnixMilli())
	values[":exp"] = num(heldExpiry(now, end, l.retention).Unix())
	names := l.fenceNames()
	names["#le"], names["#exp"] = s.attr.LeaseExpiresAt, s.attr.ExpiresAt
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
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
