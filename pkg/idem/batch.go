package idem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// DynamoDB's limits on one TransactWriteItems: 100 actions, 4 MB of items.
const (
	maxTxActions = 100
	maxTxBytes   = 4 << 20
)

// BatchItem is one key of a batch: its scope, its payload's fingerprint
// and the response stored for it, which every later duplicate replays.
type BatchItem struct {
	Scope       Scope
	Fingerprint string
	Response    Response
}

// BatchResult is one item's answer. Result.Outcome is always set; Err is
// nil for OutcomeExecuted and OutcomeReplayed.
type BatchResult struct {
	Result
	// Err says why the item neither executed nor replayed, as Execute's
	// errors do: ErrKeyReuse, an *InFlightError, ErrInvalidKey,
	// ErrResponseTooLarge or another unstorable response, ErrConditionFailed
	// (the item's shared writes failed their condition on their own), a
	// conflict or throttling
	// (retries spent), the shared writes function's error, or the DynamoDB
	// error (IsUnavailable tells a retryable one).
	Err error
}

// ExecuteBatch executes many keys whose effects are DynamoDB writes in as
// few transactions as it can: one TransactWriteItems puts every new key's
// record, already COMPLETED with its response under the claim's condition
// (as Transact does), together with the
// shared writes computed for exactly those keys. It returns one
// BatchResult per item, in order.
//
// shared returns the writes that commit with the records of the items at
// the indexes in executing (ascending): the effect of exactly those items,
// such as one aggregated update per account they touch. ExecuteBatch
// calls it once per transaction it sends, with only the items that
// transaction executes, so the writes must depend on nothing else and
// must not write the items' records. An error fails those items and
// writes nothing. contended is what DynamoDB reported of the call's
// previous transaction: the shared writes (as shared returned them) whose
// items another transaction held, so that it was cancelled
// (TransactionConflict on them); nil on the first call and after a
// transaction that no shared write's conflict cancelled. A function that
// spreads a hot aggregate over items (pkg/idem/idemshard) moves to
// another item on it.
//
// A transaction cancelled because some records' conditions failed tells
// which keys were there already (each reason carries the record): those
// replay, are key reuse or are in flight, and the rest commit in one more
// transaction, with their shared writes computed again without them. A
// transaction cancelled by a conflict or throttling is retried with full
// jitter while ctx lasts, at most WithConflictAttempts times; then a key
// whose own record was the contended item is in flight (a duplicate is
// committing it) and the rest get another round without it. When no
// key's record was contended but a shared write was (an aggregate that
// other batches hold: the one account every key credits), the keys are
// split in halves, each committed on its own, with its own shared writes
// and its own attempts, down to single keys: the keys whose writes miss
// the contended item commit, and a key fails with the conflict
// (retryable: IsUnavailable) only when a transaction of its own, its
// record with the shared writes computed for it alone, was cancelled on
// every attempt. That costs time: under contention that outlasts every
// attempt, a batch of n keys tries up to 2n-1 transactions one after
// another, within ctx; pkg/idem/idemshard spreads an aggregate that every
// batch updates over items, so that batches seldom meet. Throttling that outlasts the attempts fails the
// transaction's keys together, retryable: it is about the table, and
// halves would only send more transactions into it. Beyond 100 actions
// or 4 MB, the batch is split into transactions of their own, each with
// its own shared writes. A shared write whose condition fails, or a
// transaction refused as a whole (an error that is not a cancellation,
// once a read of a record shows it did not land), splits the keys in
// halves until the ones at fault are alone: only a key whose own writes
// cannot commit gets ErrConditionFailed. So a key fails only for its own
// sake, never because another key of the batch was a duplicate,
// conflicted or failed; throttling and the end of ctx fail every key
// not yet committed.
//
// The same scope twice in items is one key: the later item answers as a
// duplicate of the first (a replay of it, or key reuse for another
// fingerprint). With the cache on, a key this store completed or replayed
// before answers from memory and joins no transaction.
//
// The returned error is only for a call that cannot run at all (no shared
// function); every other failure is its item's Err.
func (s *Store) ExecuteBatch(ctx context.Context, items []BatchItem, shared func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error)) ([]BatchResult, error) {
	t := s.traceFor(ctx)
	ctx = start(ctx, t.CallStart, idemtrace.CallStartInfo{Way: idemtrace.WayBatch, Items: len(items)})
	if t != noTrace || traceOf(ctx) != noTrace {
		ctx = withCall(ctx, Scope{}, false, t) // for the phases: traceOf
	}
	panicking := t.CallDone != nil // in shared: as admit's
	if panicking {
		defer func() {
			if panicking {
				t.CallDone(ctx, idemtrace.CallDoneInfo{Way: idemtrace.WayBatch, Panicked: true})
			}
		}()
	}
	res, err := s.executeBatch(ctx, items, shared)
	panicking = false
	for i, it := range items {
		outcome, ierr := OutcomeRejected, err
		if err == nil {
			outcome, ierr = res[i].Outcome, res[i].Err
		}
		s.leave(ctx, it.Scope, outcome, ierr)
		if t.BatchItem != nil {
			t.BatchItem(ctx, idemtrace.BatchItemInfo{Index: i, Operation: it.Scope.Operation, ScopeID: it.Scope.ID(), Outcome: string(outcome), Err: ierr})
		}
	}
	event(ctx, t.CallDone, idemtrace.CallDoneInfo{Way: idemtrace.WayBatch, Err: err})
	return res, err
}

