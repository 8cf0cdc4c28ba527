// Package idemconform is pkg/idem's conformance suite as a harness: one
// set of scenarios that every way into the library passes, under the same
// faults, with the same checks, and that a way written outside the
// library (an AppSync resolver, a Step Functions task, a gRPC
// interceptor) passes too. It is a module of its own, so that porcupine
// (the linearizability checker) never enters the library's module graph;
// import it from tests only.
//
// A way describes itself (Way: its Source, its Effect, its Deadline) and
// delivers requests (Way.Deliver): it hands each Request to its adapter
// as its source would (an HTTP request, an SQS batch, an event), using the
// Invocation's store, runs the Invocation's effect as its operation, and
// returns what the source saw of each request as an Answer (FromCall,
// FromHTTP, FromRecord, or one of its own). Then, from any test:
//
//	func TestConformance(t *testing.T) {
//		idemconform.Run(t, idemconform.Way{Name: "appsync.Resolver", Source: idemconform.Requests, Deliver: deliver})
//	}
//
// runs it under every fault and prints its table; a Table runs several
// ways into one table. The library's own ways run through this same
// interface (this module's tests).
//
// # What a cell is
//
// A cell is one way under one fault, on one table layout (default,
// single-table, prefix) in one mode (plain, wait, cache): every fault on
// the default layout in the plain mode, and every layout and mode under
// crash-before-effect, crash-after-completion and conflict-storm. Each
// cell runs in its own testing/synctest bubble: the strict store
// (idemtest.NewServer, served in-process), the simulated Lambda
// environments, the event sources and the faults all live in fake time,
// so leases, margins, heartbeats, waits, redelivery delays and takeovers
// happen to the millisecond without sleeping.
//
// A cell's workload is N keys for a few callers, each delivered by M
// concurrent duplicates, plus a key reused with another payload, a key
// whose first execution fails on purpose (ErrDeclined), and (for queues
// and streams) a poison message. Deliveries go through the way's Source:
//
//   - Requests: callers or HTTP clients retry the same key with backoff,
//     honouring RetryAfter, on 409, 503, a lost answer or a crash, until a
//     definitive answer or a bounded number of attempts;
//   - Queue: an SQS queue redelivers every message not acknowledged (a
//     batch item failure, or every message of an invocation that crashed)
//     after the visibility timeout, until it is acknowledged or received 5
//     times (then it is dead-lettered), and delivers some messages to two
//     consumers at once;
//   - Stream: shards read in order, retried from the record an answer
//     names;
//   - Async: asynchronous invocations are retried twice on error.
//
// Each invocation runs in an environment: a client and an idem.Store of
// its own (its own cache), one invocation at a time, with the Lambda
// deadline on its context (an invocation still running at its deadline
// stops its environment, as Lambda does). A crash cuts the environment
// off (every later request fails with a connection error; nothing more
// reaches the store), abandons its invocation (its output is unknown) and
// a fresh environment replaces it, as a cold start does.
//
// The faults (faults.go): the process stops before the effect, after
// the effect and before its completion, after the completion and before
// the answer; the completion throttled past the SDK's retries; the
// completion of each key's first execution refused for its whole lease
// (effects outside DynamoDB); answers
// lost after their writes landed; conflict storms; renewals slow or
// failing without a deadline; the lease ending mid-effect; transactions
// cancelled with ThrottlingError or ValidationError; callers whose
// principal function names nobody. Those that the store serves are the
// strict store's own (Inject, InjectCancellation); those that hit one
// kind of request only (a renewal, a completion) or a process (a crash)
// are in the environment's network (network.go). A fault that cannot
// apply to a way is skipped, with the reason.
//
// # Checks
//
// Every delivery is recorded as an operation (its call and return, in a
// sequence that fake time cannot blur, and what the source saw), and the
// history is checked with github.com/anishathalye/porcupine against the
// sequential specification of an idempotent operation (model.go).
// Beside it, as etcd's robustness tests do, validators check what a
// history cannot show: each scope's effect ran exactly once (zero only
// where every call was told a definitive failure; more only in Run's
// documented window: the process died after the effect, or its completion
// could not be written and the delivery was acknowledged as not
// recorded), no two executions of one scope overlapped, every success
// names its own caller and key, nothing was unclassified (a 500, an error
// none of the library's classes names), no message was dead-lettered
// that could have been applied, and after the faults are cleared and the
// leases have run out, every key a source still wants succeeds on one
// more delivery while keys already done are never stuck.
//
// A definitive failure is legitimate only for the workload's deliberate
// one (ErrDeclined) and, in the tx-cancelled-validation cells, for the
// injected refusal, which every refused transaction of one key must
// answer (never retried). The acknowledgement rule is checked at the
// source from what the harness saw: a delivery whose effect ran and
// whose completion did not land, in an environment that did not stop,
// must be answered as done, never with Redeliver (Run and Do: the
// effect's response with idem.ErrNotRecorded; HTTP: the effect's 201;
// idemevent: no error; idemsqs.Consumer.Run: no batch item failure). An effect reported not recorded
// is legitimate only in the completion-refused cells; a cell whose fault
// never showed fails.
//
// # Across Regions
//
// RunRegions (and Table.RunRegions) runs a way through cells on a
// simulated global table (idemtest.NewGlobal) of us-east-1, us-west-2 and
// eu-west-1, the concurrent duplicates of each key delivered in
// different Regions, each environment's store in its own Region, in one
// of three modes:
//
//   - Homes: MREC, every store homing its keys in us-east-1
//     (idem.WithHomes), at a replication lag of 0, 100 ms, 1 s and 10 s,
//     under paused replication, a planned move of the home, the home
//     unreachable and failed over, and the home lost with writes it had
//     not replicated (each key it ran again must be reported by
//     idemglobal.Detector);
//   - Local: MREC, each store claiming in its own Region
//     (idem.WithRegion): the baseline, measured and never failed, but
//     for a key run twice that the detector did not report;
//   - MRSC: multi-Region strong consistency, three replicas or two and a
//     witness, each store told nothing: under real and injected
//     ReplicatedWriteConflictExceptions, lost answers, a throttled
//     decision, a Region isolated or down, the witness cut off, a
//     replica lost beside the witness, and a holder that stops after
//     the decision, between two writes applied or before the finish.
//     Each execution's effect there is two writes (a count, and an item
//     of its own) that must land together, once; and after the final
//     deliveries and a Store.Sweep, no record holds writes waiting, no
//     Region was sent a TransactWriteItems, TransactGetItems or
//     UpdateTimeToLive, and every store's Learn says MRSC.
//
// Their lines in the table are prefixed "regions:".
//
// A cell that fails writes porcupine's HTML visualisation of its history
// (with the violations as annotations) to CONFORMANCE_REPORT_DIR (default
// os.TempDir()/idem-conformance) and names the file in the failure.
// The table (Table.Write; Run prints its own once its cells are done) has
// one line per way and fault, prefixed "conformance:", with the runs,
// effects, histories and operations checked, and violations.
//
// Run one cell, one way or one fault with -run, e.g.
//
//	go test -race -run 'TestConformance/idemsqs.Run/completion-throttled' .
//	go test -race -run 'TestConformance/.*/renewal-slow' .
//
// This module's tests also check, to the millisecond and in fake time,
// the boundaries in time the store's correctness rests on (time_test.go),
// and what a history cannot show: a dead holder's key claimed by another
// payload is key reuse in every claim. scripts/mutants.sh (make mutants)
// checks that tests can fail: each of its hand-made mutants of pkg/idem
// must fail a deterministic test (these, or the pkg module's); a cell of
// the suite, randomized, does not count.
package idemconform
