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
// nil for OutcomeExecuted and OutcomeReplayed, and otherwise says why the
// item neither executed nor replayed, as Execute's errors do (and
// ErrConditionFailed when the item's own shared writes failed their
// condition).
type BatchResult struct {
	Result
	Err error
}

// ExecuteBatch executes many keys whose effects are DynamoDB writes in as
// few transactions as it can: every new key's record, COMPLETED with its
// response, commits in one TransactWriteItems with the writes shared
// returns for exactly the items of that transaction (executing, in
// ascending order; contended is the shared writes whose conflict
// cancelled the call's previous transaction). It returns one BatchResult
// per item, in order; each key fails only for its own sake (the package
// documentation's "Batches"). The error is only for a call that cannot
// run at all.
func (s *Store) ExecuteBatch(ctx context.Context, items []BatchItem, shared func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error), opts ...CallOption) ([]BatchResult, error) {
	settings, serr := s.settings(opts)
	t := s.traceFor(ctx)
	ctx = start(ctx, t.CallStart, idemtrace.CallStartInfo{Way: idemtrace.WayBatch, Items: len(items)})
	// The phases find the trace and the settings here (traceOf, settingsFor).
	ctx = withCall(ctx, Scope{}, false, t, settings)
	panicking := t.CallDone != nil // in shared: as admit's
	if panicking {
		defer func() {
			if panicking {
				t.CallDone(ctx, idemtrace.CallDoneInfo{Way: idemtrace.WayBatch, Panicked: true})
			}
		}()
	}
	res, err := s.executeBatch(ctx, items, shared, serr)
	panicking = false
	for i, it := range items {
		outcome, ierr := OutcomeRejected, err
		if err == nil {
			outcome, ierr = res[i].Outcome, res[i].Err
		}
		if t.BatchItem != nil {
			t.BatchItem(ctx, idemtrace.BatchItemInfo{Index: i, Operation: it.Scope.Operation, ScopeID: it.Scope.ID(), Outcome: string(outcome), Err: ierr})
		}
	}
	event(ctx, t.CallDone, idemtrace.CallDoneInfo{Way: idemtrace.WayBatch, Err: err})
	return res, err
}

// executeBatch admits each item on its own, then commits the admitted
// ones, then answers the items whose scope an earlier item has.
func (s *Store) executeBatch(ctx context.Context, items []BatchItem, shared func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error), settingsErr error) ([]BatchResult, error) {
	switch {
	case shared == nil:
		return nil, errors.New("idem: ExecuteBatch needs a shared writes function (one returning no writes will do)")
	case settingsErr != nil:
		return nil, settingsErr
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	b := &batch{
		s: s, items: items, shared: shared, retention: s.settingsFor(ctx).retention,
		claims: make([]*claim, len(items)), res: make([]BatchResult, len(items)),
	}
	var pending []int
	first := map[string]int{}
	follows := map[int]int{}
	t := traceOf(ctx)
	for i, it := range items {
		// Admission, each item on its own (the trace hears of each when
		// the batch is done).
		id, res, err, done := s.enter(ctx, t, it.Scope, it.Fingerprint, func() error { return it.Response.check(s.maxResponseBytes) })
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
		b.claim(i, id)
		pending = append(pending, i)
	}
	b.commitHomed(ctx, pending)
	b.followUp(ctx, follows)
	return b.res, nil
}

// commitHomed commits the pending items; on a global table (WithHomes),
// in a group per home, each sent to its home's Region, since a
// transaction is atomic in one Region only (and the items' shared writes
// are computed per group).
func (b *batch) commitHomed(ctx context.Context, pending []int) {
	h := b.s.homes
	if h == nil {
		b.commit(ctx, pending)
		return
	}
	groups := map[string][]int{}
	var slots []string
	for _, i := range pending {
		slot, err := h.slotOf(b.items[i].Scope)
		if err != nil {
			b.failWith([]int{i}, OutcomeError, err)
			continue
		}
		if _, ok := groups[slot]; !ok {
			slots = append(slots, slot)
		}
		groups[slot] = append(groups[slot], i)
	}
	for _, slot := range slots {
		r, err := h.routeSlot(ctx, slot)
		if err != nil {
			b.fail(groups[slot], err)
			continue
		}
		b.commit(routed(ctx, r), groups[slot])
	}
}

// batch is one ExecuteBatch call's state: per item, its claim and its
// answer.
type batch struct {
	s      *Store
	items  []BatchItem
	shared func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error)
	// contended is the shared writes whose conflict cancelled the last
	// transaction, for the next call of shared.
	contended []types.TransactWriteItem
	claims    []*claim
	res       []BatchResult
	retention time.Duration // of the records it completes
}