func (s *Store) executeBatch(ctx context.Context, items []BatchItem, shared func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error)) ([]BatchResult, error) {
	if shared == nil {
		return nil, errors.New("idem: ExecuteBatch needs a shared writes function (one returning no writes will do)")
	}
	b := &batch{
		s: s, items: items, shared: shared,
		ids: make([]string, len(items)), tokens: make([]string, len(items)),
		res: make([]BatchResult, len(items)), vanished: make([]int, len(items)),
	}
	var pending []int
	first := map[string]int{}
	follows := map[int]int{}
	t := traceOf(ctx)
	for i, it := range items {
		// Admission, each item on its own (the hook hears of each when
		// the batch is done).
		id, res, err, done := s.enter(ctx, t, it.Scope, it.Fingerprint, func() error { return s.validate(it.Response) })
		if done {
			b.res[i] = BatchResult{res, err}
			continue
		}
		if j, ok := first[id]; ok {
			// DynamoDB refuses a transaction that writes one item twice.
			follows[i] = j
			continue
		}
		first[id] = i
		b.ids[i] = id
		// One token per key for every transaction of this call: finding
		// it on the record means an earlier attempt landed.
		b.tokens[i] = s.newToken()
		pending = append(pending, i)
	}
	b.commit(ctx, pending)
	b.followUp(ctx, follows)
	return b.res, nil
}

// followUp answers the items whose scope an earlier item of the batch has
// (follows maps each to that earlier item), once the earlier ones are
// answered: as duplicates of them, except where the earlier item was key
// reuse for another payload, which says nothing of this one's (it may be
// the payload the key was completed with). Those go in a transaction of
// their own, one item per scope at a time, in the batch's order.
func (b *batch) followUp(ctx context.Context, follows map[int]int) {
	for len(follows) > 0 {
		order := slices.Sorted(maps.Keys(follows))
		next := map[int]int{}
		first := map[string]int{}
		var again []int
		for _, i := range order {
			j := follows[i]
			if l, ok := first[b.ids[j]]; ok {
				next[i] = l // this round already decides one item of the scope
				continue
			}
			if !errors.Is(b.res[j].Err, ErrKeyReuse) || b.items[i].Fingerprint == b.items[j].Fingerprint {
				b.res[i] = duplicateOf(b.items[i], b.items[j], b.res[j])
				continue
			}
			first[b.ids[j]] = i
			b.ids[i], b.tokens[i] = b.ids[j], b.s.newToken()
			again = append(again, i)
		}
		b.commit(ctx, again)
		follows = next
	}
}

