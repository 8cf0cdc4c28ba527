package idemconform

import (
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// fault is one cell's failure: armed at the start, cleared before the
// final deliveries.
type fault struct {
	name string
	// skip says why the fault cannot apply to a way in ("" when it does).
	skip func(*Way) string
	// arm sets the fault up in a world whose workload has n scopes.
	arm func(w *world, n int)
	// emptyPrincipal: the workload has callers whose principal function
	// names nobody.
	emptyPrincipal bool
	// notRecorded: the store refuses a completion for a whole lease, the
	// one fault after which an effect may be reported not recorded
	// (idem.OutcomeNotRecorded); elsewhere Run must record it.
	notRecorded bool
	// refusal: the store refuses transactions for good (ValidationError):
	// the one fault, beside the workload's deliberate failure, whose
	// answer is a definitive failure.
	refusal bool
}

// Reasons a fault does not apply.
const (
	oneTransaction = "the effect commits with its completion in one transaction: no process stops between them"
	refusedCommit  = "the effect commits with its completion in one transaction: a refused completion wrote nothing, and is retried a bounded number of times (completion-throttled)"
	noTransaction  = "its writes are single-item requests: there is no transaction to cancel"
	noLeaseHeld    = "no lease is held while the operation runs (the claim is its commit): nothing to renew"
	alwaysDeadline = "a Lambda invocation always has a deadline: its lease ends at the deadline plus the margin, and nothing renews it"
)

func always(*Way) string { return "" }

var faults = []*fault{
	{name: "none", skip: always, arm: func(*world, int) {}},
	{
		name: "crash-before-effect", skip: always,
		arm: func(w *world, n int) { w.crashBefore.Store(int64(n / 2)) },
	},
	{
		name: "crash-after-effect",
		skip: func(wy *Way) string {
			if wy.Effect == Writes {
				return oneTransaction
			}
			return ""
		},
		arm: func(w *world, n int) { w.crashAfter.Store(int64(n / 2)) },
	},
	{
		name: "crash-after-completion", skip: always,
		arm: func(w *world, n int) { w.crashCompleted.Store(int64(n / 2)) },
	},
	{
		// Every attempt of the SDK's call is throttled, so it gives up:
		// Run's fenced UpdateItem, or the commit's TransactWriteItems.
		name: "completion-throttled", skip: always,
		arm: func(w *world, n int) {
			op := idemtest.OpUpdateItem
			if w.cell.way.Effect == Writes {
				op = idemtest.OpTransactWriteItems
			}
			w.server.Inject(op, idemtest.ThrottledPastRetries, n/2)
		},
	},
	{
		// The completion of each key's first execution is refused on
		// every attempt (throttled past the SDK's retries) for as long as
		// its lease lasts: Run gives up by the lease's end less the
		// margin, and its source must be told the delivery is done (the
		// effect ran): the effect's answer, never an error. Only after
		// the lease may another delivery run it again: Run's window.
		name: "completion-refused", notRecorded: true,
		skip: func(wy *Way) string {
			if wy.Effect == Writes {
				return refusedCommit
			}
			return ""
		},
		arm: func(w *world, n int) { w.refuseFirst.Store(true) },
	},
	{
		// The write lands and its answer is lost: the SDK retries it.
		name: "lost-answer", skip: always,
		arm: func(w *world, n int) {
			for _, op := range []idemtest.Op{idemtest.OpPutItem, idemtest.OpUpdateItem, idemtest.OpDeleteItem, idemtest.OpTransactWriteItems} {
				w.server.Inject(op, idemtest.LostAnswer, n/2)
			}
		},
	},
	{
		// Transactions that hold their items long enough for real
		// conflicts, and a storm of injected ones on every write.
		name: "conflict-storm", skip: always,
		arm: func(w *world, n int) {
			w.server.SetTransactionLatency(20 * time.Millisecond)
			w.server.InjectCancellation("TransactionConflict", 0, 2*n)
			w.server.Inject(idemtest.OpPutItem, idemtest.Conflict, n)
			w.server.Inject(idemtest.OpUpdateItem, idemtest.Conflict, n/2)
			w.server.Inject(idemtest.OpDeleteItem, idemtest.Conflict, n/2)
		},
	},
	{
		// No deadline (a net/http server): each renewal's request takes
		// half a lease to reach the store, longer than the renewal waits
		// (a third of a lease), while the first execution of each key
		// outlives its lease (7.5 s: past the lease and margin, 7 s, and
		// before a renewal started at its end would give up, 8 s).
		name: "renewal-slow", skip: renewable,
		arm: func(w *world, n int) {
			w.noDeadline = true
			w.renewalDelay.Store(int64(noDeadlineLease / 2))
			w.slowFirst.Store(int64(noDeadlineLease + leaseMargin + leaseMargin/2))
		},
	},
	{
		// No deadline: every renewal is throttled past the SDK's retries.
		name: "renewal-fails", skip: renewable,
		arm: func(w *world, n int) {
			w.noDeadline = true
			w.renewalFails.Store(true)
			w.slowFirst.Store(int64(noDeadlineLease + leaseMargin + leaseMargin/2))
		},
	},
	{
		// The first execution of each key outlives its lease: a Lambda
		// invocation times out (and its environment is stopped); a
		// net/http holder is kept alive by its heartbeat.
		name: "lease-ends-mid-effect", skip: always,
		arm: func(w *world, n int) {
			d := invocationTimeout + 2*time.Second
			if w.cell.way.Deadline == DeadlineNone {
				d = 2*noDeadlineLease + noDeadlineLease/2
			}
			w.slowFirst.Store(int64(d))
		},
	},
	{
		// Transactions cancelled with ThrottlingError, on the record and
		// on the effect's write.
		name: "tx-cancelled-throttling", skip: transactional,
		arm: func(w *world, n int) {
			w.server.InjectCancellation("ThrottlingError", 0, n)
			w.server.InjectCancellation("ThrottlingError", 1, n)
		},
	},
	{
		// Transactions cancelled with ValidationError: refused for good.
		// A batch splits a refused transaction of several keys to find
		// the key it is about: enough refusals that some fall on one
		// key's own transaction.
		name: "tx-cancelled-validation", skip: transactional, refusal: true,
		arm: func(w *world, n int) {
			times := n / 2
			if w.cell.way.Source == Queue {
				times = n
			}
			w.server.InjectCancellation("ValidationError", 1, times)
		},
	},
	{
		// Callers whose principal function names nobody (""): they must
		// be refused, never put in one shared scope.
		name: "empty-principal", skip: always, emptyPrincipal: true,
		arm: func(*world, int) {},
	},
}

func renewable(wy *Way) string {
	switch {
	case !leaseWhileRunning(wy):
		return noLeaseHeld
	case !canRunWithoutDeadline(wy):
		return alwaysDeadline
	}
	return ""
}

func transactional(wy *Way) string {
	if wy.Effect != Writes {
		return noTransaction
	}
	return ""
}
