package idem_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// Without a context deadline (any net/http server) the lease is the
// default; a live holder slower than that must still not be taken over,
// or its effect runs twice. The holder here ignores its context, as an
// effect already under way does.
func TestRunWithoutDeadlineKeepsALiveHolder(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const lease = 300 * time.Millisecond
	s := newStore(t, env, idem.WithDefaultLease(lease), idem.WithLeaseMargin(50*time.Millisecond))
	sc := scope(t, "slow")
	var effects atomic.Int64
	started := make(chan struct{})
	slow := func(context.Context) (idem.Response, error) {
		effects.Add(1)
		close(started)
		time.Sleep(4 * lease)
		return idem.Response{Body: []byte("first")}, nil
	}
	var wg sync.WaitGroup
	var first idem.Result
	var firstErr error
	wg.Go(func() { first, firstErr = s.Run(context.Background(), sc, "fp", slow) })

	<-started
	time.Sleep(2 * lease) // past the lease the holder started with
	dup, err := s.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
		effects.Add(1)
		return idem.Response{Body: []byte("second")}, nil
	})
	var inflight *idem.InFlightError
	check.True(t, errors.As(err, &inflight), "the duplicate must wait for the live holder: %v (%s)", err, dup.Outcome)

	wg.Wait()
	must.NoError(t, firstErr)
	check.Equal(t, idem.OutcomeExecuted, first.Outcome)
	again, err := s.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
		effects.Add(1)
		return idem.Response{}, errors.New("must not run")
	})
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, again.Outcome)
	check.Equal(t, "first", string(again.Response.Body))
	check.EqualValues(t, 1, effects.Load(), "the effect ran once")
}

// A holder whose lease was lost (here its record is evicted) is told so
// through its context, so it can stop its effect.
func TestRunWithoutDeadlineCancelsAHolderThatLostItsLease(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const lease = 300 * time.Millisecond
	s := newStore(t, env, idem.WithDefaultLease(lease), idem.WithLeaseMargin(50*time.Millisecond))
	sc := scope(t, "evicted")
	var cause error
	_, err := s.Run(context.Background(), sc, "fp", func(ctx context.Context) (idem.Response, error) {
		_, err := env.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(env.Tables.Idempotency),
			Key:       map[string]types.AttributeValue{idemtable.KeyAttribute: sAttr(sc.ID())},
		})
		must.NoError(t, err)
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
			return idem.Response{}, ctx.Err()
		case <-time.After(10 * lease):
			return idem.Response{}, nil
		}
	})
	must.ErrorIs(t, cause, idem.ErrLeaseLost)
	must.ErrorIs(t, err, context.Canceled)
}

// Without a deadline, a holder whose lease is not renewed in time is
// cancelled by the lease's end less the margin, whatever the renewal in
// flight is doing: here every renewal hangs on its way to the store.
// Another caller may take the key over once the lease has ended, and by
// then the holder must have been told to stop, or two effects run at
// once. (With the renewal's own timeout as the only bound, a renewal
// that starts near the lease's end kept the holder going up to a third
// of a lease past it: 18 s with the defaults.)
func TestRunWithoutDeadlineStopsAHolderAtItsLeaseEndWhileARenewalHangs(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	// A margin below a third of the lease: the old bound overran it.
	const lease, margin = 900 * time.Millisecond, 100 * time.Millisecond
	hung := &hangingRenewals{API: env.Client, release: make(chan struct{})}
	t.Cleanup(hung.releaseAll)
	holder, err := idem.NewStore(hung, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithDefaultLease(lease), idem.WithLeaseMargin(margin))
	must.NoError(t, err)
	taker := newStore(t, env, idem.WithDefaultLease(lease), idem.WithLeaseMargin(margin))
	sc := scope(t, "renewals-hang")

	var seq atomic.Int64
	var stopped, tookOver atomic.Int64 // the order in which they happened
	claimed := make(chan struct{})
	var wg sync.WaitGroup
	var holderErr error
	wg.Go(func() {
		_, holderErr = holder.Run(context.Background(), sc, "fp", func(ctx context.Context) (idem.Response, error) {
			context.AfterFunc(ctx, func() { stopped.Store(seq.Add(1)) })
			close(claimed)
			<-ctx.Done()
			// An effect still under way when the lease ends: it only
			// finishes once another caller has had the time to take over.
			time.Sleep(2 * lease)
			return idem.Response{Body: []byte("holder")}, nil
		})
	})
	<-claimed
	var res idem.Result
	for {
		res, err = taker.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
			tookOver.Store(seq.Add(1))
			return idem.Response{Body: []byte("taker")}, nil
		})
		if !errors.Is(err, idem.ErrInFlight) {
			must.NoError(t, err)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	hung.releaseAll()
	wg.Wait()
	must.NotZero(t, stopped.Load(), "the holder was never cancelled")
	check.Less(t, stopped.Load(), tookOver.Load(), "the holder must be stopped before another caller can take its key over")
	check.Positive(t, hung.renewals.Load(), "the heartbeat tried to renew")
	check.ErrorIs(t, holderErr, idem.ErrLeaseLost, "the holder's late completion is fenced out")
	check.Equal(t, "taker", string(res.Response.Body))
}

// hangingRenewals is a network on which every lease renewal (the
// heartbeat's UpdateItem) hangs until its context ends or release closes;
// every other request goes through to the store.
type hangingRenewals struct {
	idem.API
	release  chan struct{}
	once     sync.Once
	renewals atomic.Int64
}

func (h *hangingRenewals) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if strings.HasPrefix(aws.ToString(in.UpdateExpression), "SET #le = :le") {
		h.renewals.Add(1)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-h.release:
		}
	}
	return h.API.UpdateItem(ctx, in, opts...)
}

func (h *hangingRenewals) releaseAll() { h.once.Do(func() { close(h.release) }) }
