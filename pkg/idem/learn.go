package idem

import (
	"context"
	"sync"
	"time"
)

// What a store learns from the calls it makes, so that a duplicate
// spends as few calls as it can: how long a transaction takes (a
// duplicate that meets one running waits about that long before it
// looks again), and how long each operation's executions take (a waiter
// polls when its holder should be done, rather than on a blind schedule).
const (
	// txTimeDefault is a transaction's time before any has been seen;
	// txTimeMin and txTimeMax bound what is learned.
	txTimeDefault = 10 * time.Millisecond
	txTimeMin     = time.Millisecond
	txTimeMax     = 250 * time.Millisecond
	// maxLearnedOperations bounds the operations whose execution times a
	// store keeps; past it, new ones are not learned (their waiters poll
	// on the fallback schedule).
	maxLearnedOperations = 256
)

// ewma is an exponentially weighted moving average of durations, each
// new sample weighing 1/weight; safe for concurrent use.
type ewma struct {
	mu     sync.Mutex
	mean   time.Duration
	seen   bool
	weight time.Duration
}

// add adds a sample.
func (e *ewma) add(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.seen {
		e.mean, e.seen = d, true
		return
	}
	e.mean += (d - e.mean) / e.weight
}

// get returns the average; ok is false before the first sample.
func (e *ewma) get() (d time.Duration, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mean, e.seen
}

// learned is what one store has learned.
type learned struct {
	tx ewma // successful TransactWriteItems, from send to answer

	mu    sync.Mutex
	execs map[string]*ewma // by operation: a holder's claim to its completion
}

// newLearned is a store's knowledge before its first call.
func newLearned() *learned {
	return &learned{tx: ewma{weight: 8}, execs: map[string]*ewma{}}
}

// txTime is about what a transaction takes: the learned average, within
// bounds, or a default before any.
func (l *learned) txTime() time.Duration {
	d, ok := l.tx.get()
	if !ok {
		return txTimeDefault
	}
	return min(max(d, txTimeMin), txTimeMax)
}

// tookTx records a successful transaction that began at start.
func (l *learned) tookTx(start time.Time) {
	l.tx.add(time.Since(start))
}

// execTime is the average time from claim to completion of the
// operation's executions this store has run or seen complete; ok is
// false when it has none.
func (l *learned) execTime(operation string) (time.Duration, bool) {
	l.mu.Lock()
	e := l.execs[operation]
	l.mu.Unlock()
	if e == nil {
		return 0, false
	}
	return e.get()
}

// tookExec records an execution of the operation that was claimed at
// claimed and completed (its completion written) at completed.
func (l *learned) tookExec(operation string, claimed, completed time.Time) {
	if operation == "" || claimed.IsZero() || !completed.After(claimed) {
		return
	}
	l.mu.Lock()
	e := l.execs[operation]
	if e == nil && len(l.execs) < maxLearnedOperations {
		e = &ewma{weight: 4}
		l.execs[operation] = e
	}
	l.mu.Unlock()
	if e != nil {
		e.add(completed.Sub(claimed))
	}
}

// sawExec records the execution a completed record shows, when the call
// of ctx watched it complete: a claim (created_at) completed by a holder
// (completed_at), not a record that was written completed (Transact's
// and ExecuteBatch's, whose completion id is their token).
func (l *learned) sawExec(ctx context.Context, rec record) {
	if rec.Status != statusCompleted || rec.CompletionID == rec.LeaseToken {
		return
	}
	if scope, ok := ScopeFrom(ctx); ok {
		l.tookExec(scope.Operation, rec.CreatedAt, rec.CompletedAt)
	}
}
