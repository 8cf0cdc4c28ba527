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

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemevent"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
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
	must.NoError(t, idemtable.Create(ctx, srv.Client(), "idempotency", idemtable.Layout{}))
	store, err := idem.NewStore(srv.Client(), "idempotency", opts...)
	must.NoError(t, err)
	_, err = store.Learn(ctx) // at init, as a Lambda function's main does
	must.NoError(t, err)
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

// shipOp is the operation of the tests' handler.
const shipOp = "orders.ship"

// readShip reads a shipment order's entry: its tenant and request id.
func readShip(e shipOrder) (idemevent.Entry, error) {
	if e.RequestID == "" {
		return idemevent.Entry{}, fmt.Errorf("%w: request_id", idemevent.ErrNoKey)
	}
	return idemevent.Entry{Principal: e.Tenant, Key: e.RequestID}, nil
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

func wrap(t *testing.T, f *fixture, read func(shipOrder) (idemevent.Entry, error), s *shipper, opts ...idemevent.Option) func(context.Context, shipOrder) (shipment, error) {
	t.Helper()
	h, err := idemevent.Wrap(f.store, shipOp, read, s.handle, opts...)
	must.NoError(t, err)
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
	h := wrap(t, f, readShip, s)
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

	must.EqualValues(t, 1, s.runs.Load(), "exactly one effect")
	var winner []byte
	answered, inFlight := 0, 0
	for i := range callers {
		if errs[i] != nil {
			var ife *idem.InFlightError
			must.ErrorAs(t, errs[i], &ife, "caller %d", i)
			// Unwrapped, so Lambda reports its type as "InFlightError"
			// for a Step Functions Retry to match.
			check.IsType(t, &idem.InFlightError{}, errs[i])
			check.Positive(t, ife.RetryAfter)
			inFlight++
			continue
		}
		got, err := json.Marshal(results[i])
		must.NoError(t, err)
		if winner == nil {
			winner = got
		}
		check.JSONEq(t, string(winner), string(got), "caller %d", i)
		answered++
	}
	t.Logf("answered with the result: %d, in flight: %d", answered, inFlight)
	must.NotNil(t, winner, "the winner is answered")
	check.Equal(t, callers, answered+inFlight)

	// Every caller that was in flight gets the winner's result on its retry.
	got, err := h(lambdaContext(t), event)
	must.NoError(t, err)
	j, _ := json.Marshal(got)
	check.JSONEq(t, string(winner), string(j))
	check.EqualValues(t, 1, s.runs.Load())
}

func TestFirstExecutionThenReplay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	h := wrap(t, f, readShip, s)
	event := shipOrder{RequestID: "req-2", Tenant: "shop-1", OrderID: "o-2", Items: 1}

	first, err := h(lambdaContext(t), event)
	must.NoError(t, err)
	ops, total := f.calls()
	t.Logf("first execution: %s (%d calls)", ops, total)
	check.Equal(t, 2, total, "claim and completion")

	replay, err := h(lambdaContext(t), event)
	must.NoError(t, err)
	ops, total = f.calls()
	t.Logf("replay: %s (%d calls: the failed claim returns the record)", ops, total)
	check.Equal(t, 1, total)
	check.Equal(t, first, replay, "the stored result, decoded")
	check.Equal(t, "trk-o-2-1", replay.TrackingID)
	check.EqualValues(t, 1, s.runs.Load())

	// With the store's cache, a replay costs no call.
	cached := newFixture(t, idem.WithCache(10, 0))
	hc := wrap(t, cached, readShip, &shipper{})
	_, err = hc(lambdaContext(t), event)
	must.NoError(t, err)
	cached.calls()
	_, err = hc(lambdaContext(t), event)
	must.NoError(t, err)
	ops, total = cached.calls()
	t.Logf("replay from the cache: %q (%d calls)", ops, total)
	check.Zero(t, total)
}

func TestKeyReuseIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	h := wrap(t, f, readShip, s)
	_, err := h(lambdaContext(t), shipOrder{RequestID: "req-3", Tenant: "shop-1", OrderID: "o-3", Items: 1})
	must.NoError(t, err)
	_, err = h(lambdaContext(t), shipOrder{RequestID: "req-3", Tenant: "shop-1", OrderID: "o-3", Items: 2})
	must.ErrorIs(t, err, idem.ErrKeyReuse)
	check.EqualValues(t, 1, s.runs.Load())

	// Another principal with the same key is another scope: it runs.
	_, err = h(lambdaContext(t), shipOrder{RequestID: "req-3", Tenant: "shop-2", OrderID: "o-3", Items: 2})
	must.NoError(t, err)
	check.EqualValues(t, 2, s.runs.Load())
}

