package idemotel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// world is one test's strict test store (pkg/idem/idemtest) with an
// idempotency table and a products table, and an SDK tracer provider
// whose spans an in-memory recorder keeps.
type world struct {
	server   *idemtest.Server
	db       *dynamodb.Client
	spans    *tracetest.SpanRecorder
	provider *sdktrace.TracerProvider
	hasher   *idemtrace.ScopeHasher // the operators' key
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{server: idemtest.New(t), spans: tracetest.NewSpanRecorder()}
	var err error
	w.hasher, err = idemtrace.NewScopeHasher([]byte("the operators' 32-byte trace key"))
	must.NoError(t, err)
	w.db = w.server.Client()
	w.provider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans))
	ctx := context.Background()
	must.NoError(t, idemtable.Create(ctx, w.db, "idempotency", idemtable.Layout{}))
	_, err = w.db.CreateTable(ctx, idemtable.Input("products", idemtable.Layout{}))
	must.NoError(t, err)
	return w
}

// store is a store on the world's table, traced into its recorder.
func (w *world) store(t testing.TB, opts ...idem.Option) *idem.Store {
	t.Helper()
	s, err := idem.NewStore(w.db, "idempotency", append([]idem.Option{idem.WithTrace(idemotel.NewTrace(w.provider, idemotel.WithScopeHasher(w.hasher)))}, opts...)...)
	must.NoError(t, err)
	return s
}

// product is an Effect: one product written, and the 201 naming it.
func product(id string) func(context.Context) (idem.Effect, error) {
	return func(context.Context) (idem.Effect, error) {
		return idem.Effect{
			Response: idem.Response{Body: []byte(`{"id":"` + id + `"}`)},
			Writes: []types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String("products"),
				Item:      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
			}}},
		}, nil
	}
}

func scope(t testing.TB, key string) idem.Scope {
	t.Helper()
	s, err := idem.NewScope("POST /products", "alice@example.com", key)
	must.NoError(t, err)
	return s
}

// ended returns the spans ended so far, and forgets them.
func (w *world) ended() []sdktrace.ReadOnlySpan {
	spans := w.spans.Ended()
	w.spans.Reset()
	return spans
}

// named returns the spans called name.
func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the one span called name.
func one(t testing.TB, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := named(spans, name)
	must.Len(t, got, 1, "spans named %s among %v", name, names(spans))
	return got[0]
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name()
	}
	return out
}