// duplicateOf answers an item whose scope an earlier item of the same
// batch has, given that item's answer.
func duplicateOf(it, earlier BatchItem, r BatchResult) BatchResult {
	switch {
	case r.Err != nil:
		return r
	case it.Fingerprint != earlier.Fingerprint:
		return BatchResult{Result{Outcome: OutcomeKeyReuse}, ErrKeyReuse}
	}
	r.Response = r.Response.clone()
	r.Outcome = OutcomeReplayed
	return r
}

// batch is one ExecuteBatch call's state: per item, its record id, its
// token, its answer and how often its record vanished under it.
type batch struct {
	s      *Store
	items  []BatchItem
	shared func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error)
	// contended is the shared writes whose conflict cancelled the last
	// transaction, for the next call of shared.
	contended []types.TransactWriteItem
	ids       []string
	tokens    []string
	res       []BatchResult
	vanished  []int
}

// commit executes the pending items (indexes into b.items) in as few
// transactions as it can, and sets each one's answer.
func (b *batch) commit(ctx context.Context, pending []int) {
	s, t := b.s, traceOf(ctx)
	conflicts := 0
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			b.fail(pending, fmt.Errorf("idem: batch: %w", err))
			return
		}
		contended := b.contended
		b.contended = nil
		writes, err := b.shared(slices.Clone(pending), contended)
		if err != nil {
			b.failWith(pending, OutcomeReleased, err)
			return
		}
		now := s.now()
		actions := make([]types.TransactWriteItem, 0, len(pending)+len(writes))
		expires := now
		for _, i := range pending {
			put, exp := s.completedPut(b.ids[i], b.items[i].Fingerprint, b.tokens[i], b.items[i].Response, len(writes), now)
			actions = append(actions, types.TransactWriteItem{Put: put})
			expires = exp
		}
		actions = append(actions, writes...)
		if len(actions) > maxTxActions || txSize(actions) > maxTxBytes {
			if len(pending) == 1 {
				b.failWith(pending, OutcomeReleased, fmt.Errorf("%w: the key's record and %d shared writes exceed one transaction (%d actions, 4 MB)", ErrInvalidEffect, len(writes), maxTxActions))
				return
			}
			b.bisect(ctx, pending)
			return
		}
		// A fresh input per attempt: the SDK gives each its own
		// ClientRequestToken, which makes its retries of one attempt safe.
		tctx := ctx
		if t.BatchTxStart != nil {
			tctx = start(ctx, t.BatchTxStart, idemtrace.BatchTxStartInfo{Items: slices.Clone(pending), Writes: len(writes), Attempt: conflicts + 1})
		}
		_, err = s.db.TransactWriteItems(tctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions})
		if t.BatchTxDone != nil {
			t.BatchTxDone(tctx, idemtrace.BatchTxDoneInfo{Reasons: txReasons(err), Err: err})
		}
		if err == nil {
			for _, i := range pending {
				b.executed(i, expires)
			}
			return
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(actions) {
			// An error after the SDK's retries: the transaction may have
			// landed with every answer lost, and then it did for all.
			if s.landed(ctx, b.ids[pending[0]], b.tokens[pending[0]]) {
				for _, i := range pending {
					b.executed(i, expires)
				}
				return
			}
			err = fmt.Errorf("idem: batch transaction: %w", err)
			if len(pending) == 1 || ctx.Err() != nil || throttled(err) {
				// Throttling after the SDK's retries is about the table,
				// not a key: halves would only send more transactions
				// into it.
				b.fail(pending, err)
				return
			}
			// A whole request refused (one item too large, a 5xx that one
			// key's content provokes) names no key: halves find the ones
			// it is about, and the others commit.
			b.bisect(ctx, pending)
			return
		}
		reasons := tce.CancellationReasons
		for k := len(pending); k < len(reasons); k++ {
			if aws.ToString(reasons[k].Code) == "TransactionConflict" {
				b.contended = append(b.contended, writes[k-len(pending)])
			}
		}

		// The records' own conditions first: keys that were there already
		// are decided by their records, and the rest go again without them,
		// at once, since they were only cancelled along.
		rest := make([]int, 0, len(pending))
		claimedBefore := false
		for k, i := range pending {
			if aws.ToString(reasons[k].Code) != "ConditionalCheckFailed" {
				rest = append(rest, i)
				continue
			}
			claimedBefore = true
			if !b.decide(ctx, i, reasons[k].Item, now) {
				rest = append(rest, i)
			}
		}
		if claimedBefore {
			pending = rest
			continue
		}

		// A shared write's condition: only smaller sets of keys can tell
		// whose writes cannot commit, so halves commit on their own, down
		// to single keys.
		for k := len(pending); k < len(reasons); k++ {
			if aws.ToString(reasons[k].Code) != "ConditionalCheckFailed" {
				continue
			}
			if len(pending) == 1 {
				b.failWith(pending, OutcomeReleased, &txError{
					Index: k, Code: "ConditionalCheckFailed", Message: aws.ToString(reasons[k].Message),
					Item: reasons[k].Item, kind: ErrConditionFailed, err: err,
				})
				return
			}
			b.bisect(ctx, pending)
			return
		}

		explained := explainTx(err, -1)
		if !retryableTx(explained) {
			// Refused (an item too large, a validation error): no retry
			// can help, but halves find the key it is about.
			if len(pending) > 1 && errors.Is(explained, errTxRefused) {
				b.bisect(ctx, pending)
				return
			}
			b.fail(pending, explained)
			return
		}
		if conflicts++; conflicts < s.maxTxAttempts {
			if werr := batchBackoff(ctx, conflicts); werr != nil {
				b.fail(pending, fmt.Errorf("%w: %w", explained, werr))
				return
			}
			continue
		}
		// Attempts spent. A key whose own record another transaction
		// holds is being committed by a duplicate: in flight. The others
		// get a new round without it; only the contended ones fail.
		rest = rest[:0]
		for k, i := range pending {
			if aws.ToString(reasons[k].Code) == "TransactionConflict" {
				b.res[i] = BatchResult{Result{Outcome: OutcomeInFlight}, &InFlightError{RetryAfter: time.Second}}
				continue
			}
			rest = append(rest, i)
		}
		if len(rest) == len(pending) {
			// No key's own record was contended: a shared write was (an
			// aggregate every key updates, held by other batches), or the
			// table throttled. Halves, each with its own shared writes and
			// its own attempts, down to single keys, let the keys whose
			// writes miss the contended item commit, and give the others
			// more time; so a key fails with a conflict only when a
			// transaction of its own was cancelled on every attempt.
			// Throttling is about the table: halves would only send more
			// transactions into it.
			if len(pending) > 1 && errors.Is(explained, errConflict) {
				b.bisect(ctx, pending)
				return
			}
			b.fail(pending, explained)
			return
		}
		pending, conflicts = rest, 0
	}
}

