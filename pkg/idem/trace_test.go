package idem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemevent"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// phaseKey is where traceLog's Start hooks put their phase, so its Done
// hooks and events can check the context they get.
type phaseKey struct{}

// traceLog is a trace that writes every hook call as a line, and checks
// that each Done hook gets the context its Start hook returned and that
// each event comes inside the phase it belongs to.
type traceLog struct {
	name  string // prefixed to each line when set
	mu    sync.Mutex
	lines []string
	errs  []string
	takes []idemtrace.ClaimAttemptInfo // claim attempts with a holder's lease
}

func (l *traceLog) add(ctx context.Context, want string, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	if l.name != "" {
		line = l.name + ": " + line
	}
	l.lines = append(l.lines, line)
	if got, _ := ctx.Value(phaseKey{}).(string); want != "" && got != want {
		l.errs = append(l.errs, fmt.Sprintf("%s: in phase %q, want %q", line, got, want))
	}
}

// begin is a Start hook's: it logs and returns ctx in phase.
func (l *traceLog) begin(ctx context.Context, phase string, format string, args ...any) context.Context {
	l.add(ctx, "", format, args...)
	return context.WithValue(ctx, phaseKey{}, phase)
}

// take returns the lines since the last take, and fails t for any
// context that was not the phase's.
func (l *traceLog) take(t *testing.T) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		t.Error(e)
	}
	out := l.lines
	l.lines, l.errs = nil, nil
	return out
}

func errMark(err error) string {
	if err != nil {
		return " err"
	}
	return ""
}

func (l *traceLog) trace() *idemtrace.Trace {
	return &idemtrace.Trace{
		CallStart: func(ctx context.Context, i idemtrace.CallStartInfo) context.Context {
			return l.begin(ctx, "call", "call.start %s %s items=%d", i.Way, i.Operation, i.Items)
		},
		CallDone: func(ctx context.Context, i idemtrace.CallDoneInfo) {
			if i.Panicked {
				l.add(ctx, "call", "call.done %s panicked", i.Way)
				return
			}
			l.add(ctx, "call", "call.done %s %s%s", i.Way, i.Outcome, errMark(i.Err))
		},
		CacheHit: func(ctx context.Context, i idemtrace.CacheHitInfo) {
			l.add(ctx, "call", "cache.hit %s", i.Outcome)
		},
		ClaimStart: func(ctx context.Context, i idemtrace.ClaimStartInfo) context.Context {
			return l.begin(ctx, "claim", "claim.start wait=%v", i.Wait)
		},
		ClaimAttempt: func(ctx context.Context, i idemtrace.ClaimAttemptInfo) {
			want := "claim"
			if got, _ := ctx.Value(phaseKey{}).(string); got == "commit" {
				want = "commit" // Transact's
			}
			l.add(ctx, want, "claim.attempt %d %s", i.Attempt, i.Result)
			if !i.HolderLeaseExpiresAt.IsZero() {
				l.mu.Lock()
				l.takes = append(l.takes, i)
				l.mu.Unlock()
			}
		},
		ClaimDone: func(ctx context.Context, i idemtrace.ClaimDoneInfo) {
			l.add(ctx, "claim", "claim.done %s%s", i.Result, errMark(i.Err))
		},
		WaitStart: func(ctx context.Context, i idemtrace.WaitStartInfo) context.Context {
			return l.begin(ctx, "wait", "wait.start %s", i.Reason)
		},
		WaitPoll: func(ctx context.Context, i idemtrace.WaitPollInfo) {
			l.add(ctx, "wait", "wait.poll %s", i.Result)
		},
		WaitDone: func(ctx context.Context, i idemtrace.WaitDoneInfo) {
			l.add(ctx, "wait", "wait.done %s", i.Result)
		},
		EffectStart: func(ctx context.Context, i idemtrace.EffectStartInfo) context.Context {
			return l.begin(ctx, "effect", "effect.start lease=%t", !i.LeaseExpiresAt.IsZero())
		},
		EffectDone: func(ctx context.Context, i idemtrace.EffectDoneInfo) {
			if i.Panicked {
				l.add(ctx, "effect", "effect.done panicked")
				return
			}
			l.add(ctx, "effect", "effect.done%s", errMark(i.Err))
		},
		CommitStart: func(ctx context.Context, i idemtrace.CommitStartInfo) context.Context {
			return l.begin(ctx, "commit", "commit.start %s writes=%d claims=%t", i.Request, i.Writes, i.Claims)
		},
		CommitDone: func(ctx context.Context, i idemtrace.CommitDoneInfo) {
			l.add(ctx, "commit", "commit.done%s", errMark(i.Err))
		},
		Retry: func(ctx context.Context, i idemtrace.RetryInfo) {
			l.add(ctx, "", "retry %d %s %d", i.Attempt, i.Reason, i.Index)
		},
		ReleaseStart: func(ctx context.Context, i idemtrace.ReleaseStartInfo) context.Context {
			return l.begin(ctx, "release", "release.start")
		},
		ReleaseDone: func(ctx context.Context, i idemtrace.ReleaseDoneInfo) {
			l.add(ctx, "release", "release.done landed=%t%s", i.Landed, errMark(i.Err))
		},
		BatchTxStart: func(ctx context.Context, i idemtrace.BatchTxStartInfo) context.Context {
			return l.begin(ctx, "batchtx", "batchtx.start items=%v writes=%d attempt=%d", i.Items, i.Writes, i.Attempt)
		},
		BatchTxDone: func(ctx context.Context, i idemtrace.BatchTxDoneInfo) {
			l.add(ctx, "batchtx", "batchtx.done reasons=%v%s", i.Reasons, errMark(i.Err))
		},
		BatchItem: func(ctx context.Context, i idemtrace.BatchItemInfo) {
			l.add(ctx, "call", "batch.item %d %s%s", i.Index, i.Outcome, errMark(i.Err))
		},
	}
}