// attr returns the value of key among attrs, as a string ("" if none).
func attr(attrs []attribute.KeyValue, key attribute.Key) string {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

// events returns the span's events called name.
func events(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// childOf checks that span's parent is parent.
func childOf(t testing.TB, span, parent sdktrace.ReadOnlySpan) {
	t.Helper()
	check.Equal(t, parent.SpanContext().SpanID(), span.Parent().SpanID(), "%s is a child of %s", span.Name(), parent.Name())
}

// A first execution is a span for the call, with its claim, effect and
// commit as children; the operation's own spans nest in the effect's.
func TestACallIsASpanWithItsPhasesAsChildren(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.store(t)
	ctx, parent := w.provider.Tracer("test").Start(context.Background(), "POST /products")
	sc := scope(t, "k-first")
	_, err := s.Execute(ctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
		_, own := w.provider.Tracer("test").Start(ctx, "compute product")
		own.End()
		return product("p1")(ctx)
	})
	must.NoError(t, err)
	parent.End()
	spans := w.ended()

	call := one(t, spans, "idem.execute")
	check.Equal(t, parent.SpanContext().SpanID(), call.Parent().SpanID(), "the call's span is the request's child")
	a := call.Attributes()
	check.Equal(t, "execute", attr(a, idemotel.AttrWay))
	check.Equal(t, "reserve", attr(a, idemotel.AttrMode))
	check.Equal(t, "POST /products", attr(a, idemotel.AttrOperation))
	check.Equal(t, w.hasher.Hash(sc.ID()), attr(a, idemotel.AttrScopeHash))
	check.Len(t, w.hasher.Hash(sc.ID()), 16)
	check.Equal(t, "executed", attr(a, idemotel.AttrOutcome))
	check.Equal(t, codes.Unset, call.Status().Code)

	claim := one(t, spans, "idem.claim")
	childOf(t, claim, call)
	check.Equal(t, "won", attr(claim.Attributes(), idemotel.AttrClaimResult))
	check.Equal(t, "1", attr(claim.Attributes(), idemotel.AttrAttempts))
	must.Len(t, events(claim, "idem.claim.attempt"), 1)

	effect := one(t, spans, "idem.effect")
	childOf(t, effect, call)
	check.NotEmpty(t, attr(effect.Attributes(), idemotel.AttrLeaseExpiresAt))
	childOf(t, one(t, spans, "compute product"), effect)

	commit := one(t, spans, "idem.commit")
	childOf(t, commit, call)
	check.Equal(t, "TransactWriteItems", attr(commit.Attributes(), idemotel.AttrCommitRequest))
	check.Equal(t, "1", attr(commit.Attributes(), idemotel.AttrCommitWrites))
	check.Equal(t, "1", attr(commit.Attributes(), idemotel.AttrAttempts))

	// A replay: the claim finds the completed record; no effect, no commit.
	_, err = s.Execute(context.Background(), sc, "fp", product("p1"))
	must.NoError(t, err)
	spans = w.ended()
	check.Equal(t, []string{"idem.claim", "idem.execute"}, names(spans))
	check.Equal(t, "replayed", attr(one(t, spans, "idem.execute").Attributes(), idemotel.AttrOutcome))
	check.Equal(t, "replayed", attr(one(t, spans, "idem.claim").Attributes(), idemotel.AttrClaimResult))
}

// A duplicate that arrives while the first request's commit holds the
// record in its transaction shows what it met and its 409, in flight, as
// an event with the Retry-After it answers. Without a wait it is in
// flight after its one write: in reserve mode its claim's conflict, in
// transact mode its transaction's, and no wait. With a wait it follows
// the commit: in reserve mode a wait on the transaction with its polls,
// in transact mode its transaction's conflict retried, each on the key's
// own record, until the wait runs out.
func TestADuplicateDuringACommitShowsItsConflictRetriesAndIts409(t *testing.T) {
	t.Parallel()
	for _, way := range []string{"execute", "transact"} {
		for _, wait := range []time.Duration{0, 100 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/wait=%s", way, wait), func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				s := w.store(t, idem.WithWait(wait))
				sc := scope(t, "k-dup-"+way)
				held := w.server.Hold(idemtest.OpTransactWriteItems) // the first request's commit
				done := make(chan error)
				go func() {
					_, err := s.Execute(context.Background(), sc, "fp", product("p1"))
					done <- err
				}()
				<-held.Arrived()
				w.ended() // the first request's claim and effect

				dup := func() (idem.Result, error) {
					if way == "transact" {
						return s.Transact(context.Background(), sc, "fp", product("p1"))
					}
					return s.Execute(context.Background(), sc, "fp", product("p1"))
				}
				res, err := dup()
				var inflight *idem.InFlightError
				must.ErrorAs(t, err, &inflight)
				check.Equal(t, idem.OutcomeInFlight, res.Outcome)
				spans := w.ended()
				held.Release()
				must.NoError(t, <-done)

				call := one(t, spans, "idem."+way)
				check.Equal(t, "in_flight", attr(call.Attributes(), idemotel.AttrOutcome))
				check.Equal(t, codes.Unset, call.Status().Code, "a 409 is the client's to retry, not a failure")
				e := events(call, "idem.in_flight")
				must.Len(t, e, 1)
				check.Equal(t, fmt.Sprint(inflight.RetryAfter.Milliseconds()), attr(e[0].Attributes, idemotel.AttrRetryAfterMillis))

				if way == "execute" {
					claim := one(t, spans, "idem.claim")
					attempts := events(claim, "idem.claim.attempt")
					must.NotEmpty(t, attempts)
					check.Equal(t, "conflict", attr(attempts[0].Attributes, idemotel.AttrClaimResult))
					check.Equal(t, "in_flight", attr(claim.Attributes(), idemotel.AttrClaimResult))
					if wait == 0 {
						check.Len(t, named(spans, "idem.wait"), 0, "in flight at once, no wait")
						return
					}
					waits := named(spans, "idem.wait")
					must.NotEmpty(t, waits)
					check.Equal(t, "transaction", attr(waits[0].Attributes(), idemotel.AttrWaitReason))
					polls := 0
					for _, wt := range waits {
						childOf(t, wt, claim)
						polls += len(events(wt, "idem.wait.poll"))
					}
					check.GreaterOrEqual(t, polls, 1, "the wait read the record")
					return
				}
				commit := one(t, spans, "idem.commit")
				check.Equal(t, "true", attr(commit.Attributes(), idemotel.AttrCommitClaims))
				attempts := events(commit, "idem.claim.attempt")
				must.NotEmpty(t, attempts)
				check.Equal(t, "in_flight", attr(attempts[len(attempts)-1].Attributes, idemotel.AttrClaimResult))
				retries := events(commit, "idem.retry")
				if wait == 0 {
					check.Len(t, retries, 0, "in flight at once, no retry")
					return
				}
				must.NotEmpty(t, retries)
				for _, r := range retries {
					check.Equal(t, "TransactionConflict", attr(r.Attributes, idemotel.AttrReason))
					check.Equal(t, "0", attr(r.Attributes, idemotel.AttrTxItemIndex), "the conflict is on the key's own record")
				}
			})
		}
	}
}

