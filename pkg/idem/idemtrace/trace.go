// Package idemtrace reports what pkg/idem does inside each call, phase by
// phase, in the manner of net/http/httptrace: a Trace is a struct of
// optional hooks, and a store calls them as a call goes through its
// phases: how the key was claimed (won, taken over from a dead holder,
// replayed, in flight, key reuse, a conflict with a running
// transaction), each wait for a holder and its polls, the operation, the
// commit or completion and its retries, the release, a cache hit, and a
// batch's transactions with their cancellation reasons. Every way in
// reports through it (idem.Store.Execute, Transact, Run, idem.Do,
// ExecuteBatch, and so idemhttp, idemevent, idemsqs and idemstream),
// with no code of their own.
//
// Give a store a trace for all its calls with idem.WithTrace, or the
// calls made with one context with WithTrace; a nil hook costs nothing.
// pkg/idem/idemotel, a module of its own, maps a Trace to OpenTelemetry
// spans; pkg/idem depends on no tracing library.
//
// # Phases
//
// A phase is a pair of hooks: its Start hook may return a context, which
// the store uses for the phase (the DynamoDB requests it sends, and for
// the call and the effect, the operation's own function, so the spans of
// a tracing library nest), and hands to the phase's Done hook and to the
// events in between (ClaimAttempt, WaitPoll, Retry, CacheHit,
// BatchItem). The context it returns must be built on the one it was
// given (context.WithValue, trace.ContextWithSpan): the phase keeps that
// one's deadline, cancellation and values (the call's scope, its wait)
// only through it. A Start hook that returns nil leaves the context as
// it was. Each Start is followed by its Done, once, on the same goroutine;
// an operation that panics reports EffectDone and CallDone with Panicked
// set (ExecuteBatch's shared writes function: CallDone), and the panic
// goes on. The phases of each way in, in order:
//
//	Execute        Call( Claim( Wait* ) Effect Commit Release? )
//	Run, Do        Call( Claim( Wait* ) Effect Commit Release? )
//	Transact       Call( Effect Commit( Wait* ) )
//	ExecuteBatch   Call( BatchTx+ ) with a BatchItem per item
//
// On a table with multi-Region strong consistency, which has no
// transactions, Transact is Execute's Call( Claim Effect Commit ), a
// Commit applies its writes in an Intents phase after the completion
// (Commit( Intents )), a claim that meets a completion whose writes are
// not all applied applies them in one (Claim( Intents ), Recovery), and
// ExecuteBatch claims and commits each key in turn, with no BatchTx. A
// store's first call may report TableLearned.
//
// A cache hit answers in Call with no other phase. A claim's waits: a
// record in another request's running transaction (WaitTransaction) or,
// with idem.WithWait, a live holder (WaitHolder). A release (the
// operation or its commit failed) may come inside a Claim or a Wait too,
// where the claim's own write may have landed unseen. Transact and
// ExecuteBatch claim inside their transaction: Transact's commit reports
// a ClaimAttempt per transaction whose claim was decided.
//
// # Personal data
//
// Call, CacheHit and BatchItem infos carry the scope's ID, which holds
// the caller's principal and key: record a ScopeHasher's hash of it
// (idemotel does, given one), never the ID itself, nor a hash anyone can
// compute (a plain SHA-256 of a known principal and a guessable key is
// found in 10,000 tries). The operation ("POST /products") is not
// personal.
//
// The hooks run on the calling goroutine, in the call's path: they must
// not block, and concurrent calls call them concurrently.
package idemtrace

import (
	"context"
	"time"
)

