// Package idemevent makes a typed Lambda handler idempotent for any event
// type: an EventBridge event, a direct invocation's payload, a Step
// Functions task's input. The event says which key it is, who sent it and
// what it asks for, through Go functions of the event that the caller
// passes in Config; the handler's result is stored as JSON and every
// later delivery of the same event gets it back without running the
// handler again.
//
//	handler, err := idemevent.Wrap(store, idemevent.Config[events.EventBridgeEvent]{
//		Operation: "orders.ship",
//		Key:       func(e events.EventBridgeEvent) (string, error) { return e.ID, nil },
//		Principal: func(e events.EventBridgeEvent) (string, error) { return e.Source, nil },
//	}, ship)
//	lambda.Start(handler)
//
// The wrapper is built on idem.Do: the key is claimed with one conditional
// PutItem, the handler runs, and its result completes the key with one
// fenced UpdateItem. The claim's lease ends at the context's deadline (the
// Lambda invocation's) plus the store's margin, so a live invocation is
// never taken over. A handler that returns an error releases the key, so
// the event's retry runs it again. A handler whose effect happened but
// whose result could not be recorded (the completion failed past the
// SDK's retries, or the handler itself returned an error wrapping
// idem.ErrNotRecorded) answers with its result and a nil error: an error
// would have the event source retry after the lease and run the effect
// again. The store's trace (idem.WithTrace) sees it as
// idem.OutcomeNotRecorded. idem.Do's
// documentation gives the one window an effect outside DynamoDB leaves
// open: pass the scope's key (idem.ScopeFrom) to a downstream API that
// takes one.
//
// # Answers
//
//   - A duplicate delivered while the first one runs gets an
//     *idem.InFlightError (errors.Is(err, idem.ErrInFlight)), returned as
//     it is: a Lambda error of type "InFlightError", with RetryAfter the
//     time until the holder's lease ends. Let the event source retry it
//     (asynchronous invocations and EventBridge do; a Step Functions task
//     retries it with a Retry on ErrorEquals ["InFlightError"] and an
//     interval of a few seconds); by then it replays the first one's
//     result, or runs if the first one failed.
//   - The same key with another fingerprint is idem.ErrKeyReuse for as long
//     as the record lives (the store's retention): a key names one event,
//     and another event under it is a producer's bug, to be sent to a
//     dead-letter queue rather than retried. Choose the fingerprint so
//     that a redelivery has the same one: by default it is the whole
//     event's, which suits an event delivered again as it was; an event
//     that its producer may send again with new metadata (an EventBridge
//     PutEvents retry gets a new id and time) needs a fingerprint of what
//     it asks for (its detail).
//   - An event without a key fails with an error wrapping ErrNoKey, or runs
//     unprotected (Config.RunWithoutKey).
//
// A key or scope idem.NewScope refuses is idem.ErrInvalidKey. These
// refusals, and errors of the Key, Principal and Fingerprint functions,
// come before any store call: the store's trace sees only the events
// that reach idem.Do, once each.
package idemevent

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// ErrNoKey says an event carries no idempotency key. A Config.Key function
// returns an error wrapping it (an empty key counts as one too); the
// wrapper then fails with it, or runs the handler unprotected if
// Config.RunWithoutKey is set.
var ErrNoKey = errors.New("idemevent: event carries no idempotency key")