// claim makes item i's claim on the record id. One token per key for
// every transaction of this call: finding it on the record means an
// earlier attempt landed.
func (b *batch) claim(i int, id string) {
	b.claims[i] = &claim{s: b.s, id: id, fingerprint: b.items[i].Fingerprint, token: b.s.newToken(), retention: b.retention}
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
			id := b.claims[j].id
			if l, ok := first[id]; ok {
				next[i] = l // this round already decides one item of the scope
				continue
			}
			if !errors.Is(b.res[j].Err, ErrKeyReuse) || b.items[i].Fingerprint == b.items[j].Fingerprint {
				b.res[i] = duplicateOf(b.items[i], b.items[j], b.res[j])
				continue
			}
			first[id] = i
			b.claim(i, id)
			again = append(again, i)
		}
		b.commitHomed(ctx, again)
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

// batchTx is one transaction of a batch: the shared writes, every action
// (the pending items' records, then the shared writes), the time its
// claims are made at and their records' expiry.
type batchTx struct {
	writes, actions []types.TransactWriteItem
	now, expires    time.Time
}

// commit executes the pending items (indexes into b.items) in as few
// transactions as it can, and sets each one's answer: the records'
// conditions first (keys there already are decided by decide, and the
// rest go again without them), then a shared write's condition or a
// refusal (halves find the keys at fault), then conflicts and throttling
// (retried; attempts spent, a key whose own record stayed contended is in
// flight, and halves give the others more time).
func (b *batch) commit(ctx context.Context, pending []int) {
	if b.s.strong(ctx) {
		b.commitEach(ctx, pending)
		return
	}
	conflicts := 0
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			b.fail(pending, fmt.Errorf("idem: batch: %w", err))
			return
		}
		tx, ok := b.prepare(ctx, pending)
		if !ok {
			return
		}
		err := b.send(ctx, pending, tx, conflicts+1)
		if err == nil {
			b.executedAll(pending, tx.expires)
			return
		}
		if b.s.learnRefusal(ctx, err) {
			b.commitEach(ctx, pending) // nothing was written
			return
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(tx.actions) {
			b.notCancelled(ctx, pending, tx, err)
			return
		}
		reasons := tce.CancellationReasons
		if rest, decided := b.decideRecords(ctx, pending, tx, reasons); decided {
			pending = rest
			continue
		}
		if b.sharedConditionFailed(ctx, pending, reasons, err) {
			return
		}
		explained := explainTx(err, -1)
		if !retryableTx(explained) {
			b.unretryable(ctx, pending, explained)
			return
		}
		if conflicts++; conflicts < b.s.maxTxAttempts {
			if werr := batchBackoff(ctx, conflicts); werr != nil {
				b.fail(pending, fmt.Errorf("%w: %w", explained, werr))
				return
			}
			continue
		}
		rest, ok := b.spent(ctx, pending, reasons, explained)
		if !ok {
			return
		}
		pending, conflicts = rest, 0
	}
}

// prepare builds the transaction of the pending items: their shared
// writes and their records' claims. ok is false when the items are
// answered instead: shared failed, or the transaction is too large
// (halves are committed on their own, a single key fails).
func (b *batch) prepare(ctx context.Context, pending []int) (tx batchTx, ok bool) {
	contended := b.contended
	b.contended = nil
	writes, err := b.shared(slices.Clone(pending), contended)
	if err != nil {
		b.failWith(pending, OutcomeReleased, err)
		return batchTx{}, false
	}
	tx = batchTx{writes: writes, now: b.s.now()}
	tx.actions = make([]types.TransactWriteItem, 0, len(pending)+len(writes))
	tx.expires = tx.now
	for _, i := range pending {
		c := b.claims[i]
		put, exp := b.s.completedPut(ctx, c, b.items[i].Response, len(writes), tx.now)
		tx.actions = append(tx.actions, types.TransactWriteItem{Put: put})
		tx.expires = exp
	}
	tx.actions = append(tx.actions, writes...)
	if len(tx.actions) > maxTxActions || txSize(tx.actions) > maxTxBytes {
		if len(pending) == 1 {
			b.failWith(pending, OutcomeReleased, fmt.Errorf("%w: the key's record and %d shared writes exceed one transaction (%d actions, 4 MB)", ErrInvalidEffect, len(writes), maxTxActions))
			return batchTx{}, false
		}
		b.bisect(ctx, pending)
		return batchTx{}, false
	}
	return tx, true
}

