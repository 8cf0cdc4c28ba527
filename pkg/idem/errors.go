package idem

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by the store, matched with errors.Is.
var (
	// ErrInFlight: another caller holds a live lease on the key. The error
	// is an *InFlightError carrying the time until that lease ends.
	ErrInFlight = errors.New("idem: request with this key is still in flight")
	// ErrKeyReuse: the key was used before with another payload.
	ErrKeyReuse = errors.New("idem: idempotency key reused with a different payload")
	// ErrLeaseLost: this holder's lease was taken over, or its record is
	// gone or completed; nothing this holder tried to write was written.
	ErrLeaseLost = errors.New("idem: lease lost")
	// ErrResponseTooLarge: the response to store exceeds the store's limit.
	ErrResponseTooLarge = errors.New("idem: response too large to store")
	// ErrInvalidResponse: the response cannot be stored (status out of
	// range, body or header not valid UTF-8).
	ErrInvalidResponse = errors.New("idem: response cannot be stored")
	// ErrConditionFailed: one of the caller's own transaction items failed
	// its condition; the transaction wrote nothing. See *TxError.
	ErrConditionFailed = errors.New("idem: business condition failed")
	// ErrConflict: the transaction kept conflicting with concurrent ones;
	// nothing was written and the caller may retry.
	ErrConflict = errors.New("idem: transaction conflict")
	// ErrThrottled: the transaction was cancelled for throttling, again
	// after retries; nothing was written and the caller may retry later.
	ErrThrottled = errors.New("idem: transaction throttled")
	// ErrCorruptRecord: a stored record cannot be read back.
	ErrCorruptRecord = errors.New("idem: corrupt idempotency record")
	// ErrNotRecorded: Do ran the effect but could not record its
	// completion; a retry after the lease ends may run it again.
	ErrNotRecorded = errors.New("idem: effect done but completion not recorded")
)

// InFlightError is the ErrInFlight case with the holder's remaining lease.
type InFlightError struct {
	// RetryAfter is the time until the holder's lease ends: by then the
	// key is either completed (replay) or can be taken over.
	RetryAfter time.Duration
}

func (e *InFlightError) Error() string {
	return fmt.Sprintf("%v (lease ends in %v)", ErrInFlight, e.RetryAfter.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrInFlight) true.
func (e *InFlightError) Is(target error) bool { return target == ErrInFlight }

// Outcome is what happened to one request, for logs and metrics.
type Outcome string

// The outcomes a caller can log and count.
const (
	// OutcomeExecuted: this request reserved a fresh key and ran.
	OutcomeExecuted Outcome = "executed"
	// OutcomeTakeover: this request took over a dead holder's key and ran.
	OutcomeTakeover Outcome = "takeover"
	// OutcomeReplayed: the stored response was returned.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeInFlight: another holder has a live lease.
	OutcomeInFlight Outcome = "in_flight"
	// OutcomeKeyReuse: same key, different payload.
	OutcomeKeyReuse Outcome = "key_reuse"
	// OutcomeLeaseLost: this holder was fenced out; it wrote nothing.
	OutcomeLeaseLost Outcome = "lease_lost"
	// OutcomeReleased: the request failed and its reservation was released.
	OutcomeReleased Outcome = "released"
	// OutcomeError: an infrastructure or business error not listed above.
	OutcomeError Outcome = "error"
)

// OutcomeOf maps an error from this package to its outcome.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeExecuted
	case errors.Is(err, ErrInFlight):
		return OutcomeInFlight
	case errors.Is(err, ErrKeyReuse):
		return OutcomeKeyReuse
	case errors.Is(err, ErrLeaseLost):
		return OutcomeLeaseLost
	default:
		return OutcomeError
	}
}
