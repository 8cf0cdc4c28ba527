package idem_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The trace's CallDone, and BatchItem for ExecuteBatch's items, is how
// a call's outcome is observed: once per call, and once per batch item,
// whatever happened.

// seen is one outcome the trace reported.
type seen struct {
	Scope   idem.Scope
	Outcome idem.Outcome
	Err     error
}

// reported is one outcome as the trace reports it: the scope's ID.
type reported struct {
	ScopeID string
	Outcome idem.Outcome
	Err     error
}

// hookLog collects the outcomes a trace reports.
type hookLog struct {
	mu  sync.Mutex
	got []reported
}

func (h *hookLog) add(id, outcome string, err error) {
	h.mu.Lock()
	h.got = append(h.got, reported{id, idem.Outcome(outcome), err})
	h.mu.Unlock()
}

// trace reports every call's outcome to h, and a batch's per item.
func (h *hookLog) trace() *idemtrace.Trace {
	return &idemtrace.Trace{
		CallDone: func(_ context.Context, i idemtrace.CallDoneInfo) {
			if i.Way != idemtrace.WayBatch {
				h.add(i.ScopeID, i.Outcome, i.Err)
			}
		},
		BatchItem: func(_ context.Context, i idemtrace.BatchItemInfo) { h.add(i.ScopeID, i.Outcome, i.Err) },
	}
}

// take returns what the trace reported since the last take.
func (h *hookLog) take() []reported {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.got
	h.got = nil
	return out
}

// expectSeen asserts the trace reported exactly want, in order, each
// once; a want whose Err is set must match errors.Is, one without none.
func expectSeen(t *testing.T, h *hookLog, want ...seen) {
	t.Helper()
	got := h.take()
	must.Len(t, got, len(want), "outcomes reported: %v", got)
	for i, w := range want {
		check.Equal(t, w.Scope.ID(), got[i].ScopeID, "call %d", i)
		check.Equal(t, w.Outcome, got[i].Outcome, "call %d", i)
		if w.Err == nil {
			check.NoError(t, got[i].Err, "call %d", i)
		} else {
			check.ErrorIs(t, got[i].Err, w.Err, "call %d", i)
		}
	}
}

