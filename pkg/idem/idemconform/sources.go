package idemconform

import (
	"sync"
	"time"
)

// deliverOne invokes the cell's way for one actor (a queue's way with a
// batch of one).
func (w *world) deliverOne(e *env, a *actor, sweep bool) outcome {
	return w.invoke(e, []*actor{a}, sweep)[0]
}

// settles reports whether a request source stops on out: a definitive
// answer.
func (w *world) settles(out outcome) bool {
	switch out.class {
	case OK, KeyReuse, Refused:
		return true
	case NotRecorded:
		return !out.unacked
	case Failed:
		return !out.again
	}
	return false
}

// runRequests is HTTP clients (or callers of the store) retrying each
// request with the same key, with exponential backoff and full jitter,
// waiting at least a 409's or 503's Retry-After, until a definitive answer
// or requestAttempts attempts.
func (w *world) runRequests(actors []*actor) {
	var wg sync.WaitGroup
	for _, a := range actors {
		wg.Go(func() {
			time.Sleep(w.jitter(100 * time.Millisecond))
			for attempt := 1; attempt <= requestAttempts; attempt++ {
				pl := w.poolOf(a)
				e := pl.acquire()
				out := w.deliverOne(e, a, false)
				pl.release(e)
				if w.settles(out) {
					a.settled = true
					return
				}
				wait := w.jitter(200 * time.Millisecond << min(attempt, 5))
				time.Sleep(max(wait, out.retryAfter))
			}
		})
	}
	wg.Wait()
}

// acked reports whether an asynchronous invocation or a queue message is
// done with: the function returned without error.
func acked(out outcome) bool {
	return out.class == OK || (out.class == NotRecorded && !out.unacked)
}

// runAsync is Lambda's asynchronous invocation: each event invoked, and
// invoked again after a minute and after two more if it failed (an error,
// a timeout, a crash); then it goes to the on-failure destination.
func (w *world) runAsync(actors []*actor) {
	var wg sync.WaitGroup
	for _, a := range actors {
		wg.Go(func() {
			time.Sleep(w.jitter(100 * time.Millisecond))
			for i, delay := range []time.Duration{0, firstAsyncRetry, secondAsyncRetry} {
				if i > 0 {
					time.Sleep(delay)
				}
				pl := w.poolOf(a)
				e := pl.acquire()
				out := w.deliverOne(e, a, false)
				pl.release(e)
				if acked(out) {
					a.settled = true
					return
				}
			}
			a.dead = true
		})
	}
	wg.Wait()
}

// sqs is a standard queue: a received message is invisible for the
// visibility timeout; one not acknowledged by then is received again;
// one received maxReceives times without acknowledgement goes to the
// dead-letter queue. Delivery is at least once: some messages are
// received by two consumers at once on their first receive.
type sqs struct {
	mu    sync.Mutex
	msgs  []*queued
	order int
}

type queued struct {
	a         *actor
	visibleAt time.Time
	receives  int
	done      bool
	// twice: its first receive goes to two consumers.
	twice bool
}

// receive takes up to batchSize visible messages; wait is how long until
// one may be visible when there is none, and over is true when every
// message is done.
func (q *sqs) receive() (batch []*queued, wait time.Duration, over bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	var next time.Time
	pending := false
	// Start where the last receive stopped, so copies of one message
	// spread over batches.
	n, from := len(q.msgs), q.order
	for k := range n {
		m := q.msgs[(from+k)%n]
		if m.done {
			continue
		}
		pending = true
		if m.visibleAt.After(now) {
			if next.IsZero() || m.visibleAt.Before(next) {
				next = m.visibleAt
			}
			continue
		}
		if len(batch) < batchSize {
			m.receives++
			if !m.twice || m.receives > 1 {
				m.visibleAt = now.Add(visibilityTimeout)
			}
			batch = append(batch, m)
			q.order = (from + k + 1) % n
		}
	}
	if len(batch) > 0 || !pending {
		return batch, 0, !pending
	}
	return nil, next.Sub(now), false
}

// settle records an invocation's answers: acknowledged messages are
// deleted, the others are received again once visible, or dead-lettered
// after their last receive.
func (q *sqs) settle(batch []*queued, outs []outcome) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, m := range batch {
		switch {
		case m.done:
			// Acknowledged by the other receive of a message delivered twice.
		case acked(outs[i]):
			m.done, m.a.settled = true, true
		case m.receives >= maxReceives:
			m.done, m.a.dead = true, true
		}
	}
}

// runQueue sends every actor's message and drains the queue with one
// consumer per environment, each invoking the function with a batch.
func (w *world) runQueue(actors []*actor) {
	q := &sqs{}
	for i, a := range actors {
		q.msgs = append(q.msgs, &queued{a: a, twice: i%4 == 1})
	}
	var wg sync.WaitGroup
	for i := range consumers {
		pl := w.poolAt(i)
		wg.Go(func() {
			time.Sleep(w.jitter(100 * time.Millisecond))
			for {
				batch, wait, over := q.receive()
				if over {
					return
				}
				if len(batch) == 0 {
					time.Sleep(wait)
					continue
				}
				as := make([]*actor, len(batch))
				for i, m := range batch {
					as[i] = m.a
				}
				e := pl.acquire()
				outs := w.invoke(e, as, false)
				pl.release(e)
				q.settle(batch, outs)
			}
		})
	}
	wg.Wait()
}
