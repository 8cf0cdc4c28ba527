package idem_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// Another transaction holds one account (a hot aggregate) for longer than
// every attempt lasts, and a batch mixes keys that update it with keys
// that update other accounts: the others commit, and only the keys whose
// own writes meet the held item fail, retryable, with nothing written.
// Once the item is free, the failed keys' retry commits each once.
func TestExecuteBatchAContendedSharedWriteFailsOnlyTheKeysThatUpdateIt(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if env.Store == nil {
		t.Skipf("holding an item needs the strict test store; %s backend in use", env.Kind)
	}
	l := &ledger{env: env}
	s := newStore(t, env, idem.WithConflictAttempts(2))

	held := env.Store.Hold(idemtest.OpTransactWriteItems)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer held.Release()
	wg.Go(func() { l.run(t, s, []deposit{{key: "holder", account: "hot", cents: 1000}}) })
	<-held.Arrived()

	ds := []deposit{
		{key: "h-1", account: "hot", cents: 1}, {key: "c-1", account: "cold-1", cents: 2},
		{key: "c-2", account: "cold-2", cents: 4}, {key: "h-2", account: "hot", cents: 8},
		{key: "c-3", account: "cold-1", cents: 16}, {key: "c-4", account: "cold-3", cents: 32},
	}
	res := l.run(t, s, ds)
	for k, r := range res {
		d := ds[k]
		switch {
		case d.account == "hot":
			if r.Outcome != idem.OutcomeUnavailable || !errors.Is(r.Err, idem.ErrConflict) || !idem.IsUnavailable(r.Err) {
				t.Errorf("%s (the held account): %s, %v; want a retryable conflict", d.key, r.Outcome, r.Err)
			}
		case r.Outcome != idem.OutcomeExecuted || r.Err != nil:
			t.Errorf("%s (another account): %s, %v; want executed: it fails only for its own sake", d.key, r.Outcome, r.Err)
		}
	}
	// The held account's keys were each tried alone, on each attempt.
	alone := map[string]int{}
	for _, call := range l.calls[1:] {
		if len(call) == 1 {
			alone[ds[call[0]].key]++
		}
	}
	if alone["h-1"] != 2 || alone["h-2"] != 2 || len(alone) != 2 {
		t.Errorf("keys tried alone, with their attempts: %v; want h-1 and h-2, twice each; transactions: %v", alone, l.calls[1:])
	}
	for account, want := range map[string]int{"cold-1": 18, "cold-2": 4, "cold-3": 32} {
		if got := l.balance(t, account); got != want {
			t.Errorf("balance of %s = %d, want %d", account, got, want)
		}
	}

	held.Release()
	wg.Wait()
	// The redelivery of the whole batch: the failed keys commit, the
	// others replay, and nothing counts twice.
	res = l.run(t, s, ds)
	for k, r := range res {
		want := idem.OutcomeReplayed
		if ds[k].account == "hot" {
			want = idem.OutcomeExecuted
		}
		if r.Err != nil || r.Outcome != want {
			t.Errorf("retry of %s: %s, %v; want %s", ds[k].key, r.Outcome, r.Err, want)
		}
	}
	for account, want := range map[string]int{"hot": 1009, "cold-1": 18, "cold-2": 4, "cold-3": 32} {
		if got := l.balance(t, account); got != want {
			t.Errorf("after the retry, balance of %s = %d, want %d", account, got, want)
		}
	}
}

// A throttled table is not a contended item: a batch whose transactions
// stay throttled fails at once, without halves (see
// TestExecuteBatchThrottledFailsWithoutSplitting), while one that meets a
// held aggregate splits. Here every key of the batch updates the held
// item: each is tried alone before it fails, and all fail.
func TestExecuteBatchEveryKeyOnAHeldItemIsTriedAlone(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if env.Store == nil {
		t.Skipf("holding an item needs the strict test store; %s backend in use", env.Kind)
	}
	l := &ledger{env: env}
	s := newStore(t, env, idem.WithConflictAttempts(1))
	held := env.Store.Hold(idemtest.OpTransactWriteItems)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer held.Release()
	wg.Go(func() { l.run(t, s, []deposit{{key: "holder", account: "hot", cents: 1}}) })
	<-held.Arrived()

	ds := []deposit{{key: "a", account: "hot", cents: 1}, {key: "b", account: "hot", cents: 2}, {key: "c", account: "hot", cents: 4}}
	res := l.run(t, s, ds)
	for k, r := range res {
		if !errors.Is(r.Err, idem.ErrConflict) {
			t.Errorf("%s: %s, %v; want a conflict", ds[k].key, r.Outcome, r.Err)
		}
	}
	sets := l.calls[1:]
	// One attempt each: the batch, its halves, and the larger half's halves.
	want := [][]int{{0, 1, 2}, {0}, {1, 2}, {1}, {2}}
	if !slices.EqualFunc(sets, want, slices.Equal) {
		t.Errorf("transactions tried %v, want %v", sets, want)
	}
	if got := l.balance(t, "hot"); got != 0 {
		t.Errorf("balance %d: nothing may be written while the item is held", got)
	}
}
