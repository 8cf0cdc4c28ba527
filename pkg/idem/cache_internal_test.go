package idem

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// TestNewCacheReservesNothing: a cache of 1,000 entries allocates no room
// for them before they come; a store is made at every cold start. Not
// parallel: it reads the process's allocation counter, as
// testing.AllocsPerRun does.
func TestNewCacheReservesNothing(t *testing.T) {
	const runs = 16
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		_ = newCache(1000, defaultCacheBytes)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 1024 {
		t.Fatalf("newCache(1000) allocates %d bytes before any entry", per)
	}
}

func TestCacheNeverHoldsMoreThanItsBound(t *testing.T) {
	t.Parallel()
	const bound, keys = 100, 10_000
	c := newCache(bound, defaultCacheBytes)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	peak := 0
	for i := range keys {
		c.put(fmt.Sprintf("k%d", i), "fp", Response{Body: []byte("b")}, now.Add(time.Hour))
		// Touch a random recent key now and then, as replays do.
		if i > 0 && rng.IntN(3) == 0 {
			c.get(fmt.Sprintf("k%d", i-rng.IntN(min(i, bound))), now)
		}
		peak = max(peak, c.len())
		if c.len() > bound {
			t.Fatalf("after %d puts the cache holds %d entries, bound %d", i+1, c.len(), bound)
		}
	}
	t.Logf("%d keys through a cache of %d: peak %d entries", keys, bound, peak)
	if peak != bound {
		t.Fatalf("peak %d, want the cache full at %d", peak, bound)
	}
	if _, ok := c.get("k0", now); ok {
		t.Fatal("the oldest key survived 10,000 newer ones")
	}
	if _, ok := c.get(fmt.Sprintf("k%d", keys-1), now); !ok {
		t.Fatal("the newest key was evicted")
	}
}

func TestCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	c := newCache(2, defaultCacheBytes)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	c.put("a", "fp", Response{}, later)
	c.put("b", "fp", Response{}, later)
	c.get("a", now) // a is now the most recently used
	c.put("c", "fp", Response{}, later)
	if _, ok := c.get("b", now); ok {
		t.Fatal("b, the least recently used, should have gone")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.get(k, now); !ok {
			t.Fatalf("%s should be cached", k)
		}
	}
}

func TestCacheEntryDiesAtExpiry(t *testing.T) {
	t.Parallel()
	c := newCache(4, defaultCacheBytes)
	exp := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c.put("a", "fp", Response{}, exp)
	if _, ok := c.get("a", exp.Add(-time.Nanosecond)); !ok {
		t.Fatal("live entry missed")
	}
	if _, ok := c.get("a", exp); ok {
		t.Fatal("an entry must not be served at its record's expires_at")
	}
	if c.len() != 0 {
		t.Fatalf("expired entry still held: %d", c.len())
	}
}

func TestCacheStaysWithinItsByteBudget(t *testing.T) {
	t.Parallel()
	c := newCache(1000, 10_000)
	exp := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	big := Response{Body: make([]byte, 3000)}
	for i := range 20 {
		c.put(fmt.Sprintf("k%d", i), "fp", big, exp)
		if c.bytes > c.maxBytes {
			t.Fatalf("after %d puts the cache holds %d bytes, budget %d", i+1, c.bytes, c.maxBytes)
		}
	}
	if c.len() != 3 {
		t.Fatalf("3 KB responses in a 10 KB budget: %d entries held, want 3", c.len())
	}
	c.put("huge", "fp", Response{Body: make([]byte, 20_000)}, exp)
	if _, ok := c.get("huge", exp.Add(-time.Hour)); ok {
		t.Fatal("a response over the whole budget must not be cached")
	}
	c.put("k19", "fp", Response{}, exp) // replacing an entry frees its bytes
	if c.len() != 3 || c.bytes > 2*3100 {
		t.Fatalf("after replacing k19: %d entries, %d bytes", c.len(), c.bytes)
	}
}
