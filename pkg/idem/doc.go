// Package idem makes an operation execute at most once per idempotency
// key, on a DynamoDB table, and answers every retry with the response the
// first execution stored, byte for byte.
//
// # Ways in
//
// Each way in is one call that owns the whole sequence: claim the key,
// replay a completed one, run the operation, record its response, release
// the key when the operation fails (unless another caller has taken it
// over), and join the errors.
//
//   - Store.Execute and Store.Transact, for operations whose effect is
//     DynamoDB writes: the operation's function returns its response and
//     its writes (an Effect), and they commit together with the key's
//     completion in one TransactWriteItems. No crash can leave the writes
//     without the completion, or the completion without the writes. They
//     differ in how the key is claimed. Execute claims it first with a
//     conditional PutItem (2 calls on a first execution; a duplicate that
//     arrives while the first runs gets ErrInFlight, a 409, or with
//     WithWait waits for the first's response), right for work that takes
//     time. Transact puts the claim into that one transaction
//     (1 call; a duplicate gets the winner's response once it has
//     committed, ErrInFlight while it commits, and nothing is ever left
//     IN_PROGRESS), right when the writes are computed from the request
//     alone.
//   - Store.ExecuteBatch, for many keys at once (an SQS batch): every new
//     key's record, COMPLETED with its response, and the writes shared by
//     exactly those keys (one aggregated update per account, say) commit
//     in one TransactWriteItems; keys found there already (their records
//     come back in the cancellation reasons) replay, are key reuse or are
//     in flight, and the rest commit in one more transaction. Each key
//     gets its own outcome and fails only for its own sake: a conflict on
//     a shared write that outlasts the retries (a hot aggregate) splits
//     the keys until those whose writes miss it commit, and fails a key
//     only when a transaction of its own kept conflicting.
//   - Store.Run and Do, for effects outside DynamoDB (an e-mail, a call to
//     a payment API): reserve, run, then complete the key with a fenced
//     UpdateItem. Their one window: if the effect happens and the process
//     dies (or the lease ends) before the completion lands, a retry after
//     the lease runs the effect again. Pass the scope's key to a
//     downstream API that takes one to close it.
//   - pkg/idem/idemhttp is the HTTP side: Middleware wraps Run around an
//     aws-lambda-go API Gateway handler or a net/http handler, and for a
//     handler that calls Execute or Transact itself (its effect is
//     DynamoDB writes) Middleware.ScopeV2 and AnswerV2 are the same
//     prologue (key, caller, scope) and answers (problem+json,
//     Retry-After, Idempotent-Replayed); the HTTP response is stored as
//     the opaque Response.
//   - pkg/idem/idemsqs applies an SQS batch's messages, each under its
//     own key: Transact (the batch's new messages and their shared writes
//     in one transaction, through ExecuteBatch) or Run (each message
//     through Run), with the partial batch failures for the queue.
//   - pkg/idem/idemstream does the same for a Kinesis Data Streams or
//     DynamoDB Streams shard: its records in order, the first failure's
//     sequence number the point Lambda retries the shard from.
//   - pkg/idem/idemevent wraps Do around a typed Lambda handler for any
//     other event (EventBridge, a direct invocation, a Step Functions
//     task), with the key, principal and fingerprint taken from the event.
//
// Each of them owns the whole sequence (claim, replay, commit, release), so
// no caller holds a lease itself, and every one goes through the same
// admission step: the scope is checked (NewScope's rules, an empty
// principal refused), a completed key in the cache (WithCache) answers
// from memory, the operation runs with the scope in its context
// (ScopeFrom), and the outcome goes to WithOutcomeHook's function.
//
// Around them: pkg/idem/idemtable creates the table and describes its
// layout, pkg/idem/idemshard spreads a hot aggregate over shard items,
// pkg/idem/idemadmin looks up or evicts one key (pkg/cmd/idemctl on the
// command line), and pkg/idem/idemtest is a strict DynamoDB-compatible
// store for tests. docs/library.md is the guide.
//
// # Guarantees
//
//   - A key is claimed by one conditional write, never check-then-write:
//     of any number of concurrent callers, one wins.
//   - A lease ends at the caller's context deadline (a Lambda invocation's)
//     plus a margin. Without a deadline it lasts WithLease's lease and is
//     renewed (fenced) while the operation runs; the operation's context
//     is cancelled at the lease's end less the margin unless a renewal
//     has landed by then, whatever a renewal in flight is doing. A crashed holder's key is taken over,
//     by the same atomic claim, once its lease has ended; a live holder is
//     never taken over.
//   - Every write a holder makes is fenced by its lease token: a holder
//     whose lease was taken over writes nothing (ErrLeaseLost), not even
//     its business writes, which share the transaction.
//   - A release runs on a context detached from the caller's
//     cancellation, with its own timeout, so a cancelled request frees its
//     key; it can never delete another holder's claim or a completed
//     record.
//   - The same key with another payload fingerprint is ErrKeyReuse (422),
//     for as long as the record lives.
//   - A caller that cannot be named never shares a scope by accident:
//     NewScope refuses an empty principal (ErrInvalidKey), in every way
//     in; NewAnonymousScope chooses the one shared scope explicitly, and
//     no named caller, whatever its name, shares it.
//   - An effect outside DynamoDB that ran but whose completion could not
//     be recorded (ErrNotRecorded, OutcomeNotRecorded) is reported as
//     done by the queue and event ways in (idemsqs, idemevent): asking
//     for a redelivery would run it again after the lease.
//   - A transaction cancelled by a conflict or throttling is retried with
//     full jitter (WithConflictAttempts); a call whose write landed but whose
//     answers were lost finds its own write (its token, its completion id)
//     and succeeds, rather than failing work that was done. A call that
//     failed after the SDK's retries is treated as possibly landed: Execute
//     and Run release their claim (fenced), Transact reads its record.
//   - A duplicate that meets the key's record in another request's running
//     transaction (DynamoDB refuses the write with
//     TransactionConflictException, or cancels the transaction with reason
//     TransactionConflict) is a concurrent duplicate of a request still
//     running: it gets ErrInFlight (409 with Retry-After) at once, after
//     its one call, never an unexpected error. (Unless the SDK sent its
//     write more than once: an earlier attempt may have landed, and one
//     consistent read says whether it did.) With WithWait, and in the
//     ways in whose in-flight answer is a redelivery (idemevent, idemsqs
//     and idemstream's Run), it waits about what a transaction takes and
//     reads the record once, consistently (a read never conflicts): it
//     replays the winner's response once committed. Releases and fenced
//     completions retry such conflicts.
//   - A duplicate that finds a live holder (Execute, Run, Do, and Transact
//     meeting an Execute or Run holder) gets ErrInFlight (409 with
//     Retry-After) at once, or waits for the holder's response with
//     WithWait (docs/library.md, "Waiting instead of 409").
//   - An Effect is checked before anything is claimed or written: at most
//     99 writes, none to the key's own record (ErrInvalidEffect). A
//     scope that NewScope did not make is ErrInvalidKey.
//   - A record past its expires_at counts as absent, whether or not
//     DynamoDB's TTL has deleted it yet.
//   - With WithCache, a completed record this process wrote or replayed
//     is replayed from memory with no DynamoDB call until its expires_at;
//     a completed record never changes before then, so the replay is
//     exact. In-progress records are never cached.
//
// Every way in reads and writes the same records, so callers of each can
// share a table and even a key: a Transact caller answers ErrInFlight for
// a live Execute or Run holder (or waits for its response, with WithWait), takes a dead one's key over in its one
// transaction, and a key completed by one replays for the others.
//
// # Observing calls
//
// WithOutcomeHook reports how each call ended (an Outcome); WithTrace
// reports what happened on the way, phase by phase, to a trace hook
// (pkg/idem/idemtrace, in the manner of net/http/httptrace): the claim
// and what it met (a live holder, a running transaction, a dead holder's
// key and when its lease ended), each wait and its polls, the effect,
// the commit and its retries, the release, a cache hit, a batch's
// transactions and their cancellation reasons. Every way in reports
// through both. pkg/idem/idemotel, a module of its own so that this one
// depends on no tracing library, maps the trace to OpenTelemetry spans.
//
// # Table
//
// One table, partition key "id" (S), TTL on "expires_at";
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
//	                  Body and Meta; a format 1 record holds
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
//
// The package knows nothing about the operation it protects: products,
// payments or e-mails.
package idem
