package outbox

import (
	"context"
	"errors"
	"fmt"
)

// Publisher sends events to their consumers.
//
// Publish sends events in the order given and stops at the first one that
// fails, so that a retry from that event keeps the order. Events it can
// never send (too large, invalid) are not sent and are listed in
// Result.Rejected; no retry can change that. When it stops early, the error
// is a *PublishError naming the first event not known to be published.
type Publisher interface {
	Publish(ctx context.Context, events []Event) (Result, error)
}

// Result is what Publish did with the events it was given.
type Result struct {
	// Published counts the events known to be published before Publish
	// stopped. On an entry failure, entries after the failed one in the
	// same call may have been published as well; they are published again
	// on retry, which at-least-once delivery allows.
	Published int
	// Rejected lists the events refused for good, in order. Each index is
	// below the PublishError's, when there is one.
	Rejected []Rejection
}

// Rejection is an event Publish refused for good.
type Rejection struct {
	// Index is the event's position in the slice given to Publish.
	Index int
	// Err says why; it wraps ErrTooLarge or ErrInvalidEvent.
	Err error
}

// Errors a Publisher reports; match them with errors.Is.
var (
	// ErrCallFailed marks a publish call that failed as a whole (network,
	// throttling after the SDK's retries, permissions): none of its events
	// is known to be published.
	ErrCallFailed = errors.New("outbox: publish call failed")
	// ErrEntryFailed marks one event the bus refused within a call that
	// otherwise went through; the events before it in the call were
	// published.
	ErrEntryFailed = errors.New("outbox: event refused by the bus")
	// ErrTooLarge marks an event bigger than one publish request may carry
	// on its own; retrying cannot help.
	ErrTooLarge = errors.New("outbox: event too large to publish")
)

// PublishError says where Publish stopped: events before Index were
// published or rejected; the event at Index, and every one after it, must
// be retried.
type PublishError struct {
	// Index is the first event to retry.
	Index int
	// Err wraps ErrCallFailed or ErrEntryFailed and the cause.
	Err error
}

// Error says where publishing stopped and why.
func (e *PublishError) Error() string {
	return fmt.Sprintf("publish stopped at event %d: %v", e.Index, e.Err)
}

// Unwrap returns the cause, so errors.Is sees ErrCallFailed or
// ErrEntryFailed through a *PublishError.
func (e *PublishError) Unwrap() error { return e.Err }
