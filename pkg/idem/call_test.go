package idem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// CallRetention sets how long the record of that call alone replays, in
// every way in; the store's retention holds for the others, and for the
// calls the operation makes in turn.
func TestCallRetentionIsThatCallsAlone(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	clk := newClock()
	s := newStore(t, env, idem.WithClock(clk.Now))
	ctx := context.Background()
	const short = 2 * time.Hour
	run := func(context.Context) (idem.Response, error) { return idem.Response{Body: []byte("ok")}, nil }
	ways := map[string]func(sc idem.Scope, opts ...idem.CallOption) error{
		"Execute": func(sc idem.Scope, opts ...idem.CallOption) error {
			_, err := s.Execute(ctx, sc, "fp", effect(env), opts...)
			return err
		},
		"Transact": func(sc idem.Scope, opts ...idem.CallOption) error {
			_, err := s.Transact(ctx, sc, "fp", effect(env), opts...)
			return err
		},
		"Run": func(sc idem.Scope, opts ...idem.CallOption) error {
			_, err := s.Run(ctx, sc, "fp", run, opts...)
			return err
		},
		"Do": func(sc idem.Scope, opts ...idem.CallOption) error {
			_, _, err := idem.Do(ctx, s, sc, "fp", func(context.Context) (int, error) { return 1, nil }, opts...)
			return err
		},
		"ExecuteBatch": func(sc idem.Scope, opts ...idem.CallOption) error {
			res, err := s.ExecuteBatch(ctx, []idem.BatchItem{{Scope: sc, Fingerprint: "fp"}},
				func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil }, opts...)
			if err != nil {
				return err
			}
			return res[0].Err
		},
	}
	expiry := func(sc idem.Scope) time.Duration {
		t.Helper()
		rec, ok, err := s.Get(ctx, sc)
		must.NoError(t, err)
		must.True(t, ok, "the record of %s", sc.Key)
		return rec.ExpiresAt.Sub(clk.Now().Truncate(time.Second))
	}
	checkCallRetention(t, ways, short, expiry)

	// The call an operation makes in turn has the store's retention.
	outer, inner := scope(t, "outer"), scope(t, "inner")
	_, err := s.Run(ctx, outer, "fp", func(ctx context.Context) (idem.Response, error) {
		_, err := s.Run(ctx, inner, "fp", run)
		return idem.Response{}, err
	}, idem.CallRetention(short))
	must.NoError(t, err)
	check.Equal(t, short, expiry(outer))
	check.Equal(t, idem.DefaultRetention, expiry(inner), "a nested call has its own settings")
}

// checkCallRetention calls each way twice, with CallRetention(short) and
// without, and checks the expiry of each record (from its completion):
// short, then the store's DefaultRetention.
func checkCallRetention(t *testing.T, ways map[string]func(sc idem.Scope, opts ...idem.CallOption) error, short time.Duration, expiry func(idem.Scope) time.Duration) {
	t.Helper()
	for name, call := range ways {
		own, other := scope(t, name+"-own"), scope(t, name+"-other")
		must.NoError(t, call(own, idem.CallRetention(short)), name)
		must.NoError(t, call(other), name)
		check.Equal(t, short, expiry(own), "%s with CallRetention", name)
		check.Equal(t, idem.DefaultRetention, expiry(other), "%s without", name)
	}
}

// A call's wait is that call's: the call its operation makes in turn
// answers in flight at once, as its store says, after its one claim (a
// wait would poll the record until the nested call's deadline).
func TestCallWaitDoesNotReachNestedCalls(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env)
	client, calls := env.NewClient(t)
	inner, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout))
	must.NoError(t, err)
	ctx := context.Background()
	held := scope(t, "held")
	_, err = s.Reserve(ctx, held, "fp") // a live holder
	must.NoError(t, err)
	var nested error
	_, err = s.Run(ctx, scope(t, "waiting-outer"), "fp", func(ctx context.Context) (idem.Response, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, nested = inner.Run(ctx, held, "fp", mustNotRun(t))
		return idem.Response{}, nil
	}, idem.CallWait(time.Hour))
	must.NoError(t, err)
	check.ErrorIs(t, nested, idem.ErrInFlight)
	check.Equal(t, 1, calls.Get("PutItem"), "%s", calls)
	check.LessOrEqual(t, calls.Total(), 2, "no polls: %s", calls)
}

// A retention under a lease is refused before the call starts: no
// effect, no DynamoDB request; ValidateCall says so first.
func TestCallRetentionUnderALeaseIsRefused(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	client, calls := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout))
	must.NoError(t, err)
	short := idem.CallRetention(time.Minute) // the default lease is 60 s, plus its margin
	must.NoError(t, s.ValidateCall(idem.CallRetention(time.Hour), idem.CallWait(time.Second), idem.CallRedelivers()))
	err = s.ValidateCall(short)
	must.Error(t, err)
	check.Contains(t, err.Error(), "shorter than a lease")

	res, err := s.Run(context.Background(), scope(t, "short"), "fp", mustNotRun(t), short)
	must.Error(t, err)
	check.Equal(t, idem.OutcomeError, res.Outcome)
	_, err = s.ExecuteBatch(context.Background(), []idem.BatchItem{{Scope: scope(t, "short-batch"), Fingerprint: "fp"}},
		func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil }, short)
	must.Error(t, err)
	check.Equal(t, 0, calls.Total(), "no DynamoDB request: %s", calls)
}

// OutcomeOf and RetryAfter are what an adapter answers its client with.
func TestOutcomeOfAndRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err     error
		outcome idem.Outcome
		after   time.Duration
	}{
		{nil, idem.OutcomeExecuted, 0},
		{&idem.InFlightError{RetryAfter: 7 * time.Second}, idem.OutcomeInFlight, 7 * time.Second},
		{fmt.Errorf("wrapped: %w", &idem.InFlightError{RetryAfter: time.Millisecond}), idem.OutcomeInFlight, time.Second},
		{idem.ErrInFlight, idem.OutcomeInFlight, time.Second},
		{idem.ErrLeaseLost, idem.OutcomeLeaseLost, time.Second},
		{context.DeadlineExceeded, idem.OutcomeUnavailable, time.Second},
		{idem.ErrKeyReuse, idem.OutcomeKeyReuse, 0},
		{idem.ErrInvalidKey, idem.OutcomeRejected, 0},
		{fmt.Errorf("%w: x", idem.ErrNotRecorded), idem.OutcomeNotRecorded, 0},
		{errors.New("boom"), idem.OutcomeError, 0},
	} {
		check.Equal(t, tc.outcome, idem.OutcomeOf(tc.err), "%v", tc.err)
		check.Equal(t, tc.after, idem.RetryAfter(tc.err), "%v", tc.err)
	}
}
