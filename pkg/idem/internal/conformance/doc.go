// Package conformance is pkg/idem's conformance suite: one set of
// scenarios that every way into the library passes, under the same
// faults, with the same checks. It holds tests only; it is a module of its
// own so that porcupine (the linearizability checker) never enters an
// adopter's module graph.
//
// # What a cell is
//
// A cell is one way in (Store.Execute, Store.Transact, Store.Run, idem.Do,
// Store.ExecuteBatch, idemhttp.Middleware on API Gateway v2 and on
// net/http, idemevent.Wrap, idemsqs.Run, idemsqs.Transact) under one
// fault, on one table layout (default, single-table, prefix) in one mode
// (plain, wait, cache). Each cell runs in its own testing/synctest
// bubble: the strict store (idemtest.NewServer, served in-process), the
// simulated Lambda environments, the event sources and the faults all
// live in fake time, so leases, margins, heartbeats, waits, redelivery
// delays and takeovers happen to the millisecond without sleeping.
//
// A cell's workload is N keys for a few callers, each delivered by M
// concurrent duplicates, plus a key reused with another payload, a key
// whose first execution fails on purpose, and (for queues) a poison
// message. Deliveries go through the source the way in is made for:
//
//   - request sources (Execute, Transact, Run, Do, and HTTP clients of the
//     middleware) retry the same key with backoff, honouring Retry-After,
//     on 409, 503, a lost answer or a crash, until a definitive answer or
//     a bounded number of attempts;
//   - an SQS queue (idemsqs.Run, idemsqs.Transact, Store.ExecuteBatch)
//     redelivers every message not acknowledged (a batch item failure, or
//     every message of an invocation that crashed) after the visibility
//     timeout, until it is acknowledged or received 5 times (then it is
//     dead-lettered), and delivers some messages to two consumers at once;
//   - asynchronous invocations (idemevent) are retried twice on error.
//
// Each invocation runs in an environment: a client and an idem.Store of
// its own (its own cache), one invocation at a time, with the Lambda
// deadline on its context (an invocation still running at its deadline
// stops its environment, as Lambda does). A crash cuts the environment
// off (every later request fails with a connection error; nothing more
// reaches the store), abandons its invocation (its output is unknown) and
// a fresh environment replaces it, as a cold start does.
//
// The faults (faults_test.go): the process stops before the effect, after
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
// are in the environment's network (network_test.go).
//
// # Checks
//
// Every delivery is recorded as an operation (its call and return, in a
// sequence that fake time cannot blur, and what the source saw), and the
// history is checked with github.com/anishathalye/porcupine against the
// sequential specification of an idempotent operation (model_test.go).
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
// one (errDeclined) and, in the tx-cancelled-validation cells, for the
// injected refusal, which every refused transaction of one key must
// answer (never retried). The acknowledgement rule is checked at the
// source from what the harness saw: a delivery whose effect ran and
// whose completion did not land, in an environment that did not stop,
// must be answered as done (Run and Do: the effect's response with
// idem.ErrNotRecorded; HTTP: the effect's 201; idemevent: no error;
// idemsqs.Run: no batch item failure). An effect reported not recorded
// is legitimate only in the completion-refused cells; a cell whose fault
// never showed fails.
//
// A cell that fails writes porcupine's HTML visualisation of its history
// (with the violations as annotations) to CONFORMANCE_REPORT_DIR (default
// os.TempDir()/idem-conformance) and names the file in the failure.
// TestMain prints one line per way in and fault, prefixed "conformance:",
// with the runs, effects, histories and operations checked, and
// violations.
//
// Run one cell, one way in or one fault with -run, e.g.
//
//	go test -race -run 'TestConformance/idemsqs.Run/completion-throttled' .
//	go test -race -run 'TestConformance/.*/renewal-slow' .
//
// The tests of deterministic time (time_test.go) check the boundaries the
// store's correctness rests on, to the millisecond, in fake time, and what
// a history cannot show: a dead holder's key claimed by another payload
// is key reuse in every claim.
//
// scripts/mutants.sh (make mutants) checks that these tests can fail: each
// of its hand-made mutants of pkg/idem must fail the cell or test listed
// for it.
package conformance
