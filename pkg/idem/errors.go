package idem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/scopeid"
)

// Errors returned by the store, matched with errors.Is.
var (
	// ErrInvalidKey: a scope or a fingerprint that cannot be used: an
	// empty part, a key that is not 1 to 255 bytes of printable ASCII, an
	// operation or principal that is not UTF-8 or makes the scope's ID
	// too long, a fingerprint over 1024 bytes or not UTF-8.
	ErrInvalidKey = scopeid.ErrInvalidKey
	// ErrInFlight: another caller holds a live lease on the key. The error
	// is an *InFlightError carrying the time until that lease ends.
	ErrInFlight = errors.New("idem: request with this key is still in flight")
	// ErrKeyReuse: the key was used before with another payload.
	ErrKeyReuse = errors.New("idem: idempotency key reused with a different payload")
	// ErrLeaseLost: this holder's lease was taken over, or its record is
	// gone or completed; nothing this holder tried to write was written.
	ErrLeaseLost = errors.New("idem: lease lost")
	// ErrResponseTooLarge: the response to store exceeds the store's
	// limit (WithMaxResponseBytes), counted as DynamoDB counts it.
	ErrResponseTooLarge = errors.New("idem: response too large to store")
	// errInvalidResponse: the response cannot be stored (a metadata key
	// empty, or a key or value not valid UTF-8).
	errInvalidResponse = errors.New("idem: response cannot be stored")
	// ErrConditionFailed: one of the caller's own transaction items failed
	// its condition; the transaction wrote nothing. The error names the
	// item and DynamoDB's reason; FailedWrite tells which of an Effect's
	// Writes it was.
	ErrConditionFailed = errors.New("idem: business condition failed")
	// errConflict: the transaction kept conflicting with concurrent ones;
	// nothing was written and the caller may retry (IsUnavailable).
	errConflict = errors.New("idem: transaction conflict")
	// errThrottled: the transaction was cancelled for throttling, again
	// after retries; nothing was written and the caller may retry later.
	errThrottled = errors.New("idem: transaction throttled")
	// errTxRefused: the transaction was cancelled for a reason no retry
	// can help (a validation error, an item over DynamoDB's size limit);
	// nothing was written. The txError names the item and DynamoDB's message.
	errTxRefused = errors.New("idem: transaction refused")
	// ErrInvalidEffect: an Effect that no transaction can carry (too many
	// writes, a write to the key's own record); nothing was written.
	ErrInvalidEffect = errors.New("idem: invalid effect")
	// errCorruptRecord: a stored record cannot be read back.
	errCorruptRecord = stored.ErrCorrupt
	// errNotApplied: on a table without transactions (multi-Region
	// strong consistency), the key's completion and its writes are
	// recorded, and not every write could be applied yet; the key's next
	// caller, or the sweeper, applies them. A retry may follow
	// (IsUnavailable).
	errNotApplied = errors.New("idem: completion recorded, its writes not all applied yet")
	// ErrNotRecorded: the effect ran but its completion could not be
	// recorded; a retry after the lease ends may run it again. A function
	// passed to Run may return it too, to say its effect happened and the
	// key must stay held rather than be released.
	ErrNotRecorded = errors.New("idem: effect done but completion not recorded")
)

// ErrNoHome (WithHomes): no Region holds the lease of the key's home: a
// failover is under way (the error says from when its new home takes
// claims), or too few voters answered to renew the lease. IsUnavailable
// reports it: retry later.
var ErrNoHome = errors.New("idem: no Region holds the lease of the key's home")

// InFlightError is the ErrInFlight case with the holder's remaining lease.
type InFlightError struct {
	// RetryAfter is the time until the holder's lease has ended: by then
	// the key is either completed (replay) or can be taken over.
	RetryAfter time.Duration
}

