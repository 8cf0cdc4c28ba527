package idem_test

import (
	"context"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// lossy sends every request on to the store, then, for the next `drops`
// requests of operation op, throws the store's answer away and reports a
// 500: the write landed and the client never heard. The SDK retries 500s,
// which is how a retry meets its own earlier write.
type lossy struct {
	op    string
	mu    sync.Mutex
	drops int
	lost  int
}

func (l *lossy) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.Header.Get("X-Amz-Target"), "."+l.op) {
		return resp, err
	}
	l.mu.Lock()
	drop := l.drops > 0
	if drop {
		l.drops--
		l.lost++
	}
	l.mu.Unlock()
	if !drop {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return fakeAnswer(req, http.StatusInternalServerError, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"lost"}`), nil
}

// fakeAnswer is a DynamoDB JSON answer made up for req, as the SDK checks
// them (with a CRC32 header).
func fakeAnswer(req *http.Request, status int, body string) *http.Response {
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status),
		Header: http.Header{
			"Content-Type": {"application/x-amz-json-1.0"},
			"X-Amz-Crc32":  {strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)},
		},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

func lossyStore(t *testing.T, env *testEnv, l *lossy, opts ...idem.Option) *idem.Store {
	t.Helper()
	client, _ := env.NewClient(t, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: l}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 3 })
	})
	s, err := idem.NewStore(client, env.Tables.Idempotency, opts...)
	must.NoError(t, err)
	return s
}

// A claim whose answer was lost must not tell its caller the key is in
// flight (its own record), and must not leave the key blocked.
func TestClaimWhoseAnswerWasLostStillExecutes(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &lossy{op: "PutItem", drops: 1}
	s := lossyStore(t, env, l)
	ctx := context.Background()

	res, err := s.Execute(ctx, scope(t, "lost-put"), "fp", effect(env))
	must.NoError(t, err, "the SDK's retry found our own reservation")
	check.Equal(t, idem.OutcomeExecuted, res.Outcome)
	check.Equal(t, 1, l.lost)

	replay, err := newStore(t, env).Execute(ctx, scope(t, "lost-put"), "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, replay.Outcome)
	check.Equal(t, res.Response, replay.Response)
	check.Equal(t, 1, countItems(t, env, env.Tables.Products))
}

// Every attempt of the claim lands and every answer is lost: the call
// fails, but the claim it may have left is released, so the client's
// retry runs at once instead of meeting a 409.
func TestClaimFailingAfterItsWriteLandedReleasesIt(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &lossy{op: "PutItem", drops: 3}
	s := lossyStore(t, env, l)
	ctx := context.Background()

	res, err := s.Execute(ctx, scope(t, "lost-all"), "fp", effect(env))
	must.Error(t, err)
	must.NotErrorIs(t, err, idem.ErrInFlight)
	check.True(t, idem.IsUnavailable(err), "a 503: retry later")
	check.Equal(t, idem.OutcomeUnavailable, res.Outcome)
	check.Equal(t, 3, l.lost)

	_, ok, err := newStore(t, env).Get(ctx, scope(t, "lost-all"))
	must.NoError(t, err)
	check.False(t, ok, "the write that landed was released")
	retry, err := newStore(t, env).Execute(ctx, scope(t, "lost-all"), "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, retry.Outcome, "the client's retry runs at once, no 409")
	check.Equal(t, 1, countItems(t, env, env.Tables.Products))
}

// Every attempt of the commit lands... the first does, and every answer
// is lost, so the SDK gives up: the call reads the record, finds its own
// write, and succeeds, in both modes; no second product, no 503 for work
// that was done.
func TestCommitWhoseEveryAnswerWasLostStillSucceeds(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		l := &lossy{op: "TransactWriteItems", drops: 3}
		s := lossyStore(t, env, l, idem.WithMode(mode))
		ctx := context.Background()

		res, err := s.Execute(ctx, scope(t, "lost-tx"), "fp", effect(env))
		must.NoError(t, err, "the write landed; only its answers were lost")
		check.Equal(t, idem.OutcomeExecuted, res.Outcome)
		check.Equal(t, 3, l.lost)

		retry, err := newStore(t, env, idem.WithMode(mode)).Execute(ctx, scope(t, "lost-tx"), "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, retry.Outcome)
		check.Equal(t, res.Response, retry.Response)
		check.Equal(t, 1, countItems(t, env, env.Tables.Products), "the write landed once")
	})
}

// TestExecuteWhoseTransactionAnswerWasLostSucceeds: the TransactWriteItems
// lands and its answer is lost; the SDK retries it and meets the writes of
// its own first attempt. Success, one product, in both modes.
func TestExecuteWhoseTransactionAnswerWasLostSucceeds(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		l := &lossy{op: "TransactWriteItems", drops: 1}
		s := lossyStore(t, env, l, idem.WithMode(mode))
		ctx := context.Background()
		res, err := s.Execute(ctx, scope(t, "lost-commit"), "fp", effect(env))
		must.NoError(t, err, "the first attempt landed")
		check.Equal(t, idem.OutcomeExecuted, res.Outcome)
		check.Equal(t, 1, l.lost)
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))
		rec, _, err := s.Get(ctx, scope(t, "lost-commit"))
		must.NoError(t, err)
		check.Equal(t, res.Response, idem.Response(rec.Result))

		replay, err := newStore(t, env, idem.WithMode(mode)).Execute(ctx, scope(t, "lost-commit"), "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, replay.Outcome)
		check.Equal(t, res.Response, replay.Response)
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))
	})
}

func TestDoWhoseCompletionAnswerWasLostReportsSuccess(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &lossy{op: "UpdateItem", drops: 1}
	s := lossyStore(t, env, l)
	runs := 0
	v, outcome, err := idem.Do(context.Background(), s, scope(t, "lost-complete"), "fp", func(context.Context) (int, error) {
		runs++
		return 42, nil
	})
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, outcome)
	check.Equal(t, 42, v)
	check.Equal(t, 1, l.lost)
	v, outcome, err = idem.Do(context.Background(), s, scope(t, "lost-complete"), "fp", func(context.Context) (int, error) {
		runs++
		return 0, nil
	})
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, outcome)
	check.Equal(t, 42, v)
	check.Equal(t, 1, runs)
}

func TestExplainTxSortsCancellationReasons(t *testing.T) {
	t.Parallel()
	cancel := func(codes ...string) error {
		reasons := make([]types.CancellationReason, len(codes))
		for i, c := range codes {
			reasons[i] = types.CancellationReason{Code: &c}
		}
		return &types.TransactionCanceledException{CancellationReasons: reasons}
	}
	for _, tc := range []struct {
		codes []string
		want  error
		index int
	}{
		{[]string{"None", "None", "ConditionalCheckFailed"}, idem.ErrLeaseLost, 2},
		{[]string{"ConditionalCheckFailed", "None", "None"}, idem.ErrConditionFailed, 0},
		{[]string{"None", "TransactionConflict", "None"}, idem.ErrConflict, 1},
		{[]string{"ThrottlingError", "None", "None"}, idem.ErrThrottled, 0},
		{[]string{"None", "ProvisionedThroughputExceeded", "None"}, idem.ErrThrottled, 1},
		{[]string{"TransactionConflict", "ConditionalCheckFailed", "None"}, idem.ErrConditionFailed, 1},
		{[]string{"ConditionalCheckFailed", "None", "ConditionalCheckFailed"}, idem.ErrLeaseLost, 2}, // the key decides first
		{[]string{"None", "TransactionConflict", "ValidationError"}, idem.ErrTxRefused, 2},           // no retry helps, whatever the order
		{[]string{"None", "ValidationError", "TransactionConflict"}, idem.ErrTxRefused, 1},
	} {
		err := idem.ExplainTx(cancel(tc.codes...), 2)
		must.ErrorIs(t, err, tc.want, "%v", tc.codes)
		var txErr *idem.TxError
		must.ErrorAs(t, err, &txErr)
		check.Equal(t, tc.index, txErr.Index, "%v", tc.codes)
	}
	other := idem.ExplainTx(cancel("None", "ValidationError", "None"), 2)
	for _, kind := range []error{idem.ErrLeaseLost, idem.ErrConditionFailed, idem.ErrConflict, idem.ErrThrottled} {
		check.NotErrorIs(t, other, kind)
	}
	check.False(t, idem.IsUnavailable(other), "a refused transaction is not retried as a 503")
	msg := "Item size has exceeded the maximum allowed size"
	sized := idem.ExplainTx(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
		{Code: aws.String("None")}, {Code: aws.String("ValidationError"), Message: &msg},
	}}, 0)
	check.ErrorContains(t, sized, "transaction item 1: ValidationError: "+msg, "DynamoDB's reason reaches the log")
}

func TestLeaseEndSubMillisecondAgreesWithTheCondition(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	clk := newClock()
	client, counter := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithClock(clk.Now))
	must.NoError(t, err)
	ctx := context.Background()
	_, err = s.Reserve(ctx, scope(t, "edge"), "fp")
	must.NoError(t, err)
	clk.Advance(leaseTotal + 500_000) // half a millisecond past the lease end
	counter.Reset()
	_, err = s.Reserve(ctx, scope(t, "edge"), "fp")
	must.ErrorIs(t, err, idem.ErrInFlight, "the condition compares milliseconds: still held")
	check.Equal(t, 1, counter.Get("PutItem"), "one attempt, not a retry loop")
}

// conflicting answers the next `left` TransactWriteItems itself, without
// forwarding them, as DynamoDB answers a transaction that collided with
// another on the same item: cancelled, reason TransactionConflict.
type conflicting struct {
	mu        sync.Mutex
	left      int
	conflicts int
	at        int // the contended item's index
}

func (c *conflicting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	conflict := c.left > 0 && strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems")
	if conflict {
		c.left--
		c.conflicts++
	}
	c.mu.Unlock()
	if !conflict {
		return http.DefaultTransport.RoundTrip(req)
	}
	reasons := []string{`{"Code":"None"}`, `{"Code":"None"}`, `{"Code":"None"}`}
	reasons[c.at] = `{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}`
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",` +
		`"message":"Transaction cancelled, please refer cancellation reasons for specific reasons",` +
		`"CancellationReasons":[` + strings.Join(reasons, ",") + `]}`
	return fakeAnswer(req, http.StatusBadRequest, body), nil
}