// batchBackoff waits after the attempt-th cancelled batch transaction,
// with full jitter, in windows longer than backoff's: from 50 ms,
// doubling up to 1.6 s. Batches conflict on their shared items (one
// account that many keys update is a hot key), each holding it for a
// whole transaction, and a retry that comes back before the next holder
// is done is one more call for nothing; spreading the retries over
// several transactions' time lets most of them find the item free.
func batchBackoff(ctx context.Context, attempt int) error {
	return jitter(ctx, 50*time.Millisecond, attempt)
}

// bisect commits each half of pending on its own, each with its own
// shared writes.
func (b *batch) bisect(ctx context.Context, pending []int) {
	half := len(pending) / 2
	b.commit(ctx, pending[:half])
	b.commit(ctx, pending[half:])
}

// decide answers item i, whose claim lost its condition to item (the
// record in the cancellation reason, or read when the backend sent none).
// It returns false when the record no longer stands in the way (expired,
// gone, or a dead holder's): then the item is claimed again, a bounded
// number of times.
func (b *batch) decide(ctx context.Context, i int, item map[string]types.AttributeValue, now time.Time) bool {
	s, it := b.s, b.items[i]
	rec, found, err := s.current(ctx, b.ids[i], item)
	if err != nil {
		b.res[i] = BatchResult{Result{Outcome: outcomeOf(err)}, err}
		return true
	}
	v := verdictAbsent
	if found {
		v = judge(rec, it.Fingerprint, b.tokens[i], now)
	}
	switch v {
	case verdictOwn:
		// An earlier attempt landed; the SDK's retry of it met our own
		// record (backends that ignore ClientRequestToken).
		b.executed(i, rec.ExpiresAt)
	case verdictReplay:
		s.remember(b.ids[i], it.Fingerprint, responseOf(rec), rec.ExpiresAt)
		b.res[i] = BatchResult{Result: Result{Response: responseOf(rec), Outcome: OutcomeReplayed}}
	case verdictKeyReuse:
		b.res[i] = BatchResult{Result{Outcome: OutcomeKeyReuse}, ErrKeyReuse}
	case verdictInFlight:
		b.res[i] = BatchResult{Result{Outcome: OutcomeInFlight}, &InFlightError{RetryAfter: untilFree(rec, now)}}
	default:
		if b.vanished[i]++; b.vanished[i] < s.maxAttempts {
			return false
		}
		// The key keeps changing hands under us: busy, as a reserve-mode claim says.
		b.res[i] = BatchResult{Result{Outcome: OutcomeInFlight}, &InFlightError{RetryAfter: time.Second}}
	}
	return true
}