// Trace is a set of hooks a store calls at each phase of a call. Any of
// them may be nil.
type Trace struct {
	// CallStart: a way in begins a call (for ExecuteBatch, a batch).
	CallStart func(ctx context.Context, info CallStartInfo) context.Context
	// CallDone: the call's answer and outcome: once per call, replays,
	// cache hits and rejections included (a batch's items: BatchItem).
	CallDone func(ctx context.Context, info CallDoneInfo)
	// CacheHit: the call (or a batch item) answered from the cache
	// (idem.WithCache), with no DynamoDB request.
	CacheHit func(ctx context.Context, info CacheHitInfo)

	// ClaimStart: Execute, Run or Do claims its key with a conditional
	// PutItem.
	ClaimStart func(ctx context.Context, info ClaimStartInfo) context.Context
	// ClaimAttempt: one conditional write of the key's record, and what
	// it met; in Transact, one per transaction whose claim was decided.
	ClaimAttempt func(ctx context.Context, info ClaimAttemptInfo)
	// ClaimDone: the claim's result.
	ClaimDone func(ctx context.Context, info ClaimDoneInfo)

	// WaitStart: the call follows the key's record with consistent reads.
	WaitStart func(ctx context.Context, info WaitStartInfo) context.Context
	// WaitPoll: one read of the record during a wait.
	WaitPoll func(ctx context.Context, info WaitPollInfo)
	// WaitDone: what the wait ended on.
	WaitDone func(ctx context.Context, info WaitDoneInfo)

	// EffectStart: the operation's function is called (Execute's and
	// Transact's fn, Run's and Do's fn, a handler under idemhttp).
	EffectStart func(ctx context.Context, info EffectStartInfo) context.Context
	// EffectDone: the operation's function returned, or panicked.
	EffectDone func(ctx context.Context, info EffectDoneInfo)

	// CommitStart: the effect's writes commit with the key's completion
	// (Execute), the transaction that claims and completes the key
	// (Transact), or the fenced completion of an effect outside DynamoDB
	// (Run, Do).
	CommitStart func(ctx context.Context, info CommitStartInfo) context.Context
	// CommitDone: the commit's end.
	CommitDone func(ctx context.Context, info CommitDoneInfo)

	// Retry: a write of the current phase (a commit, a completion, a
	// release) was refused for a reason a retry can fix (a transaction
	// conflict, throttling) and is tried again after a pause.
	Retry func(ctx context.Context, info RetryInfo)

	// ReleaseStart: the call deletes its claim, fenced, so that a retry
	// can run at once.
	ReleaseStart func(ctx context.Context, info ReleaseStartInfo) context.Context
	// ReleaseDone: the release's end.
	ReleaseDone func(ctx context.Context, info ReleaseDoneInfo)

	// BatchTxStart: ExecuteBatch sends one TransactWriteItems.
	BatchTxStart func(ctx context.Context, info BatchTxStartInfo) context.Context
	// BatchTxDone: what DynamoDB answered it.
	BatchTxDone func(ctx context.Context, info BatchTxDoneInfo)
	// BatchItem: one item's answer and outcome, once the batch is done,
	// in order.
	BatchItem func(ctx context.Context, info BatchItemInfo)

	// TableLearned reports what the store learned of its table's kind
	// (idem.Store.Learn), in the call that learned it: from DescribeTable
	// once per store, or from DynamoDB's refusal of a transaction on a
	// table with multi-Region strong consistency.
	TableLearned func(ctx context.Context, info TableLearnedInfo)
	// Intents is the phase, on a table with multi-Region strong
	// consistency, in which an effect's writes recorded with the key's
	// completion are applied one by one: by the holder that completed
	// the key, or by a later caller, or the sweeper, that found them not
	// yet applied.
	IntentsStart func(ctx context.Context, info IntentsStartInfo) context.Context
	IntentsDone  func(ctx context.Context, info IntentsDoneInfo)
	// DoubleExecution: a key ran in two Regions of a global table with
	// multi-Region eventual consistency: one Region's claim of it was
	// overwritten by another Region's, which had not seen it (last writer
	// wins, which DynamoDB does silently). A store's call never reports
	// it; pkg/idem/idemglobal's Detector does, from a Region's stream of
	// the idempotency table.
	DoubleExecution func(ctx context.Context, info DoubleExecutionInfo)
}

// Way names the way in a call came by.
type Way string