// A request whose holder died (it stalled past its lease) takes the key
// over, and its claim names when the dead holder's lease ended.
func TestATakeoverShowsTheDeadHoldersLease(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const margin = 10 * time.Millisecond
	s := w.store(t, idem.WithLease(time.Minute, margin))
	sc := scope(t, "k-takeover")

	// The first holder's lease ends at its deadline plus the margin; it
	// stalls past that, as a holder that died would.
	deadline := time.Now().Add(200 * time.Millisecond)
	dctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	stalled, resume := make(chan struct{}), make(chan struct{})
	first := make(chan idem.Outcome)
	go func() {
		res, _ := s.Execute(dctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
			close(stalled)
			<-resume
			return product("p1")(ctx)
		})
		first <- res.Outcome
	}()
	<-stalled
	time.Sleep(time.Until(deadline.Add(margin + 50*time.Millisecond)))
	w.ended()

	res, err := s.Execute(context.Background(), sc, "fp", product("p2"))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeTakeover, res.Outcome)
	spans := w.ended()
	close(resume)
	check.NotEqual(t, idem.OutcomeExecuted, <-first, "the stalled holder is fenced out")

	dead := time.UnixMilli(deadline.Add(margin).UnixMilli()).UTC().Format(time.RFC3339Nano)
	call := one(t, spans, "idem.execute")
	check.Equal(t, "takeover", attr(call.Attributes(), idemotel.AttrOutcome))
	claim := one(t, spans, "idem.claim")
	check.Equal(t, "takeover", attr(claim.Attributes(), idemotel.AttrClaimResult))
	check.Equal(t, dead, attr(claim.Attributes(), idemotel.AttrHolderLeaseExpiresAt))
	takeover := events(claim, "idem.takeover")
	must.Len(t, takeover, 1)
	check.Equal(t, dead, attr(takeover[0].Attributes, idemotel.AttrHolderLeaseExpiresAt), "when the dead holder's lease ended")
	attempts := events(claim, "idem.claim.attempt")
	must.Len(t, attempts, 1)
	check.Equal(t, "takeover", attr(attempts[0].Attributes, idemotel.AttrClaimResult))
}

