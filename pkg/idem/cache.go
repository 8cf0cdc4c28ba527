package idem

import (
	"container/list"
	"sync"
	"time"
)

// cache is a bounded LRU of completed records, keyed by record id. A
// completed record never changes before it expires (only an expired record
// can be claimed again), so serving it from memory is exact for as long as
// the entry lives, which is never past the record's expires_at.
type cache struct {
	mu       sync.Mutex
	max      int // entries
	maxBytes int // total response size
	bytes    int
	order    *list.List // front: most recently used; values are *cached
	entries  map[string]*list.Element
}

// cached is one completed record as the cache keeps it.
type cached struct {
	id          string
	fingerprint string
	response    Response
	expiresAt   time.Time
	size        int
}

// newCache is a cache of at most max entries and maxBytes of responses. It
// reserves nothing: its map grows with its entries, so a store made at a
// cold start (a function's init) allocates no room for the entries it has
// yet to learn (about 59 KB for 1,000).
func newCache(max, maxBytes int) *cache {
	return &cache{max: max, maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

// get returns the live entry for id; an entry whose record has expired at
// now is dropped and missed.
func (c *cache) get(id string, now time.Time) (cached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[id]
	if !ok {
		return cached{}, false
	}
	e := el.Value.(*cached)
	if !now.Before(e.expiresAt) {
		c.remove(el)
		return cached{}, false
	}
	c.order.MoveToFront(el)
	return *e, true
}

// put keeps a completed record, evicting the least recently used entries
// while the cache holds more than its entries or bytes allow. A response
// larger than the whole byte budget is not kept. The response is copied:
// callers may change theirs.
func (c *cache) put(id, fingerprint string, resp Response, expiresAt time.Time) {
	size := resp.size() + len(id) + len(fingerprint)
	if size > c.maxBytes {
		return
	}
	e := &cached{id: id, fingerprint: fingerprint, response: resp.clone(), expiresAt: expiresAt, size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[id]; ok {
		c.remove(el)
	}
	c.entries[id] = c.order.PushFront(e)
	c.bytes += size
	for c.order.Len() > c.max || c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

// remove drops an entry; c.mu is held.
func (c *cache) remove(el *list.Element) {
	e := c.order.Remove(el).(*cached)
	delete(c.entries, e.id)
	c.bytes -= e.size
}

// answer is a call's answer from the cache: a replay, or ErrKeyReuse for
// another payload. hit is false when there is no cache (c is nil) or no
// live entry for id at now.
func (c *cache) answer(id, fingerprint string, now time.Time) (res Result, err error, hit bool) {
	if c == nil {
		return Result{}, nil, false
	}
	e, ok := c.get(id, now)
	switch {
	case !ok:
		return Result{}, nil, false
	case e.fingerprint != fingerprint:
		return Result{Outcome: OutcomeKeyReuse}, ErrKeyReuse, true
	default:
		return Result{Response: e.response.clone(), Outcome: OutcomeReplayed}, nil, true
	}
}

// len returns the number of entries held.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