// The five ways in report each phase, in order, on a first execution,
// a replay from the table and one from the cache.
func TestTraceReportsEachPhaseOfEveryWayIn(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	log := &traceLog{}
	s := newStore(t, env, idem.WithTrace(log.trace()))
	cached := newStore(t, env, idem.WithTrace(log.trace()), idem.WithCache(10, 0))
	ctx := context.Background()
	sawEffectPhase := func(ctx context.Context) {
		if got, _ := ctx.Value(phaseKey{}).(string); got != "effect" {
			t.Errorf("the operation runs in phase %q, want the effect's", got)
		}
	}
	eff := func(ctx context.Context) (idem.Effect, error) {
		sawEffectPhase(ctx)
		return effect(env)(ctx)
	}
	resp := func(ctx context.Context) (idem.Response, error) {
		sawEffectPhase(ctx)
		return idem.Response{Body: []byte(`{}`)}, nil
	}

	_, err := s.Execute(ctx, scope(t, "trace-execute"), "fp", eff)
	must.NoError(t, err)
	check.Equal(t, []string{
		"call.start execute POST /things items=1",
		"claim.start wait=0s", "claim.attempt 1 won", "claim.done won",
		"effect.start lease=true", "effect.done",
		"commit.start TransactWriteItems writes=2 claims=false", "commit.done",
		"call.done execute executed",
	}, log.take(t))
	_, err = s.Execute(ctx, scope(t, "trace-execute"), "fp", eff)
	must.NoError(t, err)
	check.Equal(t, []string{
		"call.start execute POST /things items=1",
		"claim.start wait=0s", "claim.attempt 1 replayed", "claim.done replayed",
		"call.done execute replayed",
	}, log.take(t))

	_, err = s.Transact(ctx, scope(t, "trace-transact"), "fp", eff)
	must.NoError(t, err)
	_, err = s.Transact(ctx, scope(t, "trace-transact"), "fp", eff)
	must.NoError(t, err)
	check.Equal(t, []string{
		"call.start transact POST /things items=1",
		"effect.start lease=false", "effect.done",
		"commit.start TransactWriteItems writes=2 claims=true", "claim.attempt 1 won", "commit.done",
		"call.done transact executed",
		"call.start transact POST /things items=1",
		"effect.start lease=false", "effect.done",
		"commit.start TransactWriteItems writes=2 claims=true", "claim.attempt 1 replayed", "commit.done",
		"call.done transact replayed",
	}, log.take(t))

	_, err = s.Run(ctx, scope(t, "trace-run"), "fp", resp)
	must.NoError(t, err)
	_, _, err = idem.Do(ctx, s, scope(t, "trace-do"), "fp", func(ctx context.Context) (int, error) {
		sawEffectPhase(ctx)
		return 1, nil
	})
	must.NoError(t, err)
	check.Equal(t, []string{
		"call.start run POST /things items=1",
		"claim.start wait=0s", "claim.attempt 1 won", "claim.done won",
		"effect.start lease=true", "effect.done",
		"commit.start UpdateItem writes=0 claims=false", "commit.done",
		"call.done run executed",
		"call.start do POST /things items=1",
		"claim.start wait=0s", "claim.attempt 1 won", "claim.done won",
		"effect.start lease=true", "effect.done",
		"commit.start UpdateItem writes=0 claims=false", "commit.done",
		"call.done do executed",
	}, log.take(t))

	// An operation that fails: its claim is released.
	boom := errors.New("boom")
	_, err = s.Run(ctx, scope(t, "trace-fail"), "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, boom })
	must.ErrorIs(t, err, boom)
	check.Equal(t, []string{
		"call.start run POST /things items=1",
		"claim.start wait=0s", "claim.attempt 1 won", "claim.done won",
		"effect.start lease=true", "effect.done err",
		"release.start", "release.done landed=false",
		"call.done run released err",
	}, log.take(t))

	// The cache: a hit is the whole call.
	_, err = cached.Execute(ctx, scope(t, "trace-execute"), "fp", eff) // a replay from the table, now cached
	must.NoError(t, err)
	log.take(t)
	_, err = cached.Execute(ctx, scope(t, "trace-execute"), "fp", eff)
	must.NoError(t, err)
	_, err = cached.Execute(ctx, scope(t, "trace-execute"), "other", eff)
	must.ErrorIs(t, err, idem.ErrKeyReuse)
	check.Equal(t, []string{
		"call.start execute POST /things items=1", "cache.hit replayed", "call.done execute replayed",
		"call.start execute POST /things items=1", "cache.hit key_reuse", "call.done execute key_reuse err",
	}, log.take(t))

	// A batch: one transaction for the new keys, then one more after the
	// records that were there already; the hit answers from the cache.
	items := []idem.BatchItem{
		{Scope: scope(t, "trace-batch-a"), Fingerprint: "fp"},
		{Scope: scope(t, "trace-execute"), Fingerprint: "fp"}, // cached
		{Scope: scope(t, "trace-transact"), Fingerprint: "fp"},
		{Scope: scope(t, "trace-batch-b"), Fingerprint: "fp"},
	}
	none := func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil }
	_, err = cached.ExecuteBatch(ctx, items, none)
	must.NoError(t, err)
	check.Equal(t, []string{
		"call.start batch  items=4",
		"cache.hit replayed",
		"batchtx.start items=[0 2 3] writes=0 attempt=1", "batchtx.done reasons=[None ConditionalCheckFailed None] err",
		"batchtx.start items=[0 3] writes=0 attempt=1", "batchtx.done reasons=[]",
		"batch.item 0 executed", "batch.item 1 replayed", "batch.item 2 replayed", "batch.item 3 executed",
		"call.done batch ",
	}, log.take(t))
}

