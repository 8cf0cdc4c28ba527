package idemotel

import (
	"context"
	"errors"
	"time"

	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// recorder maps the hooks to spans. It keeps nothing of a call: each
// phase's span and counts travel in the phase's context.
type recorder struct {
	tracer trace.Tracer // nil: the global provider's
	// hasher hashes the scope's ID for idem.scope_hash; nil records none.
	hasher *idemtrace.ScopeHasher
}

// scopeHash is the idem.scope_hash attribute of the scope whose ID is
// id, appended to attrs; none without a hasher.
func (r *recorder) scopeHash(attrs []attribute.KeyValue, id string) []attribute.KeyValue {
	if r.hasher == nil {
		return attrs
	}
	return append(attrs, AttrScopeHash.String(r.hasher.Hash(id)))
}

// phase is one span of a call, in its context (phaseCtx), under the
// hooks' own key, so a trace composed with this one (idemtrace.Compose)
// cannot make them end another's span.
type phase struct {
	span trace.Span
	// What the span's end reports: attempts seen (claim attempts,
	// retries), and a batch transaction's items.
	claims, retries int
	items           []int
}

type phaseKey struct{}

// phaseCtx is a phase's context: the span's, answering phaseKey with the
// phase (one allocation for both).
type phaseCtx struct {
	context.Context
	phase phase
}

func (c *phaseCtx) Value(key any) any {
	if key == (phaseKey{}) {
		return &c.phase
	}
	return c.Context.Value(key)
}

func (r *recorder) begin(ctx context.Context, name string, attrs ...attribute.KeyValue) context.Context {
	tracer := r.tracer
	if tracer == nil {
		tracer = otel.GetTracerProvider().Tracer(TracerName)
	}
	ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return &phaseCtx{Context: ctx, phase: phase{span: span}}
}

// current is the innermost phase of ctx; nil outside one (a hook called
// without its Start, which a store never does).
func current(ctx context.Context) *phase {
	p, _ := ctx.Value(phaseKey{}).(*phase)
	return p
}

// recording is ctx's phase when its span records; nil when it does not
// (sampled out, or a no-op provider), so that nothing is computed for it.
func recording(ctx context.Context) *phase {
	if p := current(ctx); p != nil && p.span.IsRecording() {
		return p
	}
	return nil
}

// end ends ctx's phase, setting attrs first.
func end(ctx context.Context, attrs ...attribute.KeyValue) {
	p := current(ctx)
	if p == nil {
		return
	}
	if len(attrs) > 0 && p.span.IsRecording() {
		p.span.SetAttributes(attrs...)
	}
	p.span.End()
}

// fail marks p's span failed with the outcome or phase result why, and
// err's kind.
func fail(p *phase, why string, err error) {
	p.span.SetStatus(codes.Error, why)
	p.span.SetAttributes(AttrErrorType.String(errorType(err)))
}

// errorType is error.type for err: DynamoDB's error code, or the kind of
// failure; never the message, which may quote the request.
func errorType(err error) string {
	var apiErr smithy.APIError
	switch {
	case err == nil:
		return "_OTHER"
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode()
	case errors.Is(err, context.DeadlineExceeded):
		return "context_deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "context_canceled"
	case errors.Is(err, idem.ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, idem.ErrNotRecorded):
		return "not_recorded"
	case errors.Is(err, idem.ErrConditionFailed):
		return "condition_failed"
	case errors.Is(err, idem.ErrResponseTooLarge):
		return "response_too_large"
	case errors.Is(err, idem.ErrInvalidEffect):
		return "invalid_effect"
	case idem.IsUnavailable(err):
		return "unavailable"
	}
	return "_OTHER"
}

// failedOutcome reports whether a call with outcome failed on the
// operation's or the store's side (span status Error); in flight, key
// reuse and rejected are the client's.
func failedOutcome(outcome idem.Outcome) bool {
	switch outcome {
	case idem.OutcomeError, idem.OutcomeUnavailable, idem.OutcomeLeaseLost, idem.OutcomeNotRecorded, idem.OutcomeReleased:
		return true
	}
	return false
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func millis(d time.Duration) int64 { return d.Milliseconds() }

func modeOf(way idemtrace.Way) string {
	if way == idemtrace.WayTransact || way == idemtrace.WayBatch {
		return modeTransact
	}
	return modeReserve
}

func (r *recorder) callStart(ctx context.Context, i idemtrace.CallStartInfo) context.Context {
	attrs := []attribute.KeyValue{AttrWay.String(string(i.Way)), AttrMode.String(modeOf(i.Way))}
	if i.Way == idemtrace.WayBatch {
		attrs = append(attrs, AttrBatchItems.Int(i.Items))
	} else {
		attrs = r.scopeHash(append(attrs, AttrOperation.String(i.Operation)), i.ScopeID)
	}
	return r.begin(ctx, "idem."+string(i.Way), attrs...)
}

func (r *recorder) callDone(ctx context.Context, i idemtrace.CallDoneInfo) {
	if p := recording(ctx); p != nil {
		outcome := idem.Outcome(i.Outcome)
		switch {
		case i.Panicked:
			fail(p, "panic", nil)
		case outcome != "":
			p.span.SetAttributes(AttrOutcome.String(i.Outcome))
			if failedOutcome(outcome) {
				fail(p, i.Outcome, i.Err)
			}
		case i.Err != nil: // a batch that could not run
			fail(p, "error", i.Err)
		}
		var inflight *idem.InFlightError
		if errors.As(i.Err, &inflight) {
			p.span.AddEvent("idem.in_flight", trace.WithAttributes(AttrRetryAfterMillis.Int64(millis(inflight.RetryAfter))))
		}
	}
	end(ctx)
}

func (r *recorder) cacheHit(ctx context.Context, i idemtrace.CacheHitInfo) {
	if p := recording(ctx); p != nil {
		p.span.AddEvent("idem.cache_hit", trace.WithAttributes(r.scopeHash([]attribute.KeyValue{AttrOutcome.String(i.Outcome)}, i.ScopeID)...))
	}
}

func (r *recorder) claimStart(ctx context.Context, i idemtrace.ClaimStartInfo) context.Context {
	return r.begin(ctx, "idem.claim", AttrWaitMillis.Int64(millis(i.Wait)))
}

func (r *recorder) claimAttempt(ctx context.Context, i idemtrace.ClaimAttemptInfo) {
	p := current(ctx)
	if p == nil {
		return
	}
	p.claims++
	if !p.span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{AttrAttempt.Int(i.Attempt), AttrClaimResult.String(string(i.Result))}
	if !i.HolderLeaseExpiresAt.IsZero() {
		attrs = append(attrs, AttrHolderLeaseExpiresAt.String(stamp(i.HolderLeaseExpiresAt)))
	}
	if i.RetryAfter > 0 {
		attrs = append(attrs, AttrRetryAfterMillis.Int64(millis(i.RetryAfter)))
	}
	p.span.AddEvent("idem.claim.attempt", trace.WithAttributes(attrs...))
}

func (r *recorder) claimDone(ctx context.Context, i idemtrace.ClaimDoneInfo) {
	if p := recording(ctx); p != nil {
		p.span.SetAttributes(AttrClaimResult.String(string(i.Result)), AttrAttempts.Int(p.claims))
		if i.Result == idemtrace.ClaimTakeover {
			at := AttrHolderLeaseExpiresAt.String(stamp(i.HolderLeaseExpiresAt))
			p.span.SetAttributes(at)
			p.span.AddEvent("idem.takeover", trace.WithAttributes(at))
		}
		if i.RetryAfter > 0 {
			p.span.SetAttributes(AttrRetryAfterMillis.Int64(millis(i.RetryAfter)))
		}
		if i.Result == idemtrace.ClaimError {
			fail(p, string(i.Result), i.Err)
		}
	}
	end(ctx)
}

func (r *recorder) waitStart(ctx context.Context, i idemtrace.WaitStartInfo) context.Context {
	attrs := []attribute.KeyValue{AttrWaitReason.String(string(i.Reason))}
	if !i.HolderLeaseExpiresAt.IsZero() {
		attrs = append(attrs, AttrHolderLeaseExpiresAt.String(stamp(i.HolderLeaseExpiresAt)))
	}
	if !i.Until.IsZero() {
		attrs = append(attrs, AttrWaitUntil.String(stamp(i.Until)))
	}
	return r.begin(ctx, "idem.wait", attrs...)
}

func (r *recorder) waitPoll(ctx context.Context, i idemtrace.WaitPollInfo) {
	if p := recording(ctx); p != nil {
		p.span.AddEvent("idem.wait.poll", trace.WithAttributes(AttrPoll.Int(i.Poll), AttrWaitResult.String(string(i.Result))))
	}
}

func (r *recorder) waitDone(ctx context.Context, i idemtrace.WaitDoneInfo) {
	if p := recording(ctx); p != nil {
		p.span.SetAttributes(AttrWaitResult.String(string(i.Result)), AttrPolls.Int(i.Polls))
		if i.RetryAfter > 0 {
			p.span.SetAttributes(AttrRetryAfterMillis.Int64(millis(i.RetryAfter)))
		}
		if i.Result == idemtrace.ClaimError {
			fail(p, string(i.Result), i.Err)
		}
	}
	end(ctx)
}

func (r *recorder) effectStart(ctx context.Context, i idemtrace.EffectStartInfo) context.Context {
	if i.LeaseExpiresAt.IsZero() {
		return r.begin(ctx, "idem.effect")
	}
	return r.begin(ctx, "idem.effect", AttrLeaseExpiresAt.String(stamp(i.LeaseExpiresAt)))
}

func (r *recorder) effectDone(ctx context.Context, i idemtrace.EffectDoneInfo) {
	if p := recording(ctx); p != nil {
		switch {
		case i.Panicked:
			fail(p, "panic", nil)
		case i.Err != nil:
			fail(p, "error", i.Err)
		}
	}
	end(ctx)
}

func (r *recorder) commitStart(ctx context.Context, i idemtrace.CommitStartInfo) context.Context {
	return r.begin(ctx, "idem.commit", AttrCommitRequest.String(i.Request), AttrCommitWrites.Int(i.Writes), AttrCommitClaims.Bool(i.Claims))
}

func (r *recorder) commitDone(ctx context.Context, i idemtrace.CommitDoneInfo) {
	if p := recording(ctx); p != nil {
		p.span.SetAttributes(AttrAttempts.Int(p.retries + max(p.claims, 1)))
		if i.Err != nil {
			fail(p, "error", i.Err)
		}
	}
	end(ctx)
}

func (r *recorder) retry(ctx context.Context, i idemtrace.RetryInfo) {
	p := current(ctx)
	if p == nil {
		return
	}
	p.retries++
	if p.span.IsRecording() {
		p.span.AddEvent("idem.retry", trace.WithAttributes(AttrAttempt.Int(i.Attempt), AttrReason.String(i.Reason), AttrTxItemIndex.Int(i.Index)))
	}
}

func (r *recorder) releaseStart(ctx context.Context, _ idemtrace.ReleaseStartInfo) context.Context {
	return r.begin(ctx, "idem.release")
}

func (r *recorder) releaseDone(ctx context.Context, i idemtrace.ReleaseDoneInfo) {
	if p := recording(ctx); p != nil {
		p.span.SetAttributes(AttrReleaseLanded.Bool(i.Landed))
		if i.Err != nil && !errors.Is(i.Err, idem.ErrLeaseLost) {
			fail(p, "error", i.Err)
		}
	}
	end(ctx)
}

func (r *recorder) intentsStart(ctx context.Context, i idemtrace.IntentsStartInfo) context.Context {
	return r.begin(ctx, "idem.intents", AttrIntentsWrites.Int(i.Writes), AttrIntentsRecovery.Bool(i.Recovery))
}

func (r *recorder) intentsDone(ctx context.Context, i idemtrace.IntentsDoneInfo) {
	if p := recording(ctx); p != nil {
		p.span.SetAttributes(AttrIntentsApplied.Int(i.Applied), AttrIntentsAlready.Int(i.Already))
		if i.Err != nil {
			fail(p, "error", i.Err)
		}
	}
	end(ctx)
}

func (r *recorder) tableLearned(ctx context.Context, i idemtrace.TableLearnedInfo) {
	if p := recording(ctx); p != nil {
		p.span.AddEvent("idem.table_learned", trace.WithAttributes(AttrTableKind.String(i.Kind), AttrTableFrom.String(i.From)))
	}
}

// doubleExecution is a span of its own, under the detector's context
// (its Lambda invocation's span): a key run in two Regions is a failure
// of exactly once, which no call span holds. Neither execution's answer
// is recorded (it may quote its request), nor its fingerprint (a hash
// of the payload anyone can compute).
func (r *recorder) doubleExecution(ctx context.Context, i idemtrace.DoubleExecutionInfo) {
	attrs := r.scopeHash([]attribute.KeyValue{
		AttrOperation.String(i.Operation), AttrRegion.String(i.Region), AttrDoubleID.String(i.ID),
		AttrOverwrittenOrigin.String(i.Overwritten.Origin), AttrOverwrittenEpoch.Int64(i.Overwritten.Epoch),
		AttrOverwrittenStatus.String(i.Overwritten.Status),
		AttrOverwritingOrigin.String(i.Overwriting.Origin), AttrOverwritingEpoch.Int64(i.Overwriting.Epoch),
		AttrOverwritingStatus.String(i.Overwriting.Status),
	}, i.ScopeID)
	ctx = r.begin(ctx, "idem.double_execution", attrs...)
	if p := recording(ctx); p != nil {
		p.span.SetStatus(codes.Error, "double_execution")
	}
	end(ctx)
}

func (r *recorder) batchTxStart(ctx context.Context, i idemtrace.BatchTxStartInfo) context.Context {
	ctx = r.begin(ctx, spanBatchTx, AttrBatchTxItems.IntSlice(i.Items), AttrBatchTxWrites.Int(i.Writes), AttrAttempt.Int(i.Attempt))
	current(ctx).items = i.Items
	return ctx
}

const spanBatchTx = "idem.batch.transaction"

func (r *recorder) batchTxDone(ctx context.Context, i idemtrace.BatchTxDoneInfo) {
	if p := recording(ctx); p != nil {
		for k, reason := range i.Reasons {
			if reason == "" || reason == "None" {
				continue
			}
			attrs := []attribute.KeyValue{AttrReason.String(reason), AttrTxItemIndex.Int(k)}
			if k < len(p.items) {
				attrs = append(attrs, AttrBatchItemIndex.Int(p.items[k]))
			}
			p.span.AddEvent("idem.batch.cancellation", trace.WithAttributes(attrs...))
		}
		if i.Err != nil && i.Reasons == nil {
			fail(p, "error", i.Err)
		}
	}
	end(ctx)
}

func (r *recorder) batchItem(ctx context.Context, i idemtrace.BatchItemInfo) {
	if p := recording(ctx); p != nil {
		p.span.AddEvent("idem.batch.item", trace.WithAttributes(r.scopeHash([]attribute.KeyValue{
			AttrBatchItemIndex.Int(i.Index), AttrOutcome.String(i.Outcome)}, i.ScopeID)...))
	}
}