// executed records item i as committed by this call.
func (b *batch) executed(i int, expires time.Time) {
	it := b.items[i]
	b.s.remember(b.ids[i], it.Fingerprint, it.Response, expires)
	b.res[i] = BatchResult{Result: Result{Response: it.Response, Outcome: OutcomeExecuted}}
}

// fail answers the items with a store error.
func (b *batch) fail(items []int, err error) { b.failWith(items, failed(err, true, true), err) }

func (b *batch) failWith(items []int, outcome Outcome, err error) {
	for _, i := range items {
		b.res[i] = BatchResult{Result{Outcome: outcome}, err}
	}
}

// txSize estimates a transaction's size as DynamoDB counts it against
// its 4 MB: attribute names and values of every item written, keys and
// expression values of updates and condition checks.
func txSize(actions []types.TransactWriteItem) int {
	n := 0
	for _, a := range actions {
		switch {
		case a.Put != nil:
			n += itemSize(a.Put.Item)
		case a.Update != nil:
			n += itemSize(a.Update.Key) + itemSize(a.Update.ExpressionAttributeValues) + len(aws.ToString(a.Update.UpdateExpression))
		case a.Delete != nil:
			n += itemSize(a.Delete.Key)
		case a.ConditionCheck != nil:
			n += itemSize(a.ConditionCheck.Key)
		}
	}
	return n
}

func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberM:
		// 3 bytes for the map, and 1 per element besides its name and value.
		return 3 + len(v.Value) + itemSize(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		return setSize(v.Value)
	case *types.AttributeValueMemberNS:
		return setSize(v.Value)
	case *types.AttributeValueMemberBS:
		return setSize(v.Value)
	}
	return 1 // BOOL, NULL
}

// setSize is the size of a set's elements.
func setSize[E ~string | ~[]byte](set []E) int {
	n := 0
	for _, e := range set {
		n += len(e)
	}
	return n
}