// A batch is a span with a child per transaction: the first cancelled,
// its cancellation reasons as events naming the items they are about,
// the next committing the rest; each item's outcome is an event.
func TestABatchShowsItsTransactionsAndTheirCancellationReasons(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.store(t)
	ctx := context.Background()
	_, err := s.Transact(ctx, scope(t, "k-batch-done"), "fp", product("p0"))
	must.NoError(t, err)
	w.ended()

	items := []idem.BatchItem{
		{Scope: scope(t, "k-batch-1"), Fingerprint: "fp"},
		{Scope: scope(t, "k-batch-done"), Fingerprint: "fp"}, // completed already
		{Scope: scope(t, "k-batch-2"), Fingerprint: "fp"},
	}
	shared := func(executing []int, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		return []types.TransactWriteItem{{Update: &types.Update{
			TableName:                 aws.String("products"),
			Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "total"}},
			UpdateExpression:          aws.String("ADD n :n"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: fmt.Sprint(len(executing))}},
		}}}, nil
	}
	// The first transaction is cancelled by the completed record; the
	// second meets another transaction on the shared write, once.
	res, err := s.ExecuteBatch(ctx, items, func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		if len(executing) == 2 && contended == nil {
			w.server.InjectCancellation("TransactionConflict", 2, 1)
		}
		return shared(executing, contended)
	})
	must.NoError(t, err)
	check.Equal(t, []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed, idem.OutcomeExecuted},
		[]idem.Outcome{res[0].Outcome, res[1].Outcome, res[2].Outcome})
	spans := w.ended()

	batch := one(t, spans, "idem.batch")
	check.Equal(t, "batch", attr(batch.Attributes(), idemotel.AttrWay))
	check.Equal(t, "transact", attr(batch.Attributes(), idemotel.AttrMode))
	check.Equal(t, "3", attr(batch.Attributes(), idemotel.AttrBatchItems))
	txs := named(spans, "idem.batch.transaction")
	must.Len(t, txs, 3, "cancelled by the completed record, by a conflict, then committed")
	for _, tx := range txs {
		childOf(t, tx, batch)
	}
	check.Equal(t, "[0,1,2]", attr(txs[0].Attributes(), idemotel.AttrBatchTxItems))
	c := events(txs[0], "idem.batch.cancellation")
	must.Len(t, c, 1)
	check.Equal(t, "ConditionalCheckFailed", attr(c[0].Attributes, idemotel.AttrReason))
	check.Equal(t, "1", attr(c[0].Attributes, idemotel.AttrTxItemIndex))
	check.Equal(t, "1", attr(c[0].Attributes, idemotel.AttrBatchItemIndex), "the completed item's record")

	check.Equal(t, "[0,2]", attr(txs[1].Attributes(), idemotel.AttrBatchTxItems))
	c = events(txs[1], "idem.batch.cancellation")
	must.Len(t, c, 1)
	check.Equal(t, "TransactionConflict", attr(c[0].Attributes, idemotel.AttrReason))
	check.Equal(t, "2", attr(c[0].Attributes, idemotel.AttrTxItemIndex), "the shared write")
	check.Equal(t, "", attr(c[0].Attributes, idemotel.AttrBatchItemIndex), "no item's record")
	check.Equal(t, "2", attr(txs[2].Attributes(), idemotel.AttrAttempt), "the retry after the conflict")
	check.Empty(t, events(txs[2], "idem.batch.cancellation"))

	got := events(batch, "idem.batch.item")
	must.Len(t, got, 3)
	for i, e := range got {
		check.Equal(t, fmt.Sprint(i), attr(e.Attributes, idemotel.AttrBatchItemIndex))
		check.Equal(t, w.hasher.Hash(items[i].Scope.ID()), attr(e.Attributes, idemotel.AttrScopeHash))
		check.Equal(t, string(res[i].Outcome), attr(e.Attributes, idemotel.AttrOutcome))
	}
}

