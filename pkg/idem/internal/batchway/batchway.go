// Package batchway is what the batch ways in share (pkg/idem/idemsqs,
// idemstream): a batch's records read into entries,
// each entry admitted under one scope policy and fingerprint, and
// applied once, with idem.Store.Run for effects outside DynamoDB or
// idem.Store.ExecuteBatch for DynamoDB writes; in order, stopping at the
// first failure, where the source delivers in order (a FIFO queue, a
// stream's shard). An adapter only reads its event into records and
// turns the results into its source's partial-failure answer.
package batchway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// Entry is one record as the caller's decode function reads it: who sent
// it, the key its producer gave it, and the value it stands for.
type Entry[T any] struct {
	Principal string
	// Anonymous puts the record in the anonymous scope; Principal is
	// then empty.
	Anonymous bool
	Key       string
	Value     T
}

// Result is what became of one record.
type Result struct {
	Outcome idem.Outcome
	Err     error
}

// Redeliver reports whether the record needs another delivery: it failed
// and its effect did not happen. An effect that ran unrecorded
// (idem.OutcomeNotRecorded) is acknowledged: its redelivery, after the
// lease, would run it again.
func (r Result) Redeliver() bool { return r.Err != nil && r.Outcome != idem.OutcomeNotRecorded }

// Batch is one invocation's records, as an adapter hands them over.
type Batch[T any] struct {
	Store     *idem.Store
	Operation string
	// Len is the number of records; Decode reads the i-th.
	Len    int
	Decode func(i int) (Entry[T], error)
	// InOrder applies the records one after another and stops at the
	// first that needs redelivery: the rest get Skipped, untried.
	InOrder bool
	Skipped error
	// Call is the options of each store call (idem.CallRetention).
	Call []idem.CallOption
}

// Run applies each record's effect, outside DynamoDB, once: reserved,
// run, completed with a fenced write (idem.Store.Run). It stops at ctx's
// end, and before it when the time left is less than the slowest record
// so far took, reporting the untried records unavailable.
func Run[T any](ctx context.Context, b Batch[T], effect func(context.Context, T) error) []Result {
	return b.each(ctx, func(i int) Result {
		item, v, err := b.admit(i)
		if err != nil {
			return Result{idem.OutcomeRejected, err}
		}
		// An in-flight answer is a redelivery: a claim that meets a
		// running commit follows it instead.
		res, err := b.Store.Run(ctx, item.Scope, item.Fingerprint, func(ctx context.Context) (idem.Response, error) {
			return item.Response, effect(ctx, v)
		}, append([]idem.CallOption{idem.CallRedelivers()}, b.Call...)...)
		return Result{res.Outcome, err}
	})
}

// Transact applies the records' DynamoDB writes once: every new record's
// key and the writes shared by exactly those records in one transaction
// (idem.Store.ExecuteBatch); in order, each record is its own
// transaction, and like Run it stops before the deadline.
func Transact[T any](ctx context.Context, b Batch[T], shared func(executing []T, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error)) []Result {
	if b.InOrder {
		return b.each(ctx, func(i int) Result {
			one := b
			one.Len, one.InOrder = 1, false
			one.Decode = func(int) (Entry[T], error) { return b.Decode(i) }
			return Transact(ctx, one, shared)[0]
		})
	}
	results := make([]Result, b.Len)
	var (
		items  []idem.BatchItem
		values []T
		of     []int // items[k] is record of[k]
	)
	for i := range b.Len {
		item, v, err := b.admit(i)
		if err != nil {
			results[i] = Result{idem.OutcomeRejected, err}
			continue
		}
		items, values, of = append(items, item), append(values, v), append(of, i)
	}
	if len(items) == 0 {
		return results
	}
	res, err := b.Store.ExecuteBatch(ctx, items, func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		vs := make([]T, len(executing))
		for k, i := range executing {
			vs[k] = values[i]
		}
		return shared(vs, contended)
	}, b.Call...)
	for k, i := range of {
		if err != nil {
			results[i] = Result{idem.OutcomeError, err}
			continue
		}
		results[i] = Result{res[k].Outcome, res[k].Err}
	}
	return results
}