func TestMissingKey(t *testing.T) {
	t.Parallel()
	noKey := shipOrder{Tenant: "shop-1", OrderID: "o-4", Items: 1}

	t.Run("fails by default", func(t *testing.T) {
		f := newFixture(t)
		s := &shipper{}
		h := wrap(t, f, readShip, s)
		_, err := h(lambdaContext(t), noKey)
		must.ErrorIs(t, err, idemevent.ErrNoKey)
		check.Contains(t, err.Error(), "request_id")
		check.Zero(t, s.runs.Load())
		_, total := f.calls()
		check.Zero(t, total)

		// An empty key is no key either.
		bare := func(e shipOrder) (idemevent.Entry, error) {
			return idemevent.Entry{Principal: e.Tenant, Key: e.RequestID}, nil
		}
		_, err = wrap(t, f, bare, s)(lambdaContext(t), noKey)
		must.ErrorIs(t, err, idemevent.ErrNoKey)
		check.Zero(t, s.runs.Load())
	})
	t.Run("runs unprotected when chosen", func(t *testing.T) {
		f := newFixture(t)
		s := &shipper{}
		bare := func(e shipOrder) (idemevent.Entry, error) {
			return idemevent.Entry{Principal: e.Tenant, Key: e.RequestID}, nil
		}
		h, err := idemevent.Wrap(f.store, shipOp, bare, func(ctx context.Context, e shipOrder) (shipment, error) {
			_, ok := idem.ScopeFrom(ctx)
			check.False(t, ok, "no scope for an unprotected run")
			return s.handle(ctx, e)
		}, idemevent.WithRunWithoutKey())
		must.NoError(t, err)
		for range 2 {
			_, err := h(lambdaContext(t), noKey)
			must.NoError(t, err)
		}
		check.EqualValues(t, 2, s.runs.Load(), "at least once: every delivery runs")
		_, total := f.calls()
		check.Zero(t, total)
	})
	t.Run("other key errors still fail", func(t *testing.T) {
		f := newFixture(t)
		s := &shipper{}
		bad := errors.New("malformed event")
		broken := func(shipOrder) (idemevent.Entry, error) { return idemevent.Entry{}, bad }
		_, err := wrap(t, f, broken, s, idemevent.WithRunWithoutKey())(lambdaContext(t), noKey)
		must.ErrorIs(t, err, bad)
		check.Zero(t, s.runs.Load())
	})
}

func TestAFailingHandlerReleasesTheKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	s.fail.Store(true)
	h := wrap(t, f, readShip, s)
	event := shipOrder{RequestID: "req-5", Tenant: "shop-1", OrderID: "o-5", Items: 1}
	_, err := h(lambdaContext(t), event)
	must.ErrorContains(t, err, "carrier down")
	ops, total := f.calls()
	t.Logf("failed execution: %s (%d calls)", ops, total)

	s.fail.Store(false)
	got, err := h(lambdaContext(t), event) // the retry runs at once, not in flight
	must.NoError(t, err)
	check.Equal(t, "trk-o-5-2", got.TrackingID)
	check.EqualValues(t, 2, s.runs.Load())
}

// Wrap refuses what it cannot serve before any event: no store,
// operation, read function or handler, a retention under the lease.
func TestWrapRefusesWhatItCannotServe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	for name, wrap := range map[string]func() error{
		"no store":     func() error { _, err := idemevent.Wrap(nil, shipOp, readShip, s.handle); return err },
		"no operation": func() error { _, err := idemevent.Wrap(f.store, "", readShip, s.handle); return err },
		"no read":      func() error { _, err := idemevent.Wrap(f.store, shipOp, nil, s.handle); return err },
		"no handler": func() error {
			_, err := idemevent.Wrap[shipOrder, shipment](f.store, shipOp, readShip, nil)
			return err
		},
		"retention under the lease": func() error {
			_, err := idemevent.Wrap(f.store, shipOp, readShip, s.handle, idemevent.WithRetention(time.Second))
			return err
		},
	} {
		check.Error(t, wrap(), name)
	}
	_, err := idemevent.Wrap(f.store, shipOp, readShip, s.handle, idemevent.WithRetention(time.Hour), idemevent.Option{})
	check.NoError(t, err)
}

func TestPrincipalIsRequired(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	// An empty principal is never "anonymous".
	h := wrap(t, f, readShip, s)
	_, err := h(lambdaContext(t), shipOrder{RequestID: "req-6", OrderID: "o-6"})
	must.ErrorIs(t, err, idem.ErrInvalidKey)
	must.ErrorContains(t, err, "empty principal")
	check.Zero(t, s.runs.Load())
	_, total := f.calls()
	check.Zero(t, total)
}

