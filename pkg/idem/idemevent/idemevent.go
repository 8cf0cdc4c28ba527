// Package idemevent makes a typed Lambda handler idempotent for any event
// type: an EventBridge event, a direct invocation's payload, a Step
// Functions task's input. A function of the event reads its Entry (who
// sent it, its key, what it asks for); the handler's result is stored as
// JSON, and every later delivery of the same event gets it back without
// running the handler again.
//
//	handler, err := idemevent.Wrap(store, "orders.ship",
//		func(e events.EventBridgeEvent) (idemevent.Entry, error) {
//			return idemevent.Entry{Principal: e.Source, Key: e.ID, Value: e.Detail}, nil
//		}, ship)
//	lambda.Start(handler)
//
// The wrapper is built on idem.Do: the key is claimed with one conditional
// PutItem, the handler runs, and its result completes the key with one
// fenced UpdateItem. The claim's lease ends at the invocation's deadline
// plus the store's margin, so a live invocation is never taken over. A
// handler that returns an error releases the key, so the event's retry
// runs it again. A handler whose effect happened but whose result could
// not be recorded (the completion failed past the SDK's retries, or the
// handler returned an error wrapping idem.ErrNotRecorded) answers with its
// result and a nil error: an error would have the event source retry
// after the lease and run the effect again (the store's trace sees it as
// idem.OutcomeNotRecorded). idem.Do's documentation gives the one window
// an effect outside DynamoDB leaves open: pass the scope's key
// (idem.ScopeFrom) to a downstream API that takes one.
//
// # Answers
//
//   - A duplicate delivered while the first one runs gets an
//     *idem.InFlightError (errors.Is(err, idem.ErrInFlight)), returned as
//     it is: a Lambda error of type "InFlightError", with RetryAfter the
//     time until the holder's lease ends. Let the event source retry it
//     (asynchronous invocations and EventBridge do; a Step Functions task
//     retries it with a Retry on ErrorEquals ["InFlightError"]); by then
//     it replays the first one's result, or runs if the first one failed.
//   - The same key with another fingerprint is idem.ErrKeyReuse for as long
//     as the record lives: a key names one event, and another event under
//     it is a producer's bug, for a dead-letter queue rather than a retry.
//     Choose the Value so that a redelivery has the same one: nil (the
//     whole event) suits an event delivered again as it was; an event its
//     producer may send again with new metadata (an EventBridge PutEvents
//     retry gets a new id and time) needs what it asks for (its detail).
//   - An event without a key fails with an error wrapping ErrNoKey, or runs
//     unprotected (WithRunWithoutKey).
//
// An entry idem.NewScope refuses (no principal without Anonymous, a key
// that is not one) is idem.ErrInvalidKey. These refusals, and the read
// function's errors, come before any store call: the store's trace sees
// only the events that reach idem.Do, once each.
package idemevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/batchway"
)

// ErrNoKey says an event carries no idempotency key: a read function
// returns an error wrapping it, or an Entry whose Key is "". The wrapper
// then fails with it, or runs the handler unprotected
// (WithRunWithoutKey).
var ErrNoKey = errors.New("idemevent: event carries no idempotency key")

// Entry is what an event says of its idempotency, as idemsqs.Entry is a
// message's.
type Entry struct {
	// Principal names who sent the event (the EventBridge source, the
	// calling service, the state machine's ARN): another principal is
	// another scope. Empty is refused, unless Anonymous is set.
	Principal string
	// Anonymous puts the event in the one anonymous scope of the
	// operation (idem.NewAnonymousScope), for senders that cannot be named
	// and may share one scope; Principal must then be empty.
	Anonymous bool
	// Key is the id its producer gave the event once (an EventBridge
	// event id, a request id in a direct invocation's payload, an
	// execution and state name), never one its delivery makes up.
	Key string
	// Value is what the event asks for: its JSON is the fingerprint; nil
	// means the whole event.
	Value any
}

// Option configures Wrap.
type Option struct {
	call          []idem.CallOption
	runWithoutKey bool
}

// WithRunWithoutKey runs the handler unprotected (at least once, as
// without this package) for an event without a key; by default such an
// event fails with ErrNoKey.
func WithRunWithoutKey() Option { return Option{runWithoutKey: true} }

// WithRetention is idem.WithRetention for the handler's events
// (idem.CallRetention): how long a result replays. Wrap refuses one under
// the store's lease.
func WithRetention(d time.Duration) Option {
	return Option{call: []idem.CallOption{idem.CallRetention(d)}}
}

// Wrap returns handler made idempotent on store: per scope (operation,
// and the Principal and Key that read reads from the event) and
// fingerprint, the handler runs at most once while the key's record
// lives, and every later delivery gets the first one's result, decoded
// from its JSON (R must survive a JSON round trip). It refuses a missing
// store, operation, read function or handler, and an option the store
// cannot honour. The function it returns has the shape lambda.Start
// takes.
func Wrap[E, R any](store *idem.Store, operation string, read func(E) (Entry, error), handler func(context.Context, E) (R, error), opts ...Option) (func(context.Context, E) (R, error), error) {
	// An in-flight answer is an error Lambda retries a minute later: a
	// claim that meets a running commit follows it instead.
	call := []idem.CallOption{idem.CallRedelivers()}
	runWithoutKey := false
	for _, o := range opts {
		call = append(call, o.call...)
		runWithoutKey = runWithoutKey || o.runWithoutKey
	}
	switch {
	case store == nil:
		return nil, errors.New("idemevent: nil store")
	case operation == "":
		return nil, errors.New("idemevent: empty operation")
	case read == nil:
		return nil, errors.New("idemevent: nil read function")
	case handler == nil:
		return nil, errors.New("idemevent: nil handler")
	}
	if err := store.ValidateCall(call...); err != nil {
		return nil, fmt.Errorf("idemevent: %w", err)
	}
	return func(ctx context.Context, event E) (R, error) {
		var zero R
		entry, err := read(event)
		if err == nil && entry.Key == "" {
			err = ErrNoKey
		}
		if err != nil {
			if errors.Is(err, ErrNoKey) && runWithoutKey {
				return handler(ctx, event)
			}
			return zero, fmt.Errorf("idemevent: %s: %w", operation, err)
		}
		scope, fp, err := entry.admit(operation, event)
		if err != nil {
			return zero, fmt.Errorf("idemevent: %s: %w", operation, err)
		}
		out, _, err := idem.Do(ctx, store, scope, fp, func(ctx context.Context) (R, error) {
			return handler(ctx, event)
		}, call...)
		if errors.Is(err, idem.ErrNotRecorded) {
			// The handler's effect happened; only its record did not
			// land. An error would have Lambda (or EventBridge) retry
			// the event after the lease and run the effect again.
			return out, nil
		}
		return out, err // an *idem.InFlightError stays as it is: Lambda names its type
	}, nil
}

// admit is the entry's scope (a named sender's, which idem.NewScope
// refuses without a name, or the anonymous scope the entry chose) and
// the fingerprint of its Value, or of the whole event.
func (e Entry) admit(operation string, event any) (idem.Scope, string, error) {
	scope, err := batchway.Scope(operation, e.Principal, e.Anonymous, e.Key)
	if err != nil {
		return idem.Scope{}, "", err
	}
	v := e.Value
	if v == nil {
		v = event
	}
	fp, err := idem.Fingerprint(v)
	if err != nil {
		return idem.Scope{}, "", fmt.Errorf("fingerprint: %w", err)
	}
	return scope, fp, nil
}
