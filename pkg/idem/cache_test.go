package idem_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

func TestCachedReplayMakesNoCall(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		clk := newClock()
		client, counter := env.NewClient(t)
		s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithMode(mode), idem.WithCache(16, 0), idem.WithClock(clk.Now))
		require.NoError(t, err)
		ctx := context.Background()
		sc := scope(t, "cached")

		first, err := s.Execute(ctx, sc, "fp", effect(env))
		require.NoError(t, err)
		assert.Equal(t, 1, idem.CacheLen(s), "the completion is cached")

		counter.Reset()
		replay, err := s.Execute(ctx, sc, "fp", effect(env))
		require.NoError(t, err)
		assert.Equal(t, idem.OutcomeReplayed, replay.Outcome)
		assert.Equal(t, first.Response, replay.Response)
		assert.Zero(t, counter.Total(), "a replay from memory makes no DynamoDB call: %s", counter)

		// Exact: the cached answer is the stored record's.
		rec, _, err := s.Get(ctx, sc)
		require.NoError(t, err)
		assert.Equal(t, rec.Response, replay.Response)

		// A caller changing its copy does not change the cache.
		replay.Response.Headers["Location"] = "/elsewhere"
		replay.Response.Body[0] = 'X'
		again, err := s.Execute(ctx, sc, "fp", effect(env))
		require.NoError(t, err)
		assert.Equal(t, first.Response, again.Response)

		counter.Reset()
		res, err := s.Execute(ctx, sc, "another payload", effect(env))
		require.ErrorIs(t, err, idem.ErrKeyReuse, "422 from the cache too")
		assert.Equal(t, idem.OutcomeKeyReuse, res.Outcome)
		assert.Zero(t, counter.Total())

		// Past the record's expires_at the entry is not served: the store
		// is asked, finds the record expired, and runs the operation anew.
		clk.Advance(idem.DefaultRetention + time.Second)
		counter.Reset()
		fresh, err := s.Execute(ctx, sc, "fp", effect(env))
		require.NoError(t, err)
		assert.Equal(t, idem.OutcomeExecuted, fresh.Outcome)
		assert.Positive(t, counter.Total())
		assert.NotEqual(t, first.Response.Body, fresh.Response.Body)
		assert.Equal(t, 2, countItems(t, env, env.Tables.Products))
	})
}

func TestCacheLearnsFromReplaysAndNeverHoldsInProgress(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx := context.Background()
	writer := newStore(t, env)
	client, counter := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithCache(16, 0))
	require.NoError(t, err)

	// In progress: asked every time, never cached.
	busy := scope(t, "busy")
	_, err = writer.Reserve(ctx, busy, "fp")
	require.NoError(t, err)
	for range 2 {
		counter.Reset()
		_, err = s.Execute(ctx, busy, "fp", effect(env))
		require.ErrorIs(t, err, idem.ErrInFlight)
		assert.Positive(t, counter.Total())
	}
	assert.Zero(t, idem.CacheLen(s))

	// Completed by another process: the first replay reads it, the next
	// ones come from memory.
	done := scope(t, "done")
	first, err := writer.Execute(ctx, done, "fp", effect(env))
	require.NoError(t, err)
	counter.Reset()
	r1, err := s.Execute(ctx, done, "fp", effect(env))
	require.NoError(t, err)
	assert.Positive(t, counter.Total())
	counter.Reset()
	r2, err := s.Execute(ctx, done, "fp", effect(env))
	require.NoError(t, err)
	assert.Zero(t, counter.Total())
	assert.Equal(t, first.Response, r1.Response)
	assert.Equal(t, first.Response, r2.Response)

	// Do replays from the cache as well.
	v, _, err := idem.Do(ctx, s, scope(t, "do"), "fp", func(context.Context) (string, error) { return "sent", nil })
	require.NoError(t, err)
	counter.Reset()
	v2, outcome, err := idem.Do(ctx, s, scope(t, "do"), "fp", func(context.Context) (string, error) { return "again", nil })
	require.NoError(t, err)
	assert.Equal(t, idem.OutcomeReplayed, outcome)
	assert.Equal(t, v, v2)
	assert.Zero(t, counter.Total())
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
		require.NoError(t, err)
		peak = max(peak, idem.CacheLen(s))
		require.LessOrEqual(t, idem.CacheLen(s), bound)
	}
	t.Logf("%d keys, cache bound %d, peak %d", keys, bound, peak)
	assert.Equal(t, bound, peak)
}

// A response over the cache's byte budget is never cached: its replays go
// to the table.
func TestCacheByteBudget(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	client, counter := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithCache(10, 64))
	require.NoError(t, err)
	ctx := context.Background()
	sc := scope(t, "budget")
	_, err = s.Execute(ctx, sc, "fp", effect(env)) // a 201 of about 120 bytes
	require.NoError(t, err)
	assert.Zero(t, idem.CacheLen(s))
	counter.Reset()
	res, err := s.Execute(ctx, sc, "fp", effect(env))
	require.NoError(t, err)
	assert.Equal(t, idem.OutcomeReplayed, res.Outcome)
	assert.Positive(t, counter.Total(), "from the table, not from memory")

	_, err = idem.NewStore(client, "t", idem.WithCache(10, -1))
	assert.Error(t, err, "a cache needs a byte budget")
	_, err = idem.NewStore(client, "t", idem.WithCache(0, -1))
	assert.NoError(t, err, "no cache, no budget needed")
}

// Every outcome OutcomeOf can give is one of Outcomes, and they are
// distinct: a dashboard built from the list misses none.
func TestOutcomesListEveryOutcome(t *testing.T) {
	t.Parallel()
	all := map[idem.Outcome]bool{}
	for _, o := range idem.Outcomes() {
		assert.False(t, all[o], "%s twice", o)
		all[o] = true
	}
	assert.Len(t, all, 11)
	for _, err := range []error{nil, idem.ErrInFlight, idem.ErrKeyReuse, idem.ErrLeaseLost, idem.ErrInvalidKey, idem.ErrConflict, idem.ErrCorruptRecord} {
		assert.True(t, all[idem.OutcomeOf(err)], "%v", err)
	}
}