func TestTransactionConflictIsRetriedThenReportedAsUnavailable(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		store := func(c *conflicting, opts ...idem.Option) *idem.Store {
			client, _ := env.NewClient(t, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: c} })
			s, err := idem.NewStore(client, env.Tables.Idempotency, append([]idem.Option{idem.WithMode(mode), idem.WithConflictAttempts(4)}, opts...)...)
			must.NoError(t, err)
			return s
		}
		ctx := context.Background()

		// One attempt allowed: one transaction sent, no wait after it.
		c := &conflicting{left: 100, at: 1}
		client, _ := env.NewClient(t, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: c} })
		one, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithMode(mode), idem.WithConflictAttempts(1))
		must.NoError(t, err)
		_, err = one.Execute(ctx, scope(t, "one-attempt"), "fp", effect(env))
		must.ErrorIs(t, err, idem.ErrConflict)
		check.Equal(t, 1, c.conflicts, "WithMaxTxAttempts(1) sends one transaction")

		// Three conflicts on the key's record, then the fourth attempt
		// lands: the holder's commit in reserve mode, retried with
		// jitter; in transact mode the claim, which with a wait reads
		// the record (absent) after each and tries again.
		c = &conflicting{left: 3}
		res, err := store(c, idem.WithWait(time.Minute)).Execute(ctx, scope(t, "conflicts"), "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, res.Outcome)
		check.Equal(t, 3, c.conflicts)
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))

		// Conflicts on the key's record: in transact mode the key is in
		// flight (another request's transaction holds the record), 409
		// with Retry-After, not a 503. Without a wait, at once: a
		// concurrent duplicate of a request still committing. With one,
		// after WithConflictAttempts(4) transactions, each conflict
		// followed by a pause and a read that finds the record absent.
		if mode == idem.ModeTransact {
			c = &conflicting{left: 100}
			res, err = store(c).Execute(ctx, scope(t, "record-contended"), "fp", effect(env))
			var inFlight *idem.InFlightError
			must.ErrorAs(t, err, &inFlight)
			check.Equal(t, idem.OutcomeInFlight, res.Outcome)
			check.Positive(t, inFlight.RetryAfter)
			check.Equal(t, 1, c.conflicts, "no wait: in flight after the one transaction")

			c = &conflicting{left: 100}
			res, err = store(c, idem.WithWait(time.Minute)).Execute(ctx, scope(t, "record-contended-wait"), "fp", effect(env))
			must.ErrorAs(t, err, &inFlight)
			check.Equal(t, idem.OutcomeInFlight, res.Outcome)
			check.Equal(t, 4, c.conflicts, "WithConflictAttempts(4)")
		}

		// Conflicts on a business item past the bound: nothing written, a
		// retryable error, the key free for the client's retry.
		c = &conflicting{left: 100, at: 1}
		res, err = store(c).Execute(ctx, scope(t, "conflicts-spent"), "fp", effect(env))
		must.ErrorIs(t, err, idem.ErrConflict)
		check.True(t, idem.IsUnavailable(err))
		check.Equal(t, idem.OutcomeUnavailable, res.Outcome)
		check.Equal(t, 4, c.conflicts, "WithMaxTxAttempts(4)")
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))
		retry, err := newStore(t, env, idem.WithMode(mode)).Execute(ctx, scope(t, "conflicts-spent"), "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, retry.Outcome)
	})
}

// A completion refused past the SDK's retries (one call throttled on
// every attempt) is tried again while the lease lasts: the effect, which
// happened, is recorded, and the retry replays it instead of running it
// again after the lease.
func TestRunRecordsAnEffectWhoseFirstCompletionWasThrottled(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if env.Store == nil {
		t.Skip("needs the strict test store's faults (DYNAMODB_TEST_BACKEND=embedded)")
	}
	s := newStore(t, env)
	sc := scope(t, "throttled-completion")
	var runs atomic.Int64
	res, err := s.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
		runs.Add(1)
		env.Store.Inject(idemtest.OpUpdateItem, idemtest.ThrottledPastRetries, 1)
		return idem.Response{Body: []byte("sent")}, nil
	})
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, res.Outcome)
	again, err := s.Run(context.Background(), sc, "fp", mustNotRun(t))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, again.Outcome)
	check.Equal(t, "sent", string(again.Response.Body))
	check.EqualValues(t, 1, runs.Load())
	check.GreaterOrEqual(t, env.Store.Calls(idemtest.OpUpdateItem), 4, "three throttled attempts, then the one that landed")
}