// The ways in. idemhttp's and idemevent's calls are Run's and Do's;
// idemsqs's and idemstream's are Run's and ExecuteBatch's.
const (
	WayExecute  Way = "execute"
	WayTransact Way = "transact"
	WayRun      Way = "run"
	WayDo       Way = "do"
	WayBatch    Way = "batch"
)

// CallStartInfo is a call about to begin.
type CallStartInfo struct {
	Way Way
	// Operation is the scope's operation; empty for a batch.
	Operation string
	// ScopeID is the scope's ID (idem.Scope.ID), as passed (not yet
	// checked); empty for a batch. It holds the principal and the key:
	// personal data.
	ScopeID string
	// Items is the number of a batch's items; 1 for the other ways.
	Items int
}

// CallDoneInfo is a call's answer: its outcome (an idem.Outcome) and
// error, for the metrics and logs of a call.
type CallDoneInfo struct {
	Way       Way
	Operation string
	ScopeID   string
	// Outcome is the call's (an idem.Outcome); empty for a batch, whose
	// items' are in BatchItem, and when the operation panicked.
	Outcome string
	// Err is the error the call returns.
	Err error
	// Panicked is true when the operation panicked: the panic goes on.
	Panicked bool
}

// CacheHitInfo is an answer from the cache.
type CacheHitInfo struct {
	Operation string
	ScopeID   string
	// Outcome is "replayed", or "key_reuse" for another payload.
	Outcome string
}

// ClaimResult is what one conditional write of a key's record met, or
// what a claim or a wait ended on.
type ClaimResult string

// The results of a claim.
const (
	// ClaimWon: the key was free (absent or expired), or held by an
	// earlier attempt of this same call: this call holds it.
	ClaimWon ClaimResult = "won"
	// ClaimTakeover: the key's holder had died (its lease ended with no
	// completion) and this call took the key over; HolderLeaseExpiresAt
	// is when the dead holder's lease ended. Only a conditional PutItem
	// on a backend that returns the replaced item (DynamoDB does) tells.
	ClaimTakeover ClaimResult = "takeover"
	// ClaimReplayed: the key was completed with the same payload.
	ClaimReplayed ClaimResult = "replayed"
	// ClaimInFlight: a live holder has the key (RetryAfter is the time
	// until its lease ends): the call answers idem.ErrInFlight (409), or
	// with a wait, follows the record.
	ClaimInFlight ClaimResult = "in_flight"
	// ClaimKeyReuse: the key was used with another payload.
	ClaimKeyReuse ClaimResult = "key_reuse"
	// ClaimConflict: the record is in another request's running
	// transaction (TransactionConflict): the call follows it with reads;
	// or, on a table with multi-Region strong consistency, another Region
	// is writing it (ReplicatedWriteConflictException): the call claims
	// again, then reads it.
	ClaimConflict ClaimResult = "conflict"
	// ClaimExpired: the record the write met has expired, or its holder
	// died (HolderLeaseExpiresAt): the key is claimed again.
	ClaimExpired ClaimResult = "expired"
	// ClaimGone: the record the write met was gone when read (released):
	// the key is claimed again.
	ClaimGone ClaimResult = "gone"
	// ClaimError: the write or read failed (Err).
	ClaimError ClaimResult = "error"
)

// ClaimStartInfo is a claim about to begin.
type ClaimStartInfo struct {
	// Wait is how long the call waits for a live holder's response (0:
	// it answers idem.ErrInFlight at once); see idem.WithWait.
	Wait time.Duration
}

// ClaimAttemptInfo is one conditional write of the key's record.
type ClaimAttemptInfo struct {
	// Attempt counts the call's writes of the record from 1.
	Attempt int
	Result  ClaimResult
	// HolderLeaseExpiresAt is when the lease of the holder the write met
	// ends (in flight) or ended (takeover, expired); zero otherwise.
	HolderLeaseExpiresAt time.Time
	// RetryAfter is, in flight, the time until that lease ends.
	RetryAfter time.Duration
	// Err is the write's error, for ClaimError and ClaimConflict.
	Err error
}