// send sends tx, the attempt-th of the pending items, reported to the
// call's trace. A fresh input per attempt: the SDK gives each its own
// ClientRequestToken, which makes its retries of one attempt safe.
func (b *batch) send(ctx context.Context, pending []int, tx batchTx, attempt int) error {
	t := traceOf(ctx)
	if t.BatchTxStart != nil {
		ctx = start(ctx, t.BatchTxStart, idemtrace.BatchTxStartInfo{Items: slices.Clone(pending), Writes: len(tx.writes), Attempt: attempt})
	}
	_, err := b.s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx.actions})
	if t.BatchTxDone != nil {
		t.BatchTxDone(ctx, idemtrace.BatchTxDoneInfo{Reasons: txReasons(err), Err: err})
	}
	return err
}

// notCancelled answers the pending items of a transaction that failed
// with an error other than a cancellation, after the SDK's retries: it
// may have landed with every answer lost, and then it did for all. A
// refusal of the whole request (one item too large, a 5xx that one key's
// content provokes) names no key: halves find the ones it is about, and
// the others commit; throttling is about the table, and halves would
// only send more transactions into it.
func (b *batch) notCancelled(ctx context.Context, pending []int, tx batchTx, err error) {
	if c := b.claims[pending[0]]; b.s.landed(ctx, c.id, c.token) {
		b.executedAll(pending, tx.expires)
		return
	}
	err = fmt.Errorf("idem: batch transaction: %w", err)
	if len(pending) == 1 || ctx.Err() != nil || throttled(err) {
		b.fail(pending, err)
		return
	}
	b.bisect(ctx, pending)
}

// decideRecords reads a cancellation's reasons: the shared writes whose
// conflict cancelled it are noted for the next call of shared, and each
// pending item whose record's condition failed is decided by the record
// the reason carries. decided is true when any was; rest is then the
// items to commit again, at once, since they were only cancelled along.
func (b *batch) decideRecords(ctx context.Context, pending []int, tx batchTx, reasons []types.CancellationReason) (rest []int, decided bool) {
	for k := len(pending); k < len(reasons); k++ {
		if aws.ToString(reasons[k].Code) == "TransactionConflict" {
			b.contended = append(b.contended, tx.writes[k-len(pending)])
		}
	}
	rest = make([]int, 0, len(pending))
	for k, i := range pending {
		if aws.ToString(reasons[k].Code) != "ConditionalCheckFailed" {
			rest = append(rest, i)
			continue
		}
		decided = true
		if !b.decide(ctx, i, reasons[k].Item, tx.now) {
			rest = append(rest, i)
		}
	}
	return rest, decided
}

// sharedConditionFailed answers the pending items when a shared write's
// condition failed: only smaller sets of keys can tell whose writes
// cannot commit, so halves commit on their own, down to a single key,
// which gets ErrConditionFailed. It reports whether one had failed.
func (b *batch) sharedConditionFailed(ctx context.Context, pending []int, reasons []types.CancellationReason, err error) bool {
	for k := len(pending); k < len(reasons); k++ {
		if aws.ToString(reasons[k].Code) != "ConditionalCheckFailed" {
			continue
		}
		if len(pending) == 1 {
			b.failWith(pending, OutcomeReleased, &txError{
				Index: k, Code: "ConditionalCheckFailed", Message: aws.ToString(reasons[k].Message),
				Item: reasons[k].Item, write: -1, kind: ErrConditionFailed, err: err,
			})
			return true
		}
		b.bisect(ctx, pending)
		return true
	}
	return false
}

// unretryable answers the pending items of a transaction refused for a
// reason no retry can help (an item too large, a validation error):
// halves find the key it is about.
func (b *batch) unretryable(ctx context.Context, pending []int, explained error) {
	if len(pending) > 1 && errors.Is(explained, errTxRefused) {
		b.bisect(ctx, pending)
		return
	}
	b.fail(pending, explained)
}

