package idemevent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemevent"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// shipOrder is a direct invocation's payload.
type shipOrder struct {
	RequestID string `json:"request_id"`
	Tenant    string `json:"tenant"`
	OrderID   string `json:"order_id"`
	Items     int    `json:"items"`
}

// shipment is the handler's result, stored and replayed as JSON.
type shipment struct {
	TrackingID string            `json:"tracking_id"`
	Parcels    []int             `json:"parcels"`
	Labels     map[string]string `json:"labels"`
}

// fixture is one test's strict store, its table and an idem.Store on it.
type fixture struct {
	srv   *idemtest.Server
	store *idem.Store
}

func newFixture(t *testing.T, opts ...idem.Option) *fixture {
	t.Helper()
	srv := idemtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, idemtable.Create(ctx, srv.Client(), "idempotency", idemtable.Layout{}))
	store, err := idem.NewStore(srv.Client(), "idempotency", opts...)
	require.NoError(t, err)
	srv.ResetCalls()
	return &fixture{srv: srv, store: store}
}

// calls returns the DynamoDB calls since the last one, per operation, and
// their total, and starts counting again.
func (f *fixture) calls() (string, int) {
	counts := f.srv.CallCounts()
	f.srv.ResetCalls()
	parts, total := []string{}, 0
	for op, n := range counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", op, n))
			total += n
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " "), total
}

var shipConfig = idemevent.Config[shipOrder]{
	Operation: "orders.ship",
	Key: func(e shipOrder) (string, error) {
		if e.RequestID == "" {
			return "", fmt.Errorf("%w: request_id", idemevent.ErrNoKey)
		}
		return e.RequestID, nil
	},
	Principal: func(e shipOrder) (string, error) { return e.Tenant, nil },
}

// shipper is a handler that counts its runs and takes a little time.
type shipper struct {
	runs  atomic.Int64
	delay time.Duration
	fail  atomic.Bool
}

func (s *shipper) handle(ctx context.Context, e shipOrder) (shipment, error) {
	n := s.runs.Add(1)
	time.Sleep(s.delay)
	if s.fail.Load() {
		return shipment{}, errors.New("carrier down")
	}
	return shipment{
		TrackingID: fmt.Sprintf("trk-%s-%d", e.OrderID, n),
		Parcels:    []int{e.Items, 1},
		Labels:     map[string]string{"order": e.OrderID},
	}, nil
}

func wrap(t *testing.T, f *fixture, cfg idemevent.Config[shipOrder], s *shipper) func(context.Context, shipOrder) (shipment, error) {
	t.Helper()
	h, err := idemevent.Wrap(f.store, cfg, s.handle)
	require.NoError(t, err)
	return h
}

// lambdaContext has a deadline, as every Lambda invocation's context has:
// the lease follows it.
func lambdaContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestConcurrentDuplicatesRunTheHandlerOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.srv.SetTransactionLatency(time.Millisecond)
	s := &shipper{delay: 5 * time.Millisecond}
	h := wrap(t, f, shipConfig, s)
	event := shipOrder{RequestID: "req-1", Tenant: "shop-1", OrderID: "o-1", Items: 3}

	const callers = 32
	results := make([]shipment, callers)
	errs := make([]error, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			results[i], errs[i] = h(lambdaContext(t), event)
		})
	}
	close(start)
	wg.Wait()
	ops, total := f.calls()
	t.Logf("32 concurrent duplicates: %s (%d calls, %.2f per caller)", ops, total, float64(total)/callers)

	require.EqualValues(t, 1, s.runs.Load(), "exactly one effect")
	var winner []byte
	answered, inFlight := 0, 0
	for i := range callers {
		if errs[i] != nil {
			var ife *idem.InFlightError
			require.ErrorAs(t, errs[i], &ife, "caller %d", i)
			// Unwrapped, so Lambda reports its type as "InFlightError"
			// for a Step Functions Retry to match.
			assert.IsType(t, &idem.InFlightError{}, errs[i])
			assert.Positive(t, ife.RetryAfter)
			inFlight++
			continue
		}
		got, err := json.Marshal(results[i])
		require.NoError(t, err)
		if winner == nil {
			winner = got
		}
		assert.JSONEq(t, string(winner), string(got), "caller %d", i)
		answered++
	}
	t.Logf("answered with the result: %d, in flight: %d", answered, inFlight)
	require.NotNil(t, winner, "the winner is answered")
	assert.Equal(t, callers, answered+inFlight)

	// Every caller that was in flight gets the winner's result on its retry.
	got, err := h(lambdaContext(t), event)
	require.NoError(t, err)
	j, _ := json.Marshal(got)
	assert.JSONEq(t, string(winner), string(j))
	assert.EqualValues(t, 1, s.runs.Load())
}

