package idem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// txError says which item of a cancelled transaction failed and why.
type txError struct {
	// Index is the failed item's position in TransactItems, or -1.
	Index int
	// Code is DynamoDB's cancellation code, e.g. "ConditionalCheckFailed".
	Code string
	// Message is DynamoDB's message for that item, if any.
	Message string
	// Item is the failed item's current value when DynamoDB returned it.
	Item map[string]types.AttributeValue
	// write is the failed item's index in the Effect's Writes, -1 when
	// it is none of them (the key's record, a batch's shared write).
	write int
	kind  error
	err   error
}

// Error names the item, its code and DynamoDB's message.
func (e *txError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%v: transaction item %d: %s: %s", e.kind, e.Index, e.Code, e.Message)
	}
	return fmt.Sprintf("%v: transaction item %d: %s", e.kind, e.Index, e.Code)
}

// Unwrap exposes the kind (ErrLeaseLost, ErrConditionFailed, errConflict,
// errThrottled, errTxRefused) and the SDK error.
func (e *txError) Unwrap() []error { return []error{e.kind, e.err} }

// explainTx reads a TransactWriteItems error whose item at fenceIndex is a
// lease's completion (or, in transact mode, the claim), followed by the
// Effect's writes (with fenceIndex -1: a batch's items). A failed fence
// wraps ErrLeaseLost, whatever else failed: the key decides first. Then
// another item's failed condition wraps ErrConditionFailed, and a reason
// no retry can help (a validation error, an item too large) wraps
// errTxRefused, wherever they stand; only when every reason is one a retry
// can help does it wrap errConflict (TransactionConflict) or errThrottled.
// Other errors come back wrapped unchanged.
func explainTx(err error, fenceIndex int) error {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var conflict *types.TransactionConflictException
		if errors.As(err, &conflict) {
			return &txError{Index: -1, Code: "TransactionConflict", write: -1, kind: errConflict, err: err}
		}
		return fmt.Errorf("idem: transaction: %w", err)
	}
	reasons := tce.CancellationReasons
	at := func(i int, kind error) *txError {
		r := reasons[i]
		write := -1
		if fenceIndex >= 0 && i > fenceIndex {
			write = i - fenceIndex - 1
		}
		return &txError{Index: i, Code: aws.ToString(r.Code), Message: aws.ToString(r.Message), Item: r.Item, write: write, kind: kind, err: err}
	}
	if fenceIndex >= 0 && fenceIndex < len(reasons) && aws.ToString(reasons[fenceIndex].Code) == "ConditionalCheckFailed" {
		return at(fenceIndex, ErrLeaseLost)
	}
	var refused, retry *txError
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "ConditionalCheckFailed":
			return at(i, ErrConditionFailed)
		case "TransactionConflict":
			if retry == nil {
				retry = at(i, errConflict)
			}
		case "ThrottlingError", "ProvisionedThroughputExceeded":
			if retry == nil {
				retry = at(i, errThrottled)
			}
		default:
			if refused == nil {
				refused = at(i, errTxRefused)
			}
		}
	}
	switch {
	case refused != nil:
		return refused
	case retry != nil:
		return retry
	}
	return fmt.Errorf("idem: transaction cancelled: %w", err)
}

// txReasons are the cancellation reason codes of a TransactWriteItems
// error; nil when it was no cancellation.
func txReasons(err error) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	reasons := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		reasons[i] = aws.ToString(r.Code)
	}
	return reasons
}

// isConflict reports whether DynamoDB refused a single-item write because
// the item is in a running transaction.
func isConflict(err error) bool {
	var c *types.TransactionConflictException
	return errors.As(err, &c)
}

// isReplicated reports whether DynamoDB refused a write because another
// Region was writing the same item at that moment (multi-Region strong
// consistency): nothing was written, and the write may be tried again.
// The Go SDK does not retry it.
func isReplicated(err error) bool {
	var c *types.ReplicatedWriteConflictException
	return errors.As(err, &c)
}

// retryableTx reports whether a transaction error is worth another
// attempt: a conflict with concurrent transactions, or throttling.
func retryableTx(err error) bool { return errors.Is(err, errConflict) || errors.Is(err, errThrottled) }

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

// retryConflicts runs a single-item write, again (with full jitter, a
// bounded number of times) while DynamoDB refuses it with
// TransactionConflictException (another request's transaction holds the
// item for a moment) or ReplicatedWriteConflictException (another
// Region is writing it at that moment). The SDK retries neither.
func (s *Store) retryConflicts(ctx context.Context, write func() error) error {
	for attempt := 1; ; attempt++ {
		err := write()
		if !isConflict(err) && !isReplicated(err) || attempt >= s.maxTxAttempts {
			return err
		}
		traceRetry(ctx, attempt, err)
		if werr := backoff(ctx, attempt); werr != nil {
			return fmt.Errorf("%w: %w", err, werr)
		}
	}
}

// traceRetry reports that the attempt-th write of the current phase was
// refused with err and is tried again.
func traceRetry(ctx context.Context, attempt int, err error) {
	t := traceOf(ctx)
	if t.Retry == nil {
		return
	}
	info := idemtrace.RetryInfo{Attempt: attempt, Index: -1, Err: err}
	var txErr *txError
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &txErr):
		info.Reason, info.Index = txErr.Code, txErr.Index
	case errors.As(err, &apiErr):
		info.Reason = apiErr.ErrorCode()
	}
	t.Retry(ctx, info)
}

// backoff waits after the attempt-th failed transaction, with full
// jitter: a random wait below 20 ms, doubling per attempt up to 320 ms, so
// conflicting writers do not retry in step.
func backoff(ctx context.Context, attempt int) error {
	return jitter(ctx, 10*time.Millisecond, attempt)
}

// jitter waits a random time below base doubled attempt times (at most
// five), or until ctx ends.
func jitter(ctx context.Context, base time.Duration, attempt int) error {
	limit := base << min(attempt, 5)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(rand.Int64N(int64(limit)))):
		return nil
	}
}