// The ways in built on the store (idemhttp, idemevent, idemsqs,
// idemstream) report through it with no code of their own: each call
// its claim (or its batch's transaction) and its outcome.
func TestTraceReportsTheWaysInBuiltOnTheStore(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	log := &traceLog{}
	s := newStore(t, env, idem.WithTrace(log.trace()))
	ctx := context.Background()
	calls := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if strings.HasPrefix(l, "call.") || strings.HasPrefix(l, "claim.done") || strings.HasPrefix(l, "batchtx.start") || strings.HasPrefix(l, "batch.item") {
				out = append(out, l)
			}
		}
		return out
	}

	// idemhttp, on net/http.
	mw, err := idemhttp.New(s, idemhttp.WithOperation("POST /emails"), idemhttp.WithPrincipal(func(*http.Request) (string, error) { return "user-1", nil }))
	must.NoError(t, err)
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/emails", strings.NewReader(`{"to":"a@example.com"}`))
		req.Header.Set("Idempotency-Key", "trace-http")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	check.Equal(t, []string{
		"call.start run POST /emails items=1", "claim.done won", "call.done run executed",
		"call.start run POST /emails items=1", "claim.done replayed", "call.done run replayed",
	}, calls(log.take(t)))

	// idemevent.
	handler, err := idemevent.Wrap(s, "invoices.issue", func(e events.EventBridgeEvent) (idemevent.Entry, error) {
		return idemevent.Entry{Principal: e.Source, Key: e.ID}, nil
	}, func(context.Context, events.EventBridgeEvent) (string, error) { return "INV-1", nil })
	must.NoError(t, err)
	_, err = handler(ctx, events.EventBridgeEvent{ID: "trace-event", Source: "orders", Detail: []byte(`{}`)})
	must.NoError(t, err)
	check.Equal(t, []string{"call.start do invoices.issue items=1", "claim.done won", "call.done do executed"}, calls(log.take(t)))

	// idemsqs: Run per message, Transact as one batch.
	msg := func(id string) events.SQSMessage { return events.SQSMessage{MessageId: id, Body: `"x"`} }
	ev := events.SQSEvent{Records: []events.SQSMessage{msg("trace-sqs-1"), msg("trace-sqs-2")}}
	decode := func(m events.SQSMessage) (idemsqs.Entry[string], error) {
		return idemsqs.Entry[string]{Principal: "queue", Key: m.MessageId, Value: m.Body}, nil
	}
	runs, err := idemsqs.New(s, "sqs.run", decode)
	must.NoError(t, err)
	runs.Run(ctx, ev, func(context.Context, string) error { return nil })
	check.Equal(t, []string{
		"call.start run sqs.run items=1", "claim.done won", "call.done run executed",
		"call.start run sqs.run items=1", "claim.done won", "call.done run executed",
	}, calls(log.take(t)))
	transacts, err := idemsqs.New(s, "sqs.transact", decode)
	must.NoError(t, err)
	transacts.Transact(ctx, ev, func([]string, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })
	check.Equal(t, []string{
		"call.start batch  items=2", "batchtx.start items=[0 1] writes=0 attempt=1",
		"batch.item 0 executed", "batch.item 1 executed", "call.done batch ",
	}, calls(log.take(t)))

	// idemstream, a DynamoDB stream's shard in order.
	rec := func(seq string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{SequenceNumber: seq}}
	}
	sdecode := func(r events.DynamoDBEventRecord) (idemstream.Entry[string], error) {
		return idemstream.Entry[string]{Principal: "stream", Key: r.Change.SequenceNumber, Value: "v"}, nil
	}
	stream, err := idemstream.NewDynamoDB(s, "stream.run", sdecode)
	must.NoError(t, err)
	stream.Run(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec("100")}}, func(context.Context, string) error { return nil })

	check.Equal(t, []string{"call.start run stream.run items=1", "claim.done won", "call.done run executed"}, calls(log.take(t)))
}