// Many goroutines claiming a few keys at once: every call is one span
// with one outcome, its phases are its own children, one call per key
// executes (run with -race).
func TestConcurrentClaimsEachHaveTheirOwnSpans(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.store(t, idem.WithCache(100, 0))
	const keys, callers = 4, 48
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			sc := scope(t, fmt.Sprintf("k-concurrent-%d", i%keys))
			switch i % 3 {
			case 0:
				_, _ = s.Execute(context.Background(), sc, "fp", product(fmt.Sprint(i)))
			case 1:
				_, _ = s.Transact(context.Background(), sc, "fp", product(fmt.Sprint(i)))
			default:
				_, _ = s.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
			}
		})
	}
	wg.Wait()
	spans := w.ended()
	calls := map[string]sdktrace.ReadOnlySpan{}
	executed := map[string]int{}
	for _, sp := range spans {
		switch sp.Name() {
		case "idem.execute", "idem.transact", "idem.run":
			calls[sp.SpanContext().SpanID().String()] = sp
			o := attr(sp.Attributes(), idemotel.AttrOutcome)
			check.NotEmpty(t, o, "every call has an outcome")
			if o == "executed" || o == "takeover" {
				executed[attr(sp.Attributes(), idemotel.AttrScopeHash)]++
			}
		}
	}
	check.Len(t, calls, callers, "a span per call")
	check.Len(t, executed, keys)
	for k, n := range executed {
		check.Equal(t, 1, n, "executions of key %s", k)
	}
	for _, sp := range spans {
		if _, isCall := calls[sp.SpanContext().SpanID().String()]; isCall {
			continue
		}
		// Every phase's parent is a call or a phase of the same trace.
		check.True(t, sp.Parent().IsValid(), "%s has a parent", sp.Name())
	}
}

// A no-op provider records nothing: NewTrace sets no hook, which costs
// nothing.
func TestANoopProviderCostsNothing(t *testing.T) {
	t.Parallel()
	check.Equal(t, idemtrace.Trace{}, *idemotel.NewTrace(noop.NewTracerProvider()))
}

// The spans carry a hash of the scope, never the key, the principal or
// the scope's ID: not in a name, an attribute, an event or a status.
func TestTheRawKeyAndPrincipalAreNeverRecorded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.store(t, idem.WithCache(10, 0), idem.WithWait(50*time.Millisecond))
	ctx := context.Background()
	const principal, key = "alice@example.com", "k-personal-4f2a9c"
	sc, err := idem.NewScope("POST /products", principal, key)
	must.NoError(t, err)
	boom := errors.New("failed for " + key + " of " + principal) // an operation's error that quotes its request

	_, err = s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, boom })
	must.ErrorIs(t, err, boom)
	_, err = s.Execute(ctx, sc, "fp", product("p1"))
	must.NoError(t, err)
	_, err = s.Execute(ctx, sc, "fp", product("p1")) // from the cache
	must.NoError(t, err)
	_, err = s.Execute(ctx, sc, "other", product("p1")) // key reuse
	must.ErrorIs(t, err, idem.ErrKeyReuse)
	_, err = s.ExecuteBatch(ctx, []idem.BatchItem{{Scope: sc, Fingerprint: "fp"}},
		func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })
	must.NoError(t, err)
	_, err = s.Transact(ctx, sc, "fp", product("p1"))
	must.NoError(t, err)
	_, err = s.Transact(ctx, idem.Scope{Operation: "POST /products", Principal: principal, Key: key + " "}, "fp", product("p1"))
	must.ErrorIs(t, err, idem.ErrInvalidKey)

	spans := w.ended()
	must.NotEmpty(t, spans)
	forbidden := []string{key, principal, sc.ID()}
	look := func(where, s string) {
		for _, f := range forbidden {
			check.False(t, strings.Contains(s, f), "%s holds %q: %s", where, f, s)
		}
	}
	seen := 0
	for _, sp := range spans {
		look("a span name", sp.Name())
		look("a status", sp.Status().Description)
		for _, a := range sp.Attributes() {
			look(sp.Name()+"'s "+string(a.Key), a.Value.String())
			seen++
		}
		for _, e := range sp.Events() {
			look("event name", e.Name)
			for _, a := range e.Attributes {
				look(e.Name+"'s "+string(a.Key), a.Value.String())
				seen++
			}
		}
	}
	check.Greater(t, seen, 50, "attributes looked at")
	check.Equal(t, codes.Error, one(t, named(spans, "idem.run"), "idem.run").Status().Code, "the failed operation's call")
}
