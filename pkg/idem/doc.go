// Package idem makes an operation execute at most once per idempotency
// key, on a DynamoDB table, and answers every retry with the response the
// first execution stored, byte for byte.
//
// # Ways in
//
// Each way in is one call that owns the whole sequence (admit, claim,
// replay, run, commit, release, answer), so no caller holds a lease
// itself:
//
//   - Store.Execute and Store.Transact, for operations whose effect is
//     DynamoDB writes: the operation's function returns its response and
//     its writes (an Effect), which commit with the key's completion in
//     one TransactWriteItems. Execute claims the key first (2 calls on a
//     first execution; right for work that takes time); Transact puts the
//     claim into that one transaction (1 call; right when the writes are
//     computed from the request alone).
//   - Store.ExecuteBatch, for many keys at once (an SQS batch): the new
//     keys' records and the writes they share commit in as few
//     transactions as it can.
//   - Store.Run and Do, for effects outside DynamoDB (an e-mail, a call to
//     a payment API): claim, run, then complete the key with a fenced
//     UpdateItem; they leave one window open (Run's window, below).
//   - pkg/idem/idemhttp is the HTTP side: a Middleware wraps Run around
//     an aws-lambda-go API Gateway or load balancer handler or a net/http
//     handler, and for a handler that calls Execute or Transact itself,
//     its Scope and Answer methods are the same prologue (key, caller,
//     scope) and answers (problem+json, Retry-After, Idempotent-Replayed).
//   - pkg/idem/idemsqs applies an SQS batch's messages, each under its own
//     key, through ExecuteBatch or Run, with the partial batch failures;
//     pkg/idem/idemstream does the same for a Kinesis or DynamoDB Streams
//     shard, in order; pkg/idem/idemevent wraps Do around a typed Lambda
//     handler for any other event.
//
// Every adapter is built alike: a constructor that takes the store and
// what the adapter cannot do without, functional options named as this
// package's (WithWait, WithRetention), and a refusal of what it cannot
// honour before its first call. An adapter of your own uses the same
// seam: the ways in with per-call options (CallWait, CallRetention,
// CallRedelivers, which reach their call alone; Store.ValidateCall checks
// them when the adapter is built), ScopeFrom, pkg/idem/idemprincipal to
// name a caller as every way in does, and OutcomeOf and RetryAfter to
// answer its client in its own protocol; pkg/idem/idemconform runs it
// through the conformance suite.
//
// Around them: pkg/idem/idemtable creates the table and describes its
// layout, pkg/idem/idemshard spreads a hot aggregate over shard items,
// pkg/idem/idemadmin looks up or evicts one key (pkg/cmd/idemctl on the
// command line), pkg/idem/idemglobal fails over the homes of a global
// table (WithHomes) and detects keys run in two Regions, and
// pkg/idem/idemtest is a strict DynamoDB-compatible store for tests.
// docs/library.md is the guide.
//
// # The protocol
//
// Admission. Every call is admitted alike: its scope and fingerprint are
// checked (NewScope's rules, an empty principal refused unless the scope
// is NewAnonymousScope's, and the Limits below), a completed key in the
// cache (WithCache) answers from memory, the operation runs with the
// scope in its context (ScopeFrom), and the outcome goes to the trace
// (WithTrace). An Effect is
// checked before its writes are sent: at most 99 writes, none to the
// key's own record (ErrInvalidEffect).
//
// Claim. A key is claimed by one conditional write, never check then
// write, in one of two claim modes: reserve (Execute, Run, Do) puts the
// record IN_PROGRESS with a lease; transact (Transact, ExecuteBatch)
// puts it COMPLETED, with its response, in the effect's transaction. The
// condition is the same in both: no record, an expired one, or a dead
// holder's IN_PROGRESS record for the same payload, which is taken over
// in the same write (OutcomeTakeover). A claim that loses reads the
// record that beat it (DynamoDB returns it with the failure) and decides
// once, the same way in every mode: the call's own token is its own
// earlier attempt, landed with its answer lost; another payload is
// ErrKeyReuse; a completed record replays; a live holder is ErrInFlight
// (409, Retry-After until its lease ends), or is waited for (Waits);
// a record gone, expired or dead by then is claimed again, a bounded
// number of times (WithConflictAttempts), after which the key is busy
// (ErrInFlight). A claim that meets the record in another request's
// running transaction (TransactionConflictException, or a cancellation
// with reason TransactionConflict on the record) is a concurrent
// duplicate of a request still committing: ErrInFlight at once, after
// its one call; unless the SDK sent the claim more than once (an
// earlier attempt may have landed: one consistent read says), or the
// call follows (WithWait, and the event and queue ways in, whose
// in-flight answer is a redelivery): then it waits about what a
// transaction takes (the store learns it) and reads the record once,
// consistently, which never conflicts.
//
// Leases. A reserve-mode claim's lease ends at the caller's context
// deadline (a Lambda invocation's) plus a margin (WithLease), so a live
// holder is never taken over. Without a deadline (a net/http server) it
// lasts WithLease's lease, renewed every third of it with a fenced write
// while the operation runs; if no renewal has landed by the lease's end
// less the margin, the operation's context is cancelled then with a
// cause wrapping ErrLeaseLost, whatever a renewal in flight is doing. A
// holder that dies stops renewing, and its key can be taken over once
// its lease has ended.
//
// Commit. Every write a holder makes is fenced by its lease token, so a
// holder whose lease was taken over writes nothing (ErrLeaseLost), not
// even its business writes, which share Execute's transaction. A
// transaction cancelled by a conflict or throttling is retried with full
// jitter (WithConflictAttempts). A call whose write landed but whose
// answers were lost finds its own write (its token, its completion id)
// and succeeds; a call that failed after the SDK's retries is treated as
// possibly landed: Execute and Run release their claim (fenced, which
// finds a landed completion), Transact reads its record.
//
// Release. A call whose operation or commit fails releases its claim so
// a retry can run at once: a fenced DeleteItem on a context detached
// from the caller's cancellation, with its own timeout
// (WithReleaseTimeout). It never deletes another holder's claim or a
// completed record. An operation that panics has its claim released in
// Execute (nothing was committed) and kept in Run and Do (the effect may
// have happened); a Run or Do function that returns an error wrapping
// ErrNotRecorded keeps it too.
//
// Replay. A completed key answers every later call with the same
// payload fingerprint with its stored Response, for the retention
// (WithRetention, default 24 h), and another payload with ErrKeyReuse. A
// record past its expires_at counts as absent, whether or not DynamoDB's
// TTL has deleted it yet. With WithCache, a completed record this process
// wrote or replayed replays from memory, with no DynamoDB call, until
// its expires_at: a completed record never changes before then, so the
// replay is exact; in-progress records are never cached.
//
// Waits. With WithWait (or CallWait for one call, as idemhttp.WithWait
// passes it per request), a duplicate that finds a live holder (Execute,
// Run, Do, and Transact meeting an Execute or Run holder) polls the
// record with consistent reads and replays the holder's response once it
// completes. The polls
// aim at when the holder should be done: the store learns how long each
// operation's executions take (those it runs, and those it watches
// complete), so a waiter polls about every 500 ms until the holder's
// claim plus that time, then at 25 ms doubling to 500 ms; for an
// operation it knows nothing of yet, at full jitter under a limit of 25
// ms doubling to 500 ms. It answers ErrInFlight only when the wait runs
// out, or when the holder dies (its lease ends with no completion): a
// takeover is left to the client's retry, never done inside the wait. A
// wait stops 100 ms before the caller's context deadline.
// ExecuteBatch reports in-flight items at once.
//
// Batches. ExecuteBatch's shared function returns the writes that commit
// with exactly the records of the items it is given (one aggregated
// update per account they touch, say); it is called once per
// transaction, must depend on nothing else and must not write the items'
// records, and an error fails those items. A transaction cancelled
// because some records' conditions failed tells which keys were there
// already (the reasons carry the records): those are decided as any
// claim is, and the rest commit in one more transaction, their shared
// writes computed again without them. A conflict or throttling is
// retried with full jitter while the context lasts; then a key whose own
// record was contended is in flight (a duplicate is committing it), and
// the rest get another round without it. When only a shared write was
// contended (a hot aggregate other batches hold), the keys are split in
// halves, each committed on its own with its own shared writes and
// attempts, down to single keys, so a key fails with the conflict
// (IsUnavailable) only when a transaction of its own was cancelled on
// every attempt: under contention that outlasts every attempt a batch of
// n keys tries up to 2n-1 transactions (pkg/idem/idemshard spreads such
// an aggregate). A shared write whose condition fails, or a transaction
// refused as a whole (once a read shows it did not land), is split
// likewise until the keys at fault are alone: only a key whose own
// writes cannot commit gets ErrConditionFailed. Beyond 100 actions or 4
// MB the batch is split too. Throttling that outlasts the attempts, and
// the end of the context, fail every key not yet committed, retryable.
// The same scope twice in a batch is one key: the later item answers as
// a duplicate of the first (a replay, or key reuse for another payload).
//
// Run's window. An effect outside DynamoDB cannot share a transaction
// with its completion. Run and Do retry a completion refused for a
// reason a retry can fix (throttling, a 5xx, a timeout) until the lease
// ends less the margin, detached from the caller's cancellation (under a
// deadline, until a margin before it, so the call still answers in
// time); a response that cannot be stored as it is (over the response
// limit, metadata that is not UTF-8 or uses a key of the library's) is
// recorded with its status, without its body, and without its metadata
// if they are the problem, its Omitted saying why, so the effect still
// never runs twice. The one window: the effect happened but its
// completion did not land (the process died, the write kept failing, or
// the lease ended and another caller took over); a retry after the lease
// ends runs it again. Run reports that as ErrNotRecorded
// (OutcomeNotRecorded) with the effect's response, and the queue and
// event ways in acknowledge such a delivery rather than ask for a
// redelivery that would run it again. Passing the scope's key to a
// downstream API that takes one (ScopeFrom) closes the window.
//
// # Global tables
//
// A store knows its table's kind (idemtable.Kind): told it
// (WithTableKind), or learned once, with one DescribeTable on its first
// call or at init (Store.Learn), and from DynamoDB's refusal of a
// transaction where it could not ask. A regional table, and until the
// kind is known any table, runs as above.
//
// A table with multi-Region eventual consistency (MREC) evaluates a
// claim's condition against its own Region's replica, so a key claimed
// in two Regions within the replication lag runs in both. WithHomes sends
// every read and write of a key's record, and its Effect's writes, to the
// key's home Region, which holds it under a lease a quorum of voters
// promise, fenced by an epoch on failover (pkg/idem/idemglobal); records
// carry the Region whose replica took their claim and its epoch.
// docs/library.md ("Global tables") states the failover wait and what a
// lost Region leaves. A store that claims in each caller's Region
// instead must say so, with WithRegion (its claims then carry the
// Region, and idemglobal.Detector reports from the streams each key run
// in two). A store that knows its table is MREC and was given neither
// refuses to run (NewStore when told the kind; Learn and every call when
// it learns it), with an error wrapping errors.ErrUnsupported; so does
// a store given WithHomes on a table that is regional or MRSC.
//
// A table with multi-Region strong consistency (MRSC) has no
// transactions and no TTL; its conditions see the latest version in
// every Region, and a write that meets another Region's write of the
// same item is refused with ReplicatedWriteConflictException, which
// every write of the store retries with full jitter and then settles
// with a consistent read. Claims, renewals, completions and releases are
// single-item writes already. An Effect commits under the holder's lease
// in steps: each write's condition is checked, by a write that changes
// nothing (an UpdateItem on the item, or a DeleteItem where there is
// none), so a failed one is ErrConditionFailed and writes nothing; then
// each Update's and Delete's item is stamped (a string set attribute,
// idem_pending), or found absent; then the writes are recorded as
// intents in the fenced completion (the decision: the key is completed,
// and its writes will land); then each is applied once, in order,
// conditional on a marker its completion leaves on the item (a string
// set attribute, idem_applied), and on its stamp where it left one,
// which it takes off; and the record says so. A write is never applied
// twice, by anyone: an Update or a Delete whose item has lost its stamp
// without the marker (another writer replaced the item with a PutItem,
// or deleted it, after the stamp) is not applied, and counts as applied
// just before that write, which overwrote all it would have changed; a
// Delete of an item absent at the stamp deletes nothing, whoever creates
// the item since; an Update of an item absent at the decision has only
// its marker, and is applied over an item another writer created since.
// What remains, precisely: an item such an Update created and another
// writer then deleted, or replaced with a PutItem, before a recovery gets
// it again (the library cannot tell that item from one another writer
// created, and an Update of a shared item, a counter, is what other
// writers most often make: applying never loses a write); and a Put
// without a condition (its item cannot be stamped: the library cannot
// tell its key among its
// attributes) is applied again by a recovery over an item another writer
// replaced since it was applied. What a transaction gave and this does not: another
// reader may see the writes one at a time (each is atomic, the set is
// not); an Update's condition holds when it is checked, before the
// decision, not when it is applied, so ADDs to a counter may pass its
// cap together (an Update whose condition tests what it sets or
// removes, an optimistic lock, is ErrInvalidEffect); a Put keeps its
// condition when applied, and one whose item another writer created
// since stays recorded, its key's callers answered ErrConditionFailed
// until the item is gone. A holder that stops after the
// decision leaves its writes to whoever meets the record next: the
// key's next caller applies them before it answers, a waiter too, and
// Sweep those of a key nobody calls; until then the record neither
// expires nor can be claimed anew. Transact claims the key first on
// MRSC, as Execute; ExecuteBatch commits its keys one at a time, each
// with the writes shared returns for it alone. Sweep, which an adopter
// schedules, deletes expired records where TTL does not.
//
// # Guarantees
//
//   - Of any number of concurrent callers of one key, one wins the claim,
//     and a live holder is never taken over.
//   - A holder whose lease was taken over writes nothing.
//   - The same key with another payload fingerprint is ErrKeyReuse (422),
//     for as long as the record lives.
//   - A caller that cannot be named never shares a scope by accident:
//     NewScope refuses an empty principal (ErrInvalidKey), in every way
//     in; NewAnonymousScope chooses the one shared scope explicitly, and
//     no named caller, whatever its name, shares it.
//   - A duplicate never gets an unexpected error for meeting a running
//     transaction: it gets ErrInFlight (409 with Retry-After), or the
//     winner's response.
//   - Every way in reads and writes the same records, so callers of each
//     can share a table and even a key: a Transact caller answers
//     ErrInFlight for a live Execute or Run holder (or waits for its
//     response), takes a dead one's key over in its one transaction, and
//     a key completed by one replays for the others.
//
// # Limits
//
// Every attribute a caller gives a record is bounded when its call is
// admitted, before any effect, so that every record fits DynamoDB's 400
// KB item and none is refused after its effect (ErrInvalidKey names the
// attribute): a key of 1 to 255 bytes of printable ASCII; an operation
// and a principal in UTF-8, whose scope ID fits the layout's key (2048
// bytes in the default layout; idemtable.Layout's MaxIDLength); a
// fingerprint of at most 1024 bytes of UTF-8. A response is counted as
// DynamoDB counts item sizes: the body's bytes, and for the metadata a
// map's 3 bytes and, per entry, 1 byte besides its key's and value's;
// over WithMaxResponseBytes (64 KB by default, at most 300 KB) it is
// ErrResponseTooLarge, refused before an Effect's writes are sent, and
// stored by Run and Do without what does not fit (Run's window). An
// Effect holds at most 99 writes.
//
// # Observing calls
//
// One channel reports what calls do: WithTrace (or idemtrace.WithTrace,
// for the calls made with one context) gives a trace hook
// (pkg/idem/idemtrace, in the manner of net/http/httptrace) every phase
// of a call: the claim and what it met (a live holder, a running
// transaction, a dead holder's key and when its lease ended), each wait
// and its polls, the effect, the commit and its retries, the release, a
// cache hit, a batch's transactions and their cancellation reasons. Its
// CallDone says how each call ended (an Outcome, and the error the call
// returns): once per Execute, Transact, Run and Do call, whatever
// happened (replayed from the table or the cache, rejected, failed), and
// BatchItem once per item of ExecuteBatch. Every way in reports through
// it, and so the adapters on them. Its hooks run on the calling
// goroutine, concurrently for concurrent calls, so they must not block:
// count, log or record, and hand anything slow to another goroutine.
// pkg/idem/idemotel, a module of its own so that this one depends on no
// tracing library, maps the trace to OpenTelemetry spans.
//
// # Table
//
// One table, partition key "id" (S), TTL on "expires_at" (on MRSC,
// Sweep in its place);
// pkg/idem/idemtable creates one and names the key prefix that confines an
// IAM role to one operation's records. WithLayout puts the records
// elsewhere (an idemtable.Layout): another partition key name, a prefix
// to the ID ("IDEMPOTENCY#"), a single-table design's sort key (with a
// fixed partition value and the ID in the sort key, every record in one
// partition; or the ID in the partition key and a fixed sort value,
// records spread over partitions), other attribute names. In the default
// layout, a record has:
//
//	id                the scope's ID: "v1", then operation, principal and
//	                  key, each prefixed by its length (Scope.ID; the
//	                  anonymous scope's principal is "9:anonymous", a
//	                  caller named "anonymous" is "n9:anonymous")
//	status            IN_PROGRESS or COMPLETED
//	fingerprint       the payload's fingerprint (Fingerprint: hex SHA-256
//	                  of canonical JSON)
//	lease_token       the holder's fencing token (a record Transact or
//	                  ExecuteBatch wrote carries its request's token)
//	lease_expires_at  epoch milliseconds; after it the key can be taken over
//	format            N, once COMPLETED: the stored response's format (2;
//	                  a record without it is format 1, written before)
//	response_body     S (or B for bytes that are not UTF-8) and
//	response_meta     M of S (absent when empty): the stored Response's
//	                  Body and Meta, its Status under ":status" and its
//	                  Omitted under ":omitted"; a format 1 record holds
//	                  response_status (N), response_headers (M of S) and
//	                  response_body instead, and replays the same
//	created_at        RFC 3339; completed_at when COMPLETED
//	completion_id     the completing call's own id, so a call that meets a
//	                  completed record can tell its own write from another's
//	writes            N, once COMPLETED: the DynamoDB writes committed with
//	                  it (0 for Run and Do), so an operator knows what
//	                  evicting it runs again (absent: completed before)
//	expires_at        epoch seconds: the claim's lease or the retention
//	                  (WithRetention, default 24 h) after completion
//	intents           L of M, on MRSC only: the writes recorded with the
//	                  completion and not all applied yet
//	markers           L of M, on MRSC only: the items whose updates
//	                  carry the completion's markers, which Sweep clears
//
// The package knows nothing about the operation it protects: products,
// payments or e-mails.
package idem