// ClaimDoneInfo is a claim's result.
type ClaimDoneInfo struct {
	// Result is ClaimWon, ClaimTakeover, ClaimReplayed, ClaimInFlight,
	// ClaimKeyReuse or ClaimError.
	Result ClaimResult
	// HolderLeaseExpiresAt: for a takeover, when the dead holder's lease
	// ended; zero otherwise.
	HolderLeaseExpiresAt time.Time
	// RetryAfter: in flight, the time until the holder's lease ends.
	RetryAfter time.Duration
	// Err is the claim's error: idem.ErrInFlight, idem.ErrKeyReuse, the
	// store's.
	Err error
}

// WaitReason says what a wait follows.
type WaitReason string

// The reasons to wait.
const (
	// WaitHolder: a live holder has the key, and the call waits for its
	// response (idem.WithWait, idem.CallWait, idemhttp.WithWait).
	WaitHolder WaitReason = "holder"
	// WaitTransaction: the record is in another request's running
	// transaction (its holder committing): the call follows it with
	// reads, which never conflict, a bounded number of times.
	WaitTransaction WaitReason = "transaction"
)

// WaitStartInfo is a wait about to begin.
type WaitStartInfo struct {
	Reason WaitReason
	// HolderLeaseExpiresAt is when the holder's lease ends, as last read
	// (WaitHolder); zero when unknown.
	HolderLeaseExpiresAt time.Time
	// Until is when a WaitHolder wait gives up: at the call's maximum
	// wait, or before its context's deadline. Zero for WaitTransaction,
	// which polls a bounded number of times (idem.WithConflictAttempts).
	Until time.Time
}

// WaitPollInfo is one read of the record during a wait.
type WaitPollInfo struct {
	// Poll counts the wait's reads from 1.
	Poll int
	// Result is what the read showed: ClaimInFlight (still held),
	// ClaimReplayed or ClaimKeyReuse (completed), ClaimGone, ClaimExpired
	// (the holder died), ClaimWon (this call's own earlier write),
	// ClaimError.
	Result ClaimResult
	Err    error
}

// WaitDoneInfo is what a wait ended on.
type WaitDoneInfo struct {
	// Polls is the number of reads made.
	Polls int
	// Result is the last read's, as WaitPollInfo's; ClaimInFlight when
	// the wait gave up (it ran out, or the holder died: the client's
	// retry takes the key over), ClaimError when a read failed.
	Result ClaimResult
	// RetryAfter is, in flight, the time until the holder's lease ends.
	RetryAfter time.Duration
	Err        error
}

// EffectStartInfo is the operation about to run.
type EffectStartInfo struct {
	// LeaseExpiresAt is when the call's lease on the key ends (renewed
	// while the operation runs, without a context deadline); zero for
	// Transact, which holds no lease.
	LeaseExpiresAt time.Time
}

// EffectDoneInfo is the operation's end.
type EffectDoneInfo struct {
	// Err is the function's error.
	Err error
	// Panicked is true when it panicked: the panic goes on.
	Panicked bool
}

// CommitStartInfo is a commit about to begin.
type CommitStartInfo struct {
	// Request is the DynamoDB request: "TransactWriteItems" (Execute,
	// Transact) or "UpdateItem" (Run, Do).
	Request string
	// Writes is the number of the effect's own writes in it.
	Writes int
	// Claims is true when the commit claims the key too (Transact).
	Claims bool
}

// CommitDoneInfo is a commit's end.
type CommitDoneInfo struct {
	// Err is the commit's error: nil when it landed (also when an
	// attempt whose answer was lost is found to have landed).
	Err error
}

// RetryInfo is a write refused, to be tried again.
type RetryInfo struct {
	// Attempt is the attempt that was refused, from 1.
	Attempt int
	// Reason is DynamoDB's: a transaction's cancellation reason code
	// ("TransactionConflict", "ThrottlingError"), or a single-item
	// write's error code ("TransactionConflictException", "ReplicatedWriteConflictException").
	Reason string
	// Index is the transaction item the reason is about, or -1.
	Index int
	Err   error
}