func TestCallDoneSeesEveryCallOnce(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	h := &hookLog{}
	cached := newStore(t, env, idem.WithTrace(h.trace()), idem.WithCache(100, 0))
	plain := newStore(t, env, idem.WithTrace(h.trace()))
	ctx := context.Background()
	a, b, c, d := scope(t, "hook-a"), scope(t, "hook-b"), scope(t, "hook-c"), scope(t, "hook-d")
	ok := func(context.Context) (idem.Response, error) {
		return idem.Response{Body: []byte(`{}`)}, nil
	}

	// Execute: a first execution, a replay from the cache, key reuse from
	// the cache, a replay and key reuse from the table.
	_, err := cached.Execute(ctx, a, "fp", effect(env))
	must.NoError(t, err)
	_, err = cached.Execute(ctx, a, "fp", effect(env))
	must.NoError(t, err)
	_, err = cached.Execute(ctx, a, "other", effect(env))
	must.ErrorIs(t, err, idem.ErrKeyReuse)
	_, err = plain.Execute(ctx, a, "fp", effect(env))
	must.NoError(t, err)
	_, err = plain.Execute(ctx, a, "other", effect(env))
	must.ErrorIs(t, err, idem.ErrKeyReuse)
	expectSeen(t, h,
		seen{a, idem.OutcomeExecuted, nil}, seen{a, idem.OutcomeReplayed, nil}, seen{a, idem.OutcomeKeyReuse, idem.ErrKeyReuse},
		seen{a, idem.OutcomeReplayed, nil}, seen{a, idem.OutcomeKeyReuse, idem.ErrKeyReuse})

	// Transact, and a rejected scope (one NewScope did not make).
	_, err = plain.Transact(ctx, b, "fp", effect(env))
	must.NoError(t, err)
	_, err = plain.Transact(ctx, b, "fp", effect(env))
	must.NoError(t, err)
	bad := idem.Scope{Operation: "POST /things", Key: "k"}
	_, err = plain.Transact(ctx, bad, "fp", effect(env))
	must.ErrorIs(t, err, idem.ErrInvalidKey)
	expectSeen(t, h, seen{b, idem.OutcomeExecuted, nil}, seen{b, idem.OutcomeReplayed, nil}, seen{bad, idem.OutcomeRejected, idem.ErrInvalidKey})

	// Run: a failure releases the key, then it runs and replays.
	boom := errors.New("boom")
	_, err = plain.Run(ctx, c, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, boom })
	must.ErrorIs(t, err, boom)
	_, err = plain.Run(ctx, c, "fp", ok)
	must.NoError(t, err)
	_, err = plain.Run(ctx, c, "fp", ok)
	must.NoError(t, err)
	expectSeen(t, h, seen{c, idem.OutcomeReleased, boom}, seen{c, idem.OutcomeExecuted, nil}, seen{c, idem.OutcomeReplayed, nil})

	// Do: in flight while another Do holds the key; one outcome per Do,
	// none for the Run underneath.
	holding, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _, err := idem.Do(ctx, plain, d, "fp", func(context.Context) (int, error) {
			close(holding)
			<-done // released below, after the duplicate
			return 7, nil
		})
		check.NoError(t, err)
	}()
	<-holding
	_, outcome, err := idem.Do(ctx, plain, d, "fp", func(context.Context) (int, error) { return 0, nil })
	must.ErrorIs(t, err, idem.ErrInFlight)
	must.Equal(t, idem.OutcomeInFlight, outcome)
	expectSeen(t, h, seen{d, idem.OutcomeInFlight, idem.ErrInFlight})
	done <- struct{}{}
	<-done
	v, _, err := idem.Do(ctx, plain, d, "fp", func(context.Context) (int, error) { return 0, nil })
	must.NoError(t, err)
	must.Equal(t, 7, v)
	expectSeen(t, h, seen{d, idem.OutcomeExecuted, nil}, seen{d, idem.OutcomeReplayed, nil})

	// ExecuteBatch: one call per item, with its own scope, duplicates,
	// key reuse, cache hits and a rejected item included.
	e, f := scope(t, "hook-e"), scope(t, "hook-f")
	resp := idem.Response{Body: []byte(`{}`)}
	items := []idem.BatchItem{
		{Scope: e, Fingerprint: "fp", Response: resp},
		{Scope: a, Fingerprint: "fp", Response: resp}, // completed before: a cache hit
		{Scope: e, Fingerprint: "fp", Response: resp}, // duplicate of item 0
		{Scope: e, Fingerprint: "other", Response: resp},
		{Scope: bad, Fingerprint: "fp", Response: resp},
		{Scope: f, Fingerprint: "fp", Response: resp},
	}
	none := func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil }
	res, err := cached.ExecuteBatch(ctx, items, none)
	must.NoError(t, err)
	must.Len(t, res, len(items))
	expectSeen(t, h,
		seen{e, idem.OutcomeExecuted, nil}, seen{a, idem.OutcomeReplayed, nil}, seen{e, idem.OutcomeReplayed, nil},
		seen{e, idem.OutcomeKeyReuse, idem.ErrKeyReuse}, seen{bad, idem.OutcomeRejected, idem.ErrInvalidKey},
		seen{f, idem.OutcomeExecuted, nil})

	// A batch that cannot run at all: every item is rejected, once.
	_, err = cached.ExecuteBatch(ctx, items[:2], nil)
	must.Error(t, err)
	got := h.take()
	must.Len(t, got, 2)
	check.Equal(t, []string{e.ID(), a.ID()}, []string{got[0].ScopeID, got[1].ScopeID})
	check.Equal(t, idem.OutcomeRejected, got[0].Outcome)
	check.Equal(t, err, got[1].Err)
}

func TestCallDoneIsCalledOncePerConcurrentCall(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.concurrent(t)
	h := &hookLog{}
	s := newStore(t, env, idem.WithTrace(h.trace()))
	ctx := context.Background()
	returned := map[idem.Outcome]int{}
	var mu sync.Mutex
	report := func(o idem.Outcome) {
		mu.Lock()
		returned[o]++
		mu.Unlock()
	}
	const callers = 32
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			sc := scope(t, fmt.Sprintf("hook-concurrent-%d", i%4)) // 8 duplicates per key
			switch i % 4 {
			case 0:
				res, _ := s.Execute(ctx, sc, "fp", effect(env))
				report(res.Outcome)
			case 1:
				res, _ := s.Transact(ctx, sc, "fp", effect(env))
				report(res.Outcome)
			case 2:
				res, _ := s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
				report(res.Outcome)
			default:
				_, o, _ := idem.Do(ctx, s, sc, "fp", func(context.Context) (string, error) { return "ok", nil })
				report(o)
			}
		})
	}
	wg.Wait()
	got := h.take()
	seenOutcomes := map[idem.Outcome]int{}
	for _, g := range got {
		seenOutcomes[g.Outcome]++
	}
	t.Logf("outcomes reported=%d %v", len(got), seenOutcomes)
	check.Len(t, got, callers)
	check.Equal(t, returned, seenOutcomes)
	check.Equal(t, 4, seenOutcomes[idem.OutcomeExecuted], "one execution per key")
}
