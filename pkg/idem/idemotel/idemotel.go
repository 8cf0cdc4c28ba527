// Package idemotel records what pkg/idem does inside each call as
// OpenTelemetry spans: a span per call of a way in, a child span per
// phase (claim, wait, effect, commit, release, a batch's transactions),
// and span events for what an operator looks for in a slow or refused
// request: each claim attempt and what it met, a wait's polls, conflict
// retries, a 409 in flight, a takeover of a dead holder's key and when
// that holder's lease ended, a cache hit, a batch's cancellation reasons
// and each item's outcome.
//
// It is a module of its own, so that pkg/idem stays free of
// OpenTelemetry: pkg/idem reports through its trace hook
// (pkg/idem/idemtrace), and NewTrace maps the hook to spans:
//
//	store, err := idem.NewStore(db, table, idem.WithTrace(idemotel.NewTrace(otel.GetTracerProvider())))
//
// Every way in is traced, idemhttp, idemevent, idemsqs and idemstream
// included. The spans are children of the span in the call's context (a
// Lambda invocation's, an HTTP request's), and the operation's function
// runs with the effect span in its context, so its own spans (the
// DynamoDB client's, with otelaws) nest under it; the store's own
// DynamoDB requests run with their phase's span.
//
// # Spans and attributes
//
// The names below are stable: dashboards and alerts may use them.
//
//	span                    attributes
//	idem.execute,           idem.way, idem.mode, idem.operation, idem.scope_hash (with a hasher);
//	idem.transact,          at the end idem.outcome, and error.type when it failed
//	idem.run, idem.do
//	idem.batch              idem.way, idem.mode, idem.batch.items
//	idem.claim              idem.wait_ms; at the end idem.claim.result, idem.attempts,
//	                        idem.holder.lease_expires_at (a takeover), idem.retry_after_ms (in flight)
//	idem.wait               idem.wait.reason, idem.holder.lease_expires_at, idem.wait.until;
//	                        at the end idem.wait.result, idem.polls, idem.retry_after_ms
//	idem.effect             idem.lease_expires_at
//	idem.commit             idem.commit.request, idem.commit.writes, idem.commit.claims;
//	                        at the end idem.attempts
//	idem.release            at the end idem.release.landed
//	idem.batch.transaction  idem.batch.tx.items, idem.batch.tx.writes, idem.attempt
//	idem.intents            idem.intents.writes, idem.intents.recovery; at the end
//	                        idem.intents.applied, idem.intents.already (a table with
//	                        multi-Region strong consistency: a completion's writes applied)
//	idem.double_execution   idem.operation, idem.scope_hash (with a hasher), idem.region (the
//	                        stream's), idem.double_execution.id (the same in every Region's
//	                        report), idem.overwritten.origin, .epoch, .status and
//	                        idem.overwriting.origin, .epoch, .status: a key run in two Regions
//	                        of an MREC global table, as idemglobal.Detector reported it; a
//	                        child of the detector's context, status Error
//
//	event                   on           attributes
//	idem.cache_hit          the call     idem.outcome
//	idem.claim.attempt      the claim    idem.attempt, idem.claim.result, idem.holder.lease_expires_at,
//	                        (Transact:   idem.retry_after_ms
//	                        its commit)
//	idem.takeover           the claim    idem.holder.lease_expires_at: when the dead holder's lease ended
//	idem.in_flight          the call     idem.retry_after_ms: the 409's Retry-After
//	idem.wait.poll          the wait     idem.poll, idem.wait.result
//	idem.retry              the commit   idem.attempt, idem.reason (DynamoDB's, e.g. TransactionConflict),
//	                        or release   idem.tx.item_index
//	idem.batch.cancellation the batch    idem.reason, idem.tx.item_index, idem.batch.item_index (an
//	                        transaction  item's record; absent for a shared write)
//	idem.batch.item         the batch    idem.batch.item_index, idem.scope_hash, idem.outcome
//	idem.table_learned      the call     idem.table.kind, idem.table.from: what the store learned
//	                                     of its table on its first call
//
// idem.mode is "reserve" (Execute, Run, Do: a conditional PutItem claims
// the key first) or "transact" (Transact, ExecuteBatch: the claim is in
// the transaction). Times are RFC 3339 in UTC, durations whole
// milliseconds. docs/operations.md in the repository has the same table
// with each attribute's values.
//
// # Personal data
//
// An idempotency key and the principal it is scoped to may be personal
// data. The spans never carry them, nor the scope's ID. With
// WithScopeHasher, idem.scope_hash is a keyed hash of the scope's ID
// (idemtrace.ScopeHasher: HMAC-SHA-256 under a secret the operators
// hold), enough for them to find every span of one key from the key
// (idemctl lookup prints it) and the record of a span (idemctl find),
// and nothing to a reader without the key, who cannot even test a
// guess; without a hasher the spans carry no scope hash. Error
// messages are not recorded either (an operation's error may quote its
// request): a failed span has status Error, whose description is the
// outcome, and error.type, DynamoDB's error code or the kind of failure.
//
// A span's status is Error for a failure of the operation or the store
// (outcomes error, unavailable, lease_lost, not_recorded, released, and
// a panic); in flight, key reuse and rejected are the client's to fix
// and leave it unset, as a 4xx leaves a server span's.
package idemotel

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// TracerName is the name of the tracer the spans come from (what
// OpenTelemetry calls their instrumentation scope).
const TracerName = "github.com/idemlambda/idemlambda/pkg/idem/idemotel"

