package idem_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func TestCachedReplayMakesNoCall(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		clk := newClock()
		client, counter := env.NewClient(t)
		s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithMode(mode), idem.WithCache(16, 0), idem.WithClock(clk.Now))
		must.NoError(t, err)
		ctx := context.Background()
		sc := scope(t, "cached")

		first, err := s.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, 1, idem.CacheLen(s), "the completion is cached")

		counter.Reset()
		replay, err := s.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, replay.Outcome)
		check.Equal(t, first.Response, replay.Response)
		check.Zero(t, counter.Total(), "a replay from memory makes no DynamoDB call: %s", counter)

		// Exact: the cached answer is the stored record's.
		rec, _, err := s.Get(ctx, sc)
		must.NoError(t, err)
		check.Equal(t, idem.Response(rec.Result), replay.Response)

		// A caller changing its copy does not change the cache.
		replay.Response.Meta["Location"] = "/elsewhere"
		replay.Response.Body[0] = 'X'
		again, err := s.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, first.Response, again.Response)

		counter.Reset()
		res, err := s.Execute(ctx, sc, "another payload", effect(env))
		must.ErrorIs(t, err, idem.ErrKeyReuse, "422 from the cache too")
		check.Equal(t, idem.OutcomeKeyReuse, res.Outcome)
		check.Zero(t, counter.Total())

		// Past the record's expires_at the entry is not served: the store
		// is asked, finds the record expired, and runs the operation anew.
		clk.Advance(idem.DefaultRetention + time.Second)
		counter.Reset()
		fresh, err := s.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, fresh.Outcome)
		check.Positive(t, counter.Total())
		check.NotEqual(t, first.Response.Body, fresh.Response.Body)
		check.Equal(t, 2, countItems(t, env, env.Tables.Products))
	})
}

func TestCacheLearnsFromReplaysAndNeverHoldsInProgress(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx := context.Background()
	writer := newStore(t, env)
	client, counter := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithCache(16, 0))
	must.NoError(t, err)

	// In progress: asked every time, never cached.
	busy := scope(t, "busy")
	_, err = writer.Reserve(ctx, busy, "fp")
	must.NoError(t, err)
	for range 2 {
		counter.Reset()
		_, err = s.Execute(ctx, busy, "fp", effect(env))
		must.ErrorIs(t, err, idem.ErrInFlight)
		check.Positive(t, counter.Total())
	}
	check.Zero(t, idem.CacheLen(s))

	// Completed by another process: the first replay reads it, the next
	// ones come from memory.
	done := scope(t, "done")
	first, err := writer.Execute(ctx, done, "fp", effect(env))
	must.NoError(t, err)
	counter.Reset()
	r1, err := s.Execute(ctx, done, "fp", effect(env))
	must.NoError(t, err)
	check.Positive(t, counter.Total())
	counter.Reset()
	r2, err := s.Execute(ctx, done, "fp", effect(env))
	must.NoError(t, err)
	check.Zero(t, counter.Total())
	check.Equal(t, first.Response, r1.Response)
	check.Equal(t, first.Response, r2.Response)

	// Do replays from the cache as well.
	v, _, err := idem.Do(ctx, s, scope(t, "do"), "fp", func(context.Context) (string, error) { return "sent", nil })
	must.NoError(t, err)
	counter.Reset()
	v2, outcome, err := idem.Do(ctx, s, scope(t, "do"), "fp", func(context.Context) (string, error) { return "again", nil })
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, outcome)
	check.Equal(t, v, v2)
	check.Zero(t, counter.Total())
}

// TestCacheStaysBoundedThroughTheStore: many keys through a small cache.
func TestCacheStaysBoundedThroughTheStore(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const bound, keys = 50, 1000
	s := newStore(t, env, idem.WithCache(bound, 0))
	peak := 0
	for i := range keys {
		_, _, err := idem.Do(context.Background(), s, scope(t, fmt.Sprintf("k%d", i)), "fp", func(context.Context) (int, error) { return i, nil })
		must.NoError(t, err)
		peak = max(peak, idem.CacheLen(s))
		must.LessOrEqual(t, idem.CacheLen(s), bound)
	}
	t.Logf("%d keys, cache bound %d, peak %d", keys, bound, peak)
	check.Equal(t, bound, peak)
}

// A response over the cache's byte budget is never cached: its replays go
// to the table.
func TestCacheByteBudget(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	client, counter := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithCache(10, 64))
	must.NoError(t, err)
	ctx := context.Background()
	sc := scope(t, "budget")
	_, err = s.Execute(ctx, sc, "fp", effect(env)) // a 201 of about 120 bytes
	must.NoError(t, err)
	check.Zero(t, idem.CacheLen(s))
	counter.Reset()
	res, err := s.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, res.Outcome)
	check.Positive(t, counter.Total(), "from the table, not from memory")

	_, err = idem.NewStore(client, "t", idem.WithCache(10, -1))
	check.Error(t, err, "a cache needs a byte budget")
	_, err = idem.NewStore(client, "t", idem.WithCache(0, -1))
	check.NoError(t, err, "no cache, no budget needed")
}

// Every outcome OutcomeOf can give is one of Outcomes, and they are
// distinct: a dashboard built from the list misses none.
func TestOutcomesListEveryOutcome(t *testing.T) {
	t.Parallel()
	all := map[idem.Outcome]bool{}
	for _, o := range idem.Outcomes() {
		check.False(t, all[o], "%s twice", o)
		all[o] = true
	}
	check.Len(t, all, 11)
	for _, err := range []error{nil, idem.ErrInFlight, idem.ErrKeyReuse, idem.ErrLeaseLost, idem.ErrInvalidKey, idem.ErrConflict, idem.ErrCorruptRecord} {
		check.True(t, all[idem.OutcomeOf(err)], "%v", err)
	}
}