// A duplicate of a live holder is in flight, in its claim; a holder that
// died is taken over, and the claim names when its lease ended.
func TestTraceReportsInFlightAndTakeover(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	clk := newClock()
	log := &traceLog{}
	holder := newStore(t, env, idem.WithClock(clk.Now))
	s := newStore(t, env, idem.WithClock(clk.Now), idem.WithTrace(log.trace()))
	sc := scope(t, "trace-takeover")
	ctx := context.Background()

	crashed, err := holder.Reserve(ctx, sc, "fp") // reserves, then "dies"
	must.NoError(t, err)
	_, err = s.Execute(ctx, sc, "fp", effect(env))
	must.ErrorIs(t, err, idem.ErrInFlight)
	check.Equal(t, []string{
		"call.start execute POST /things items=1",
		"claim.start wait=0s", "claim.attempt 1 in_flight", "claim.done in_flight err",
		"call.done execute in_flight err",
	}, log.take(t))

	clk.Advance(idem.DefaultLease + idem.DefaultLeaseMargin + time.Millisecond)
	res, err := s.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err)
	lines := log.take(t)
	if !env.PutItemReturnsOldItem {
		check.Equal(t, idem.OutcomeExecuted, res.Outcome, "this backend cannot show a takeover")
		return
	}
	check.Equal(t, idem.OutcomeTakeover, res.Outcome)
	check.Equal(t, []string{
		"call.start execute POST /things items=1",
		"claim.start wait=0s", "claim.attempt 1 takeover", "claim.done takeover",
		"effect.start lease=true", "effect.done",
		"commit.start TransactWriteItems writes=2 claims=false", "commit.done",
		"call.done execute takeover",
	}, lines)
	log.mu.Lock()
	defer log.mu.Unlock()
	must.Len(t, log.takes, 2)
	check.Equal(t, idemtrace.ClaimInFlight, log.takes[0].Result)
	check.Equal(t, idemtrace.ClaimTakeover, log.takes[1].Result)
	for _, a := range log.takes {
		check.True(t, a.HolderLeaseExpiresAt.Equal(crashed.Lease.ExpiresAt()), "the holder's lease: %v, want %v", a.HolderLeaseExpiresAt, crashed.Lease.ExpiresAt())
	}
}