func TestFirstExecutionThenReplay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	h := wrap(t, f, shipConfig, s)
	event := shipOrder{RequestID: "req-2", Tenant: "shop-1", OrderID: "o-2", Items: 1}

	first, err := h(lambdaContext(t), event)
	require.NoError(t, err)
	ops, total := f.calls()
	t.Logf("first execution: %s (%d calls)", ops, total)
	assert.Equal(t, 2, total, "claim and completion")

	replay, err := h(lambdaContext(t), event)
	require.NoError(t, err)
	ops, total = f.calls()
	t.Logf("replay: %s (%d calls: the failed claim returns the record)", ops, total)
	assert.Equal(t, 1, total)
	assert.Equal(t, first, replay, "the stored result, decoded")
	assert.Equal(t, "trk-o-2-1", replay.TrackingID)
	assert.EqualValues(t, 1, s.runs.Load())

	// With the store's cache, a replay costs no call.
	cached := newFixture(t, idem.WithCache(10, 0))
	hc := wrap(t, cached, shipConfig, &shipper{})
	_, err = hc(lambdaContext(t), event)
	require.NoError(t, err)
	cached.calls()
	_, err = hc(lambdaContext(t), event)
	require.NoError(t, err)
	ops, total = cached.calls()
	t.Logf("replay from the cache: %q (%d calls)", ops, total)
	assert.Zero(t, total)
}

func TestKeyReuseIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	h := wrap(t, f, shipConfig, s)
	_, err := h(lambdaContext(t), shipOrder{RequestID: "req-3", Tenant: "shop-1", OrderID: "o-3", Items: 1})
	require.NoError(t, err)
	_, err = h(lambdaContext(t), shipOrder{RequestID: "req-3", Tenant: "shop-1", OrderID: "o-3", Items: 2})
	require.ErrorIs(t, err, idem.ErrKeyReuse)
	assert.EqualValues(t, 1, s.runs.Load())

	// Another principal with the same key is another scope: it runs.
	_, err = h(lambdaContext(t), shipOrder{RequestID: "req-3", Tenant: "shop-2", OrderID: "o-3", Items: 2})
	require.NoError(t, err)
	assert.EqualValues(t, 2, s.runs.Load())
}

func TestMissingKey(t *testing.T) {
	t.Parallel()
	noKey := shipOrder{Tenant: "shop-1", OrderID: "o-4", Items: 1}

	t.Run("fails by default", func(t *testing.T) {
		f := newFixture(t)
		s := &shipper{}
		h := wrap(t, f, shipConfig, s)
		_, err := h(lambdaContext(t), noKey)
		require.ErrorIs(t, err, idemevent.ErrNoKey)
		assert.Contains(t, err.Error(), "request_id")
		assert.Zero(t, s.runs.Load())
		_, total := f.calls()
		assert.Zero(t, total)

		// An empty key is no key either.
		cfg := shipConfig
		cfg.Key = func(e shipOrder) (string, error) { return e.RequestID, nil }
		_, err = wrap(t, f, cfg, s)(lambdaContext(t), noKey)
		require.ErrorIs(t, err, idemevent.ErrNoKey)
		assert.Zero(t, s.runs.Load())
	})
	t.Run("runs unprotected when chosen", func(t *testing.T) {
		f := newFixture(t)
		s := &shipper{}
		cfg := shipConfig
		cfg.RunWithoutKey = true
		cfg.Key = func(e shipOrder) (string, error) { return e.RequestID, nil }
		h, err := idemevent.Wrap(f.store, cfg, func(ctx context.Context, e shipOrder) (shipment, error) {
			_, ok := idemevent.ScopeFrom(ctx)
			assert.False(t, ok, "no scope for an unprotected run")
			return s.handle(ctx, e)
		})
		require.NoError(t, err)
		for range 2 {
			_, err := h(lambdaContext(t), noKey)
			require.NoError(t, err)
		}
		assert.EqualValues(t, 2, s.runs.Load(), "at least once: every delivery runs")
		_, total := f.calls()
		assert.Zero(t, total)
	})
	t.Run("other key errors still fail", func(t *testing.T) {
		f := newFixture(t)
		s := &shipper{}
		cfg := shipConfig
		cfg.RunWithoutKey = true
		bad := errors.New("malformed event")
		cfg.Key = func(shipOrder) (string, error) { return "", bad }
		_, err := wrap(t, f, cfg, s)(lambdaContext(t), noKey)
		require.ErrorIs(t, err, bad)
		assert.Zero(t, s.runs.Load())
	})
}

func TestAFailingHandlerReleasesTheKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	s.fail.Store(true)
	h := wrap(t, f, shipConfig, s)
	event := shipOrder{RequestID: "req-5", Tenant: "shop-1", OrderID: "o-5", Items: 1}
	_, err := h(lambdaContext(t), event)
	require.ErrorContains(t, err, "carrier down")
	ops, total := f.calls()
	t.Logf("failed execution: %s (%d calls)", ops, total)

	s.fail.Store(false)
	got, err := h(lambdaContext(t), event) // the retry runs at once, not in flight
	require.NoError(t, err)
	assert.Equal(t, "trk-o-5-2", got.TrackingID)
	assert.EqualValues(t, 2, s.runs.Load())
}

func TestPrincipalIsRequired(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	cfg := shipConfig
	cfg.Principal = nil
	_, err := idemevent.Wrap(f.store, cfg, s.handle)
	require.ErrorContains(t, err, "Principal is required")
	for _, broken := range []func(*idemevent.Config[shipOrder]){
		func(c *idemevent.Config[shipOrder]) { c.Operation = "" },
		func(c *idemevent.Config[shipOrder]) { c.Key = nil },
	} {
		cfg := shipConfig
		broken(&cfg)
		_, err := idemevent.Wrap(f.store, cfg, s.handle)
		require.Error(t, err)
	}
	_, err = idemevent.Wrap(nil, shipConfig, s.handle)
	require.Error(t, err)

	// An empty principal is never "anonymous".
	h := wrap(t, f, shipConfig, s)
	_, err = h(lambdaContext(t), shipOrder{RequestID: "req-6", OrderID: "o-6"})
	require.ErrorIs(t, err, idem.ErrInvalidKey)
	require.ErrorContains(t, err, "empty principal")
	assert.Zero(t, s.runs.Load())
	_, total := f.calls()
	assert.Zero(t, total)
}

func TestHandlerSeesItsScopeAndTheHookItsOutcome(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var outcomes []idem.Outcome
	f := newFixture(t, idem.WithOutcomeHook(func(_ context.Context, sc idem.Scope, o idem.Outcome, _ error) {
		mu.Lock()
		defer mu.Unlock()
		outcomes = append(outcomes, o)
	}))
	var seen idem.Scope
	h, err := idemevent.Wrap(f.store, shipConfig, func(ctx context.Context, e shipOrder) (string, error) {
		seen, _ = idemevent.ScopeFrom(ctx)
		return "ok", nil
	})
	require.NoError(t, err)
	event := shipOrder{RequestID: "req-7", Tenant: "shop-1"}
	for range 2 {
		_, err := h(lambdaContext(t), event)
		require.NoError(t, err)
	}
	assert.Equal(t, idem.Scope{Operation: "orders.ship", Principal: "shop-1", Key: "req-7"}, seen)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed}, outcomes)
}

// A handler whose effect happened but whose result could not be recorded
// (the completion throttled past the SDK's retries) answers with its
// result and no error: an error would have Lambda's asynchronous retry,
// or an EventBridge target's, deliver the event again after the lease,
// and run the handler again.
func TestAnEffectWhoseCompletionWasNotRecordedIsNotRetried(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var outcomes []idem.Outcome
	f := newFixture(t, idem.WithLease(time.Second, 100*time.Millisecond), idem.WithOutcomeHook(func(_ context.Context, _ idem.Scope, o idem.Outcome, _ error) {
		mu.Lock()
		defer mu.Unlock()
		outcomes = append(outcomes, o)
	}))
	s := &shipper{}
	h, err := idemevent.Wrap(f.store, shipConfig, func(ctx context.Context, e shipOrder) (shipment, error) {
		out, err := s.handle(ctx, e)
		// The effect happened; then every completion attempt is throttled.
		f.srv.Inject(idemtest.OpUpdateItem, idemtest.Throttled, 1000)
		return out, err
	})
	require.NoError(t, err)
	t.Cleanup(f.srv.ClearFaults)
	// The completion is tried until the invocation's deadline: a short one.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	got, err := h(ctx, shipOrder{RequestID: "req-8", Tenant: "shop-1", OrderID: "o-8", Items: 2})
	require.NoError(t, err, "the effect happened: the event must not be retried")
	assert.Equal(t, "trk-o-8-1", got.TrackingID, "the handler's own result")
	assert.EqualValues(t, 1, s.runs.Load())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []idem.Outcome{idem.OutcomeNotRecorded}, outcomes, "the hook can count it")
}