// Config says how to find an event's scope and fingerprint.
type Config[E any] struct {
	// Operation names what the handler does, such as "orders.ship": the
	// first part of every scope, so two handlers sharing a table and a key
	// never share a record. Required.
	Operation string
	// Key returns the event's idempotency key: an id its producer gives it
	// once (an EventBridge event id, a request id in a direct invocation's
	// payload, an execution and state name in a Step Functions task's
	// input), never one its delivery makes up. An error wrapping ErrNoKey,
	// or "", says the event has none. Required.
	Key func(E) (string, error)
	// Principal returns who sent the event: the EventBridge source, the
	// calling service, the state machine's ARN. Two principals never share
	// a record, so one sender can neither replay nor use up another's
	// keys. Required, with no default: a sender that may share a scope
	// with every other says so by returning a fixed name. An empty
	// principal is an error, unless AllowAnonymous is set.
	Principal func(E) (string, error)
	// AllowAnonymous puts the events whose Principal returns "" in the
	// one anonymous scope of Operation (idem.NewAnonymousScope) rather
	// than refuse them: for senders that cannot be named and may share
	// one scope. A name Principal returns, "anonymous" included, is never
	// that scope.
	AllowAnonymous bool
	// Fingerprint returns what the event asks for, so that the same key
	// with another request is idem.ErrKeyReuse. Optional: the default is
	// idem.Fingerprint of the whole event (see the package documentation
	// for when that is not right).
	Fingerprint func(E) (string, error)
	// RunWithoutKey runs the handler unprotected (at least once, as
	// without this package) for an event whose Key reports ErrNoKey. By
	// default such an event fails with the error.
	RunWithoutKey bool
}

// Wrap returns handler made idempotent on store: per scope (Operation,
// Principal and Key of the event) and fingerprint, the handler runs at most
// once while the key's record lives, and every later delivery gets the
// first one's result, decoded from its JSON (R must survive a JSON round
// trip). It returns an error if store, Operation, Key or Principal is
// missing. The returned function has the shape lambda.Start takes.
func Wrap[E, R any](store *idem.Store, cfg Config[E], handler func(context.Context, E) (R, error)) (func(context.Context, E) (R, error), error) {
	switch {
	case store == nil:
		return nil, errors.New("idemevent: nil store")
	case handler == nil:
		return nil, errors.New("idemevent: nil handler")
	case cfg.Operation == "":
		return nil, errors.New("idemevent: Config.Operation is required")
	case cfg.Key == nil:
		return nil, errors.New("idemevent: Config.Key is required")
	case cfg.Principal == nil:
		return nil, errors.New("idemevent: Config.Principal is required: who sends the events (a fixed name if every sender may share one scope)")
	}
	fingerprint := cfg.Fingerprint
	if fingerprint == nil {
		fingerprint = func(e E) (string, error) { return idem.Fingerprint(e) }
	}
	return func(ctx context.Context, event E) (R, error) {
		var zero R
		key, err := cfg.Key(event)
		if err == nil && key == "" {
			err = ErrNoKey
		}
		if err != nil {
			if errors.Is(err, ErrNoKey) && cfg.RunWithoutKey {
				return handler(ctx, event)
			}
			return zero, fmt.Errorf("idemevent: %s: key: %w", cfg.Operation, err)
		}
		principal, err := cfg.Principal(event)
		if err != nil {
			return zero, fmt.Errorf("idemevent: %s: principal: %w", cfg.Operation, err)
		}
		// An empty principal is NewScope's to refuse: never the shared
		// anonymous scope by accident.
		var scope idem.Scope
		if principal == "" && cfg.AllowAnonymous {
			scope, err = idem.NewAnonymousScope(cfg.Operation, key)
		} else {
			scope, err = idem.NewScope(cfg.Operation, principal, key)
		}
		if err != nil {
			return zero, fmt.Errorf("idemevent: %s: %w", cfg.Operation, err)
		}
		fp, err := fingerprint(event)
		if err != nil {
			return zero, fmt.Errorf("idemevent: %s: fingerprint: %w", cfg.Operation, err)
		}
		// An in-flight answer is an error Lambda retries a minute later:
		// a claim that meets a running commit follows it instead.
		out, _, err := idem.Do(ctx, store, scope, fp, func(ctx context.Context) (R, error) {
			return handler(ctx, event)
		}, idem.CallRedelivers())
		if errors.Is(err, idem.ErrNotRecorded) {
			// The handler's effect happened; only its record did not
			// land. An error would have Lambda (or EventBridge) retry
			// the event after the lease and run the effect again.
			return out, nil
		}
		return out, err // an *idem.InFlightError stays as it is: Lambda names its type
	}, nil
}