// ReleaseStartInfo is a release about to begin.
type ReleaseStartInfo struct {
	// LeaseExpiresAt is when the lease being released ends.
	LeaseExpiresAt time.Time
}

// ReleaseDoneInfo is a release's end.
type ReleaseDoneInfo struct {
	// Landed is true when the record turned out completed by this call
	// (a commit whose answer was lost had landed): nothing was released.
	Landed bool
	// Err wraps idem.ErrLeaseLost when there was nothing of this call's
	// to release (another holder's claim, a completed record).
	Err error
}

// BatchTxStartInfo is one of ExecuteBatch's transactions about to be sent.
type BatchTxStartInfo struct {
	// Items are the indexes, in the batch, of the items whose records it
	// claims, in the order of its first actions.
	Items []int
	// Writes is the number of shared writes after them.
	Writes int
	// Attempt counts the transactions sent for these items, from 1:
	// above 1, the one before was cancelled by a conflict or throttling.
	Attempt int
}

// BatchTxDoneInfo is what DynamoDB answered one of ExecuteBatch's
// transactions.
type BatchTxDoneInfo struct {
	// Reasons are DynamoDB's cancellation reason codes, one per action
	// ("None" for an action that did not fail; the items' records first,
	// then the shared writes), when the transaction was cancelled; nil
	// when it committed or failed otherwise.
	Reasons []string
	// Err is the transaction's error; nil when it committed.
	Err error
}

// BatchItemInfo is one batch item's answer.
type BatchItemInfo struct {
	// Index is the item's in the batch.
	Index     int
	Operation string
	ScopeID   string
	// Outcome is the item's (an idem.Outcome).
	Outcome string
	Err     error
}

// TableLearnedInfo is what a store learned of its table.
type TableLearnedInfo struct {
	// Kind is the table's kind (an idem.TableKind): "regional", "MREC",
	// "MRSC", or "" when it could not be learned.
	Kind string
	// From is how: "DescribeTable", or "refusal" (a transaction refused
	// by a table with multi-Region strong consistency).
	From string
	// Region is the store's Region (from the table's ARN); Replicas the
	// other Regions holding a replica; Witness the MRSC witness, if any.
	Region   string
	Replicas []string
	Witness  string
	// Err is why DescribeTable failed; the call goes on, as on a
	// regional table until the kind is known.
	Err error
}

// IntentsStartInfo is the application of a key's recorded writes about
// to begin.
type IntentsStartInfo struct {
	// Writes is how many writes are recorded.
	Writes int
	// Recovery is true when the call applying them is not the one that
	// completed the key: it found them not yet applied (the holder died,
	// or is still applying them).
	Recovery bool
}

// IntentsDoneInfo is the end of an application of recorded writes.
type IntentsDoneInfo struct {
	// Applied counts the writes this call applied; Already those it
	// found applied before (by an earlier attempt or another caller), or
	// whose item another writer replaced or deleted after the write's
	// stamp, which counts as the write applied just before.
	Applied, Already int
	// Err is why a write could not be applied: it stays recorded, to be
	// applied by the key's next caller or the sweeper.
	Err error
}

// DoubleExecutionInfo is a key that ran in two Regions, as one Region's
// stream showed it: the claim another Region's overwrote, and that one.
type DoubleExecutionInfo struct {
	// ID names the double execution: the same in the report of every
	// Region whose stream shows it (count it once).
	ID string
	// Region is the Region whose stream showed it.
	Region    string
	Operation string
	ScopeID   string
	// Overwritten is the claim that was overwritten, everywhere: last
	// writer wins kept Overwriting's in every Region.
	Overwritten, Overwriting Execution
	// At is when the stream recorded the overwrite (to the second).
	At time.Time
}