// The attribute keys of the spans and events (see the package doc).
const (
	AttrWay                  = attribute.Key("idem.way")
	AttrMode                 = attribute.Key("idem.mode")
	AttrOperation            = attribute.Key("idem.operation")
	AttrScopeHash            = attribute.Key("idem.scope_hash")
	AttrOutcome              = attribute.Key("idem.outcome")
	AttrErrorType            = attribute.Key("error.type")
	AttrBatchItems           = attribute.Key("idem.batch.items")
	AttrWaitMillis           = attribute.Key("idem.wait_ms")
	AttrClaimResult          = attribute.Key("idem.claim.result")
	AttrAttempt              = attribute.Key("idem.attempt")
	AttrAttempts             = attribute.Key("idem.attempts")
	AttrHolderLeaseExpiresAt = attribute.Key("idem.holder.lease_expires_at")
	AttrRetryAfterMillis     = attribute.Key("idem.retry_after_ms")
	AttrWaitReason           = attribute.Key("idem.wait.reason")
	AttrWaitUntil            = attribute.Key("idem.wait.until")
	AttrWaitResult           = attribute.Key("idem.wait.result")
	AttrPoll                 = attribute.Key("idem.poll")
	AttrPolls                = attribute.Key("idem.polls")
	AttrLeaseExpiresAt       = attribute.Key("idem.lease_expires_at")
	AttrCommitRequest        = attribute.Key("idem.commit.request")
	AttrCommitWrites         = attribute.Key("idem.commit.writes")
	AttrCommitClaims         = attribute.Key("idem.commit.claims")
	AttrReason               = attribute.Key("idem.reason")
	AttrTxItemIndex          = attribute.Key("idem.tx.item_index")
	AttrReleaseLanded        = attribute.Key("idem.release.landed")
	AttrBatchTxItems         = attribute.Key("idem.batch.tx.items")
	AttrBatchTxWrites        = attribute.Key("idem.batch.tx.writes")
	AttrBatchItemIndex       = attribute.Key("idem.batch.item_index")
	AttrIntentsWrites        = attribute.Key("idem.intents.writes")
	AttrIntentsRecovery      = attribute.Key("idem.intents.recovery")
	AttrIntentsApplied       = attribute.Key("idem.intents.applied")
	AttrIntentsAlready       = attribute.Key("idem.intents.already")
	AttrTableKind            = attribute.Key("idem.table.kind")
	AttrTableFrom            = attribute.Key("idem.table.from")
	AttrRegion               = attribute.Key("idem.region")
	AttrDoubleID             = attribute.Key("idem.double_execution.id")
	AttrOverwrittenOrigin    = attribute.Key("idem.overwritten.origin")
	AttrOverwrittenEpoch     = attribute.Key("idem.overwritten.epoch")
	AttrOverwrittenStatus    = attribute.Key("idem.overwritten.status")
	AttrOverwritingOrigin    = attribute.Key("idem.overwriting.origin")
	AttrOverwritingEpoch     = attribute.Key("idem.overwriting.epoch")
	AttrOverwritingStatus    = attribute.Key("idem.overwriting.status")
)

// The values of AttrMode.
const modeReserve, modeTransact = "reserve", "transact"

// Option configures NewTrace.
type Option func(*recorder)

// WithScopeHasher records idem.scope_hash, h's hash of the scope's ID, on
// each call span, cache hit and batch item, so an operator who holds h's
// key finds the spans of a key and the record of a span (idemctl lookup
// and find). Without it the spans carry no scope hash: a hash anyone can
// compute gives a guessable key back.
func WithScopeHasher(h *idemtrace.ScopeHasher) Option {
	return func(r *recorder) { r.hasher = h }
}

// NewTrace returns a trace (for idem.WithTrace, or idemtrace.WithTrace
// for the calls made with one context) that records each call as spans
// of a tracer from tp, named TracerName. A nil tp is the global
// provider's (otel.GetTracerProvider), looked up at each span. A no-op
// provider (go.opentelemetry.io/otel/trace/noop) gets a trace of nil
// hooks, which costs nothing: its spans would record nothing.
func NewTrace(tp trace.TracerProvider, opts ...Option) *idemtrace.Trace {
	if _, ok := tp.(noop.TracerProvider); ok {
		return &idemtrace.Trace{}
	}
	r := &recorder{}
	for _, o := range opts {
		o(r)
	}
	if tp != nil {
		r.tracer = tp.Tracer(TracerName)
	}
	return &idemtrace.Trace{
		CallStart:    r.callStart,
		CallDone:     r.callDone,
		CacheHit:     r.cacheHit,
		ClaimStart:   r.claimStart,
		ClaimAttempt: r.claimAttempt,
		ClaimDone:    r.claimDone,
		WaitStart:    r.waitStart,
		WaitPoll:     r.waitPoll,
		WaitDone:     r.waitDone,
		EffectStart:  r.effectStart,
		EffectDone:   r.effectDone,
		CommitStart:  r.commitStart,
		CommitDone:   r.commitDone,
		Retry:        r.retry,
		ReleaseStart: r.releaseStart,
		ReleaseDone:  r.releaseDone,
		BatchTxStart: r.batchTxStart,
		BatchTxDone:  r.batchTxDone,
		BatchItem:    r.batchItem,
		TableLearned: r.tableLearned,
		IntentsStart: r.intentsStart,
		IntentsDone:  r.intentsDone,

		DoubleExecution: r.doubleExecution,
	}
}