func (e *InFlightError) Error() string {
	return fmt.Sprintf("%v (lease ends in %v)", ErrInFlight, e.RetryAfter.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrInFlight) true.
func (e *InFlightError) Is(target error) bool { return target == ErrInFlight }

// Outcome is what happened to one request, for logs and metrics.
type Outcome string

// The outcomes a caller can log and count. Every call of Execute, Run and
// Do reports exactly one.
const (
	// OutcomeExecuted: this request claimed a fresh key and ran.
	OutcomeExecuted Outcome = "executed"
	// OutcomeTakeover: this request took over a dead holder's key and ran.
	// Only reserve-mode calls on a backend that returns the replaced item
	// (DynamoDB does) can tell; elsewhere a takeover reads "executed".
	OutcomeTakeover Outcome = "takeover"
	// OutcomeReplayed: the stored response was returned.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeInFlight: another holder has a live lease.
	OutcomeInFlight Outcome = "in_flight"
	// OutcomeKeyReuse: same key, different payload.
	OutcomeKeyReuse Outcome = "key_reuse"
	// OutcomeLeaseLost: this holder was fenced out; it wrote nothing.
	OutcomeLeaseLost Outcome = "lease_lost"
	// OutcomeReleased: the operation failed and the key is free for a
	// retry (its reservation was released; in transact mode nothing had
	// been claimed).
	OutcomeReleased Outcome = "released"
	// OutcomeRejected: the request was refused before any store call (an
	// invalid key, an unidentified caller).
	OutcomeRejected Outcome = "rejected"
	// OutcomeUnavailable: the store was throttled or out of reach after
	// retries; the client should retry later with the same key.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeNotRecorded: the effect ran (Run, Do) but its completion
	// could not be recorded (ErrNotRecorded). The delivery is answered
	// as done: asking for it again would, after the lease, run the
	// effect again.
	OutcomeNotRecorded Outcome = "not_recorded"
	// OutcomeError: any other failure.
	OutcomeError Outcome = "error"
)

// allOutcomes lists every outcome, for tests.
func allOutcomes() []Outcome {
	return []Outcome{
		OutcomeExecuted, OutcomeTakeover, OutcomeReplayed, OutcomeInFlight, OutcomeKeyReuse,
		OutcomeLeaseLost, OutcomeReleased, OutcomeRejected, OutcomeUnavailable, OutcomeNotRecorded, OutcomeError,
	}
}

// OutcomeOf is the outcome err stands for, as a call's Result.Outcome
// says it (but for an operation's own error, which a call that released
// its claim reports as OutcomeReleased): OutcomeInFlight, OutcomeKeyReuse,
// OutcomeLeaseLost, OutcomeRejected (ErrInvalidKey), OutcomeUnavailable
// (IsUnavailable), OutcomeNotRecorded, or OutcomeError; nil is
// OutcomeExecuted. An adapter answers its client from it, in its
// client's terms (pkg/idem/idemhttp's ProblemFor is HTTP's), with
// RetryAfter.
func OutcomeOf(err error) Outcome { return outcomeOf(err) }

// RetryAfter is how long a client should wait before it retries, under
// the same key, a call that failed with err: until the holder's lease
// ends for ErrInFlight (InFlightError.RetryAfter), 1 s for ErrLeaseLost
// (another caller took the key over) and IsUnavailable, at least 1 s in
// each case; 0 for any other error, which a retry with the same key meets
// again (ErrKeyReuse, ErrInvalidKey) or may come at once.
func RetryAfter(err error) time.Duration {
	var inflight *InFlightError
	switch {
	case errors.As(err, &inflight):
		return max(time.Second, inflight.RetryAfter)
	case errors.Is(err, ErrInFlight), errors.Is(err, ErrLeaseLost), IsUnavailable(err):
		return time.Second
	}
	return 0
}

// outcomeOf maps an error to its outcome; nil is OutcomeExecuted.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeExecuted
	case errors.Is(err, ErrNotRecorded):
		return OutcomeNotRecorded
	case errors.Is(err, ErrInFlight):
		return OutcomeInFlight
	case errors.Is(err, ErrKeyReuse):
		return OutcomeKeyReuse
	case errors.Is(err, ErrLeaseLost):
		return OutcomeLeaseLost
	case errors.Is(err, ErrInvalidKey):
		return OutcomeRejected
	case IsUnavailable(err):
		return OutcomeUnavailable
	default:
		return OutcomeError
	}
}

// unavailableCodes are DynamoDB error codes that mean "try again later"
// once the SDK's own retries are spent.
var unavailableCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
	"LimitExceededException":                 true,
	"TransactionInProgressException":         true,
	// A write refused because a transaction held its item, after this
	// package's own retries: the item is busy, not broken.
	"TransactionConflictException": true,
	// A write of an item another Region was writing at the same moment
	// (multi-Region strong consistency), after this package's retries.
	"ReplicatedWriteConflictException": true,
}

// throttled reports whether DynamoDB refused err's request for its rate.
func throttled(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "LimitExceededException":
		return true
	}
	return false
}

// IsUnavailable reports whether err means the store was throttled, busy or
// out of reach (or the caller's time ran out): a condition the client
// should retry later with the same key (HTTP 503), not a bug (500).
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errConflict) || errors.Is(err, errThrottled) || errors.Is(err, errNotApplied) || errors.Is(err, ErrNoHome) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && unavailableCodes[apiErr.ErrorCode()] {
		return true
	}
	var maxAttempts *retry.MaxAttemptsError
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	return errors.As(err, &maxAttempts) || errors.As(err, &sendErr) || errors.As(err, &netErr)
}