// Execution is one Region's claim of a key, and what it had answered by
// the time the stream recorded it.
type Execution struct {
	// Origin is the Region whose replica took the claim ("" when the
	// store that claimed it was told of no Region), Epoch its home's
	// epoch (0 without idem.WithHomes).
	Origin string
	Epoch  int64
	// Status is "COMPLETED" (ResponseStatus, Meta, Body and Omitted are
	// its answer, which its replays repeated) or "IN_PROGRESS" (its
	// holder had not completed: its answer is unknown; its completion, if
	// it ran, failed on the overwritten record).
	Status      string
	Fingerprint string
	// ResponseStatus, Meta, Body and Omitted are the answer's
	// idem.Response: its Status, Meta, Body and Omitted.
	ResponseStatus int
	Meta           map[string]string
	Body           []byte
	Omitted        string
	CreatedAt      time.Time
	CompletedAt    time.Time
}

type traceKey struct{}

// WithTrace returns ctx carrying t: the calls made with it report their
// phases to t as well as to their store's trace (idem.WithTrace). A
// trace ctx carries already is kept: t's hooks run before its Start and
// event hooks, and after its Done hooks.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	if t == nil {
		return ctx
	}
	if old := ContextTrace(ctx); old != nil {
		t = Compose(t, old)
	}
	return context.WithValue(ctx, traceKey{}, t)
}

// ContextTrace returns the trace WithTrace put in ctx, or nil.
func ContextTrace(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// Compose returns a trace whose hooks call a's, then b's: Start hooks in
// that order (b's gets the context a's returned), event hooks too, and
// Done hooks in the other order, so that b's phases nest in a's. A hook
// that returns a context should keep what it needs there under a key of
// its own, since the other may add to it.
func Compose(a, b *Trace) *Trace {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &Trace{
		CallStart:    chainStart(a.CallStart, b.CallStart),
		CallDone:     chainDone(a.CallDone, b.CallDone),
		CacheHit:     chainEvent(a.CacheHit, b.CacheHit),
		ClaimStart:   chainStart(a.ClaimStart, b.ClaimStart),
		ClaimAttempt: chainEvent(a.ClaimAttempt, b.ClaimAttempt),
		ClaimDone:    chainDone(a.ClaimDone, b.ClaimDone),
		WaitStart:    chainStart(a.WaitStart, b.WaitStart),
		WaitPoll:     chainEvent(a.WaitPoll, b.WaitPoll),
		WaitDone:     chainDone(a.WaitDone, b.WaitDone),
		EffectStart:  chainStart(a.EffectStart, b.EffectStart),
		EffectDone:   chainDone(a.EffectDone, b.EffectDone),
		CommitStart:  chainStart(a.CommitStart, b.CommitStart),
		CommitDone:   chainDone(a.CommitDone, b.CommitDone),
		Retry:        chainEvent(a.Retry, b.Retry),
		ReleaseStart: chainStart(a.ReleaseStart, b.ReleaseStart),
		ReleaseDone:  chainDone(a.ReleaseDone, b.ReleaseDone),
		BatchTxStart: chainStart(a.BatchTxStart, b.BatchTxStart),
		BatchTxDone:  chainDone(a.BatchTxDone, b.BatchTxDone),
		BatchItem:    chainEvent(a.BatchItem, b.BatchItem),
		TableLearned: chainEvent(a.TableLearned, b.TableLearned),
		IntentsStart: chainStart(a.IntentsStart, b.IntentsStart),
		IntentsDone:  chainDone(a.IntentsDone, b.IntentsDone),

		DoubleExecution: chainEvent(a.DoubleExecution, b.DoubleExecution),
	}
}

func chainStart[I any](a, b func(context.Context, I) context.Context) func(context.Context, I) context.Context {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, info I) context.Context {
		if got := a(ctx, info); got != nil {
			ctx = got
		}
		if got := b(ctx, info); got != nil {
			ctx = got
		}
		return ctx
	}
}

func chainEvent[I any](a, b func(context.Context, I)) func(context.Context, I) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, info I) {
		a(ctx, info)
		b(ctx, info)
	}
}

func chainDone[I any](a, b func(context.Context, I)) func(context.Context, I) {
	return chainEvent(b, a)
}