// A sender named "anonymous" is a named sender like any other: it never
// shares the anonymous scope (an Entry with Anonymous set, for senders
// that cannot be named), and each replays only its own.
func TestASenderNamedAnonymousIsNotTheAnonymousScope(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &shipper{}
	read := func(e shipOrder) (idemevent.Entry, error) {
		return idemevent.Entry{Principal: e.Tenant, Anonymous: e.Tenant == "", Key: e.RequestID}, nil
	}
	var scopes []idem.Scope
	h, err := idemevent.Wrap(f.store, shipOp, read, func(ctx context.Context, e shipOrder) (shipment, error) {
		sc, _ := idem.ScopeFrom(ctx)
		scopes = append(scopes, sc)
		return s.handle(ctx, e)
	})
	must.NoError(t, err)
	event := func(tenant string) shipOrder { return shipOrder{RequestID: "req-1", Tenant: tenant, OrderID: "o-1"} }
	guest, err := h(lambdaContext(t), event(""))
	must.NoError(t, err)
	named, err := h(lambdaContext(t), event("anonymous"))
	must.NoError(t, err)
	check.NotEqual(t, guest.TrackingID, named.TrackingID, "the sender named anonymous got the anonymous scope's result")
	check.EqualValues(t, 2, s.runs.Load())
	must.Len(t, scopes, 2)
	check.True(t, scopes[0].Anonymous())
	check.Equal(t, idem.Scope{Operation: "orders.ship", Principal: "anonymous", Key: "req-1"}, scopes[1])
	for tenant, want := range map[string]shipment{"": guest, "anonymous": named} {
		again, err := h(lambdaContext(t), event(tenant))
		must.NoError(t, err)
		check.Equal(t, want, again, "%q replays its own", tenant)
	}
	check.EqualValues(t, 2, s.runs.Load())
}

// outcomeLog is a store's trace of every call's outcome (its CallDone).
type outcomeLog struct {
	mu  sync.Mutex
	got []idem.Outcome
}

func (l *outcomeLog) option() idem.Option {
	return idem.WithTrace(&idemtrace.Trace{CallDone: func(_ context.Context, i idemtrace.CallDoneInfo) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got = append(l.got, idem.Outcome(i.Outcome))
	}})
}

func (l *outcomeLog) outcomes() []idem.Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.got
}

func TestHandlerSeesItsScopeAndTheTraceItsOutcome(t *testing.T) {
	t.Parallel()
	var log outcomeLog
	f := newFixture(t, log.option())
	var seen idem.Scope
	h, err := idemevent.Wrap(f.store, shipOp, readShip, func(ctx context.Context, e shipOrder) (string, error) {
		seen, _ = idem.ScopeFrom(ctx)
		return "ok", nil
	})
	must.NoError(t, err)
	event := shipOrder{RequestID: "req-7", Tenant: "shop-1"}
	for range 2 {
		_, err := h(lambdaContext(t), event)
		must.NoError(t, err)
	}
	check.Equal(t, idem.Scope{Operation: "orders.ship", Principal: "shop-1", Key: "req-7"}, seen)
	check.Equal(t, []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed}, log.outcomes())
}

// A handler whose effect happened but whose result could not be recorded
// (the completion throttled past the SDK's retries) answers with its
// result and no error: an error would have Lambda's asynchronous retry,
// or an EventBridge target's, deliver the event again after the lease,
// and run the handler again.
func TestAnEffectWhoseCompletionWasNotRecordedIsNotRetried(t *testing.T) {
	t.Parallel()
	var log outcomeLog
	f := newFixture(t, idem.WithLease(time.Second, 100*time.Millisecond), log.option())
	s := &shipper{}
	h, err := idemevent.Wrap(f.store, shipOp, readShip, func(ctx context.Context, e shipOrder) (shipment, error) {
		out, err := s.handle(ctx, e)
		// The effect happened; then every completion attempt is throttled.
		f.srv.Inject(idemtest.OpUpdateItem, idemtest.Throttled, 1000)
		return out, err
	})
	must.NoError(t, err)
	t.Cleanup(f.srv.ClearFaults)
	// The completion is tried until the invocation's deadline: a short one.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	got, err := h(ctx, shipOrder{RequestID: "req-8", Tenant: "shop-1", OrderID: "o-8", Items: 2})
	must.NoError(t, err, "the effect happened: the event must not be retried")
	check.Equal(t, "trk-o-8-1", got.TrackingID, "the handler's own result")
	check.EqualValues(t, 1, s.runs.Load())
	check.Equal(t, []idem.Outcome{idem.OutcomeNotRecorded}, log.outcomes(), "the trace can count it")
}