// each applies the records one after another; in order, after the first
// that needs redelivery the rest are skipped, untried. It stops at ctx's
// end, and before it when the time left is less than the slowest record
// so far took, reporting the untried records unavailable: after a record
// left untried for lack of time, the rest are left untried too.
func (b Batch[T]) each(ctx context.Context, apply func(i int) Result) []Result {
	results := make([]Result, b.Len)
	var stop error
	var slowest time.Duration // of the records applied so far
	for i := range results {
		if stop != nil {
			results[i] = Result{idem.OutcomeUnavailable, stop}
			if b.InOrder {
				results[i] = Result{idem.OutcomeRejected, b.Skipped}
			}
			continue
		}
		dl, hasDeadline := ctx.Deadline()
		switch {
		case ctx.Err() != nil:
			results[i] = Result{idem.OutcomeUnavailable, fmt.Errorf("untried: %w", ctx.Err())}
		case hasDeadline && time.Until(dl) < slowest:
			// A record started now would likely run into the deadline,
			// and the whole batch would come again.
			results[i] = Result{idem.OutcomeUnavailable, errNoTime}
		default:
			start := time.Now()
			results[i] = apply(i)
			slowest = max(slowest, time.Since(start))
		}
		switch r := results[i]; {
		case r.Err == errNoTime:
			stop = errNoTime
		case b.InOrder && r.Redeliver():
			stop = b.Skipped
		}
	}
	return results
}

// admit reads record i into its batch item: its scope (Entry.scope,
// which refuses a record whose sender it cannot name unless the record
// chose the anonymous scope), the fingerprint
// of its value's JSON, and nothing to store but that it was applied, so
// a value of any size can be.
func (b Batch[T]) admit(i int) (idem.BatchItem, T, error) {
	e, err := b.Decode(i)
	if err != nil {
		return idem.BatchItem{}, e.Value, err
	}
	scope, err := e.scope(b.Operation)
	if err != nil {
		return idem.BatchItem{}, e.Value, err
	}
	body, err := json.Marshal(e.Value)
	if err != nil {
		return idem.BatchItem{}, e.Value, fmt.Errorf("encode: %w", err)
	}
	fp, err := idem.Fingerprint(json.RawMessage(body))
	if err != nil {
		return idem.BatchItem{}, e.Value, fmt.Errorf("fingerprint: %w", err)
	}
	return idem.BatchItem{Scope: scope, Fingerprint: fp}, e.Value, nil
}

// scope is the entry's scope (Scope).
func (e Entry[T]) scope(operation string) (idem.Scope, error) {
	return Scope(operation, e.Principal, e.Anonymous, e.Key)
}

// Scope is the scope of an entry of an event way in (idemsqs, idemstream,
// idemevent): a named producer's (idem.NewScope, which refuses an empty
// name), or the anonymous scope the entry chose, which names no
// principal.
func Scope(operation, principal string, anonymous bool, key string) (idem.Scope, error) {
	if !anonymous {
		return idem.NewScope(operation, principal, key)
	}
	if principal != "" {
		return idem.Scope{}, fmt.Errorf("%w: an anonymous entry names a principal (%q)", idem.ErrInvalidKey, principal)
	}
	return idem.NewAnonymousScope(operation, key)
}

// Check refuses a batch way in a constructor cannot serve: no store, no
// operation, no decode function, or options the store refuses.
func Check(store *idem.Store, operation string, decodeSet bool, call []idem.CallOption) error {
	switch {
	case store == nil:
		return errors.New("nil store")
	case operation == "":
		return errors.New("empty operation")
	case !decodeSet:
		return errors.New("nil decode function")
	}
	return store.ValidateCall(call...)
}

// errNoTime is the error of a record left untried because the time left
// before the invocation's deadline is less than the slowest record took.
var errNoTime = fmt.Errorf("untried: too little time left before the deadline: %w", context.DeadlineExceeded)