// A duplicate that waits (WithWait) for a live holder reports its wait
// and its polls, and replays the holder's response.
func TestTraceReportsAWaitAndItsPolls(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	log := &traceLog{}
	holder := newStore(t, env)
	waiter := newStore(t, env, idem.WithWait(5*time.Second), idem.WithTrace(log.trace()))
	sc := scope(t, "trace-wait")
	ctx := context.Background()
	started, finish := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := holder.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) {
			close(started)
			<-finish
			return idem.Response{Body: []byte("done")}, nil
		})
		check.NoError(t, err)
	})
	<-started
	time.AfterFunc(100*time.Millisecond, func() { close(finish) })
	res, err := waiter.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) {
		return idem.Response{}, errors.New("a waiter ran the operation")
	})
	wg.Wait()
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, res.Outcome)
	lines := log.take(t)
	must.True(t, len(lines) >= 8, "lines: %v", lines)
	check.Equal(t, []string{"call.start run POST /things items=1", "claim.start wait=5s", "claim.attempt 1 in_flight", "wait.start holder"}, lines[:4])
	for _, l := range lines[4 : len(lines)-4] {
		check.Equal(t, "wait.poll in_flight", l, "lines: %v", lines)
	}
	check.Equal(t, []string{"wait.poll replayed", "wait.done replayed", "claim.done replayed", "call.done run replayed"}, lines[len(lines)-4:])
}

// A trace in the context runs beside the store's: its Start hooks and
// events first, its Done hooks last, so the phases nest; a Start hook
// that returns nil leaves the context as it was.
func TestTraceFromTheContextAndTheStoreCompose(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	storeLog, ctxLog := &traceLog{name: "store"}, &traceLog{name: "ctx"}
	s := newStore(t, env, idem.WithTrace(storeLog.trace()))
	var order []string
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	outer := &idemtrace.Trace{
		CallStart: func(ctx context.Context, _ idemtrace.CallStartInfo) context.Context {
			note("outer start")
			return nil // keeps the context
		},
		CallDone: func(context.Context, idemtrace.CallDoneInfo) { note("outer done") },
	}
	inner := &idemtrace.Trace{
		CallStart: func(ctx context.Context, _ idemtrace.CallStartInfo) context.Context {
			note("inner start")
			return ctxLog.begin(ctx, "call", "call.start")
		},
		CallDone: func(ctx context.Context, _ idemtrace.CallDoneInfo) {
			note("inner done")
			ctxLog.add(ctx, "call", "call.done")
		},
	}
	ctx := idemtrace.WithTrace(idemtrace.WithTrace(context.Background(), outer), inner)
	check.Nil(t, idemtrace.ContextTrace(context.Background()))
	check.NotNil(t, idemtrace.ContextTrace(ctx))
	_, err := s.Run(ctx, scope(t, "trace-compose"), "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
	must.NoError(t, err)
	check.Equal(t, []string{"inner start", "outer start", "outer done", "inner done"}, order)
	check.Equal(t, []string{"ctx: call.start", "ctx: call.done"}, ctxLog.take(t))
	lines := storeLog.take(t)
	check.Equal(t, "store: call.start run POST /things items=1", lines[0])
	check.Equal(t, "store: call.done run executed", lines[len(lines)-1])
}

// An operation that panics reports its effect's end and its call's, as
// panicked, and the panic goes on; the claim is released.
func TestTraceReportsAPanic(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	log := &traceLog{}
	s := newStore(t, env, idem.WithTrace(log.trace()))
	func() {
		defer func() { check.Equal(t, "bang", recover()) }()
		_, _ = s.Execute(context.Background(), scope(t, "trace-panic"), "fp", func(context.Context) (idem.Effect, error) { panic("bang") })
	}()
	check.Equal(t, []string{
		"call.start execute POST /things items=1",
		"claim.start wait=0s", "claim.attempt 1 won", "claim.done won",
		"effect.start lease=true", "effect.done panicked",
		"release.start", "release.done landed=false",
		"call.done execute panicked",
	}, log.take(t))
}

// A batch whose shared writes function panics reports its call's end as
// panicked, and the panic goes on.
func TestTraceReportsAPanicInABatch(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	log := &traceLog{}
	s := newStore(t, env, idem.WithTrace(log.trace()))
	func() {
		defer func() { check.Equal(t, "bang", recover()) }()
		_, _ = s.ExecuteBatch(context.Background(), []idem.BatchItem{{Scope: scope(t, "trace-batch-panic"), Fingerprint: "fp"}},
			func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { panic("bang") })
	}()
	check.Equal(t, []string{"call.start batch  items=1", "call.done batch panicked"}, log.take(t))
}