// spent answers what it can once a transaction's attempts are spent: a
// key whose own record another transaction holds is being committed by
// a duplicate, in flight; rest gets a new round without it. When no
// key's record was contended, a shared write was (an aggregate other
// batches hold) or the table throttled: halves, each with its own shared
// writes and attempts, let the keys whose writes miss the contended item
// commit, so a key fails with a conflict only when a transaction of its
// own was cancelled on every attempt; throttling fails them together.
// ok is false when every item is answered or handed to halves.
func (b *batch) spent(ctx context.Context, pending []int, reasons []types.CancellationReason, explained error) (rest []int, ok bool) {
	for k, i := range pending {
		if aws.ToString(reasons[k].Code) == "TransactionConflict" {
			b.res[i] = BatchResult{Result{Outcome: OutcomeInFlight}, busy()}
			continue
		}
		rest = append(rest, i)
	}
	if len(rest) < len(pending) {
		return rest, true
	}
	if len(pending) > 1 && errors.Is(explained, errConflict) {
		b.bisect(ctx, pending)
		return nil, false
	}
	b.fail(pending, explained)
	return nil, false
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

// decide answers item i, whose claim lost its condition at now to item
// (the record in the cancellation reason, or read when the backend sent
// none), as the claim's decide says. It returns false when the item is
// to be claimed again.
func (b *batch) decide(ctx context.Context, i int, item map[string]types.AttributeValue, now time.Time) bool {
	c := b.claims[i]
	rec, found, err := b.s.current(ctx, c.id, item)
	if err != nil {
		b.res[i] = BatchResult{Result{Outcome: outcomeOf(err)}, err}
		return true
	}
	st, err := c.decide(met{rec: rec, found: found, at: now})
	switch st {
	case stepOwn:
		// An earlier attempt landed; the SDK's retry of it met our own
		// record (backends that ignore ClientRequestToken).
		b.executed(i, rec.ExpiresAt)
	case stepReplay:
		b.res[i] = BatchResult{Result: b.s.replay(c.id, c.fingerprint, rec)}
	case stepRefuse:
		b.res[i] = BatchResult{Result{Outcome: outcomeOf(err)}, err}
	default:
		busy := c.retry()
		if busy == nil {
			return false
		}
		b.res[i] = BatchResult{Result{Outcome: OutcomeInFlight}, busy}
	}
	return true
}

// executedAll records the items as committed by this call.
func (b *batch) executedAll(items []int, expires time.Time) {
	for _, i := range items {
		b.executed(i, expires)
	}
}

// executed records item i as committed by this call.
func (b *batch) executed(i int, expires time.Time) {
	it := b.items[i]
	b.s.remember(b.claims[i].id, it.Fingerprint, it.Response, expires)
	b.res[i] = BatchResult{Result: Result{Response: it.Response, Outcome: OutcomeExecuted}}
}

// fail answers the items with a store error.
func (b *batch) fail(items []int, err error) { b.failWith(items, failed(err, true, true), err) }

// failWith answers the items with outcome and err.
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

// commitEach commits the pending items one by one, on a table with
// multi-Region strong consistency, which has no transactions: each key
// is claimed (a duplicate is decided as any claim is, and answered at
// once, without a wait), then its Effect (its response, and the writes
// shared returns for it alone) commits as Execute's does there.
func (b *batch) commitEach(ctx context.Context, pending []int) {
	settings := b.s.settingsFor(ctx)
	settings.wait = 0
	ctx = withCall(ctx, Scope{}, false, traceOf(ctx), settings)
	for _, i := range pending {
		if err := ctx.Err(); err != nil {
			b.fail([]int{i}, fmt.Errorf("idem: batch: %w", err))
			continue
		}
		c := b.claims[i]
		res, err := b.s.claiming(c.fingerprint, func(ctx context.Context, id string, claim claimed) (Result, error) {
			writes, err := b.shared([]int{i}, nil)
			if err != nil {
				return b.s.abandon(ctx, claim.Lease, err, false)
			}
			eff := Effect{Response: b.items[i].Response, Writes: writes}
			if err := b.s.checkEffect(id, eff); err != nil {
				return b.s.abandon(ctx, claim.Lease, err, false)
			}
			return b.s.commitEffect(ctx, id, c.fingerprint, claim, eff)
		})(ctx, c.id)
		b.res[i] = BatchResult{res, err}
	}
}