// The files of this package, in the protocol's order: each uses only the
// names declared in itself and in the files listed before it, so it reads
// from the top (TestFilesStandInProtocolOrder counts any name used from a
// file listed later, and names each exception with its reason).
//
//	doc.go          the protocol, in prose
//	errors.go       what a call can end in: its errors and outcomes
//	call.go         what one call may set apart from its store
//	scope.go        who asks for what, and the scope in a call's context
//	fingerprint.go  what exactly is asked
//	record.go       what is stored: the response, the record, their sizes
//	cache.go        completed records kept in memory
//	learn.go        what a store learns of its calls' times
//	kind.go         what a store knows of its table's kind, and reads of it
//	store.go        the table, the Store and its options
//	home.go         a key's home Region on a global table, and its lease
//	trace.go        the trace hook, which every phase reports to
//	table.go        the table's kind, told or learned
//	admit.go        admission, the first step of every call
//	retry.go        DynamoDB's refusals, read and retried
//	claim.go        the claim condition and the claim state machine
//	lease.go        the lease a claim grants: its one policy
//	commit.go       the holder's completion, with the effect's writes
//	release.go      the holder's release of a failed call's claim
//	intent.go       an Effect without a transaction: guards, intents applied once
//	replay.go       a completed key's answer
//	wait.go         a duplicate waiting for a live holder
//	reserve.go      the reserve claim mode: PutItem, then the lease
//	held.go         a held key's Effect run and committed, either way
//	transact.go     Transact: the claim in the effect's transaction
//	batch.go        ExecuteBatch: many keys in few transactions
//	execute.go      Execute: reserve, then commit the effect's writes
//	run.go          Run: reserve, then record an outside effect
//	do.go           Do: Run for a typed value
//	sweep.go        Sweep: expired records deleted where there is no TTL
