package idem_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
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
		return idem.Response{Status: http.StatusAccepted, Body: []byte("first")}, nil
	}
	var wg sync.WaitGroup
	var first idem.Result
	var firstErr error
	wg.Go(func() { first, firstErr = s.Run(context.Background(), sc, "fp", slow) })

	<-started
	time.Sleep(2 * lease) // past the lease the holder started with
	dup, err := s.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
		effects.Add(1)
		return idem.Response{Status: http.StatusAccepted, Body: []byte("second")}, nil
	})
	var inflight *idem.InFlightError
	assert.True(t, errors.As(err, &inflight), "the duplicate must wait for the live holder: %v (%s)", err, dup.Outcome)

	wg.Wait()
	require.NoError(t, firstErr)
	assert.Equal(t, idem.OutcomeExecuted, first.Outcome)
	again, err := s.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
		effects.Add(1)
		return idem.Response{}, errors.New("must not run")
	})
	require.NoError(t, err)
	assert.Equal(t, idem.OutcomeReplayed, again.Outcome)
	assert.Equal(t, "first", string(again.Response.Body))
	assert.EqualValues(t, 1, effects.Load(), "the effect ran once")
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
		require.NoError(t, err)
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
			return idem.Response{}, ctx.Err()
		case <-time.After(10 * lease):
			return idem.Response{Status: http.StatusOK}, nil
		}
	})
	require.ErrorIs(t, cause, idem.ErrLeaseLost)
	require.ErrorIs(t, err, context.Canceled)
}
