package idem

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
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

func newLearned() *learned {
	return &learned{tx: ewma{weight: 8}, execs: map[string]*ewma{}}
}

// txTime is about what a transaction takes: the learned average, within
// bounds, or a default before any.
func (s *Store) txTime() time.Duration {
	d, ok := s.learned.tx.get()
	if !ok {
		return txTimeDefault
	}
	return min(max(d, txTimeMin), txTimeMax)
}

// tookTx records a successful transaction that began at start.
func (s *Store) tookTx(start time.Time) {
	s.learned.tx.add(time.Since(start))
}

// execTime is the average time from claim to completion of the
// operation's executions this store has run or seen complete; ok is
// false when it has none.
func (s *Store) execTime(operation string) (time.Duration, bool) {
	l := s.learned
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
func (s *Store) tookExec(operation string, claimed, completed time.Time) {
	if operation == "" || claimed.IsZero() || !completed.After(claimed) {
		return
	}
	l := s.learned
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

// learnExec records the execution a completed record shows, when this
// call watched it complete: a claim (created_at) completed by a holder
// (completed_at), not a record that was written completed (Transact's
// and ExecuteBatch's, whose completion id is their token).
func (s *Store) learnExec(ctx context.Context, rec record) {
	if rec.Status != statusCompleted || rec.CompletionID == rec.LeaseToken {
		return
	}
	if scope, ok := ScopeFrom(ctx); ok {
		s.tookExec(scope.Operation, rec.CreatedAt, rec.CompletedAt)
	}
}

// sends counts the attempts the SDK makes of one call, its retries
// included: a write refused after more than one may have landed on an
// earlier attempt whose answer was lost.
type sends struct{ n atomic.Int32 }

// option adds the count to one call's middleware stack, after the SDK's
// retry loop, so it runs once per attempt.
func (c *sends) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("idem.sends",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.n.Add(1)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

// once reports whether the call was sent exactly once: then a refusal
// means that nothing it wrote landed. It is false after a retry, and
// when the API did not run the option (a client other than
// *dynamodb.Client): then nothing is known.
func (c *sends) once() bool { return c.n.Load() == 1 }
