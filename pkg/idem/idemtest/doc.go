// Package idemtest is a DynamoDB-compatible store for tests that refuses
// what DynamoDB refuses and behaves as DynamoDB does under concurrency,
// where other local stores are kinder.
//
// It serves the DynamoDB JSON API over real HTTP on loopback (Start,
// New), or in-process through HandlerClient (no listener: usable inside a
// testing/synctest bubble), so the real AWS SDK, its retryer and its
// error types are exercised. Everything is its own code, with no
// dependency beyond the AWS SDK and an exact decimal library
// (github.com/cockroachdb/apd/v3):
//
//   - Tables. CreateTable (key schema, attribute definitions, global and
//     local secondary indexes and their projections, billing mode),
//     DescribeTable, UpdateTable (indexes created, filled from the items,
//     or deleted), DeleteTable and ListTables, checked as DynamoDB checks
//     them; ResourceInUseException for a table that exists,
//     ResourceNotFoundException for one that does not. A table is ACTIVE
//     as soon as it is created.
//
//   - Query and Scan. A Query reads one partition of a table or an index
//     in sort key order, numbers by value and strings by their UTF-8
//     bytes, the sort key limited by the key condition (=, <, <=, >, >=,
//     BETWEEN, begins_with), forward or back (ScanIndexForward); a Scan
//     reads the partitions in the order of a hash of their key, whole or
//     one segment of a parallel scan. Both apply FilterExpression,
//     ProjectionExpression and Select (COUNT among them), stop at Limit
//     items read or 1 MB with a LastEvaluatedKey (even after the last
//     item, as DynamoDB may), and go on from ExclusiveStartKey.
//     Key conditions and filters compare numbers exactly.
//
//   - Validation. Every expression is tokenized and parsed (condition,
//     update, projection, key condition, filter); a syntax error, a
//     placeholder undefined or unused, a reserved word as a name, an
//     empty key string, an empty or duplicate set, a number DynamoDB
//     cannot store (over 38 digits, beyond 1E+125 or below 1E-130), an
//     item over 400 KB, a key over 2048 (partition) or 1024 (sort) bytes,
//     a transaction over 100 actions or 4 MB: each is refused with
//     ValidationException, as DynamoDB refuses it, before anything is
//     written.
//
//   - Exact evaluation. Holding the item, the store reads it, evaluates
//     the condition and computes the new item itself, numbers in exact
//     decimals, and stores the request's puts and deletes all at once,
//     so no read sees part of them. An update that cannot apply to the item it
//     meets (an operand of the wrong type, a missing attribute, an item
//     grown past 400 KB) is refused; in a transaction it cancels it with
//     reason ValidationError.
//
//   - Transaction isolation. A TransactWriteItems prepares every item at
//     once against its last committed value, as DynamoDB's storage nodes
//     do: an item whose condition passes is held until the transaction
//     commits or is cancelled; one whose condition fails is refused
//     without being held. A PutItem, UpdateItem or DeleteItem on a held
//     item is refused with TransactionConflictException (HTTP 400; the
//     SDK's standard retryer does not retry it); a transaction touching a
//     held item is cancelled with reason TransactionConflict at that
//     item's index, every failed condition reported beside it; reads see
//     the last committed value, and a TransactGetItems reads all its
//     items at one instant (or is cancelled where a write holds one).
//     WithTransactionLatency keeps transactions running longer, to widen
//     that window in tests.
//
//   - Condition failures that say why. ReturnValuesOnConditionCheckFailure
//     ALL_OLD returns the item with a failed PutItem, UpdateItem or
//     DeleteItem, and in each cancellation reason of a transaction; every
//     failed condition of a cancelled transaction is reported, not only the
//     first. PutItem's ReturnValues ALL_OLD returns the replaced item.
//
//   - Idempotent transactions. A TransactWriteItems repeated with the same
//     ClientRequestToken within ten minutes succeeds without writing again
//     (the SDK's retry of a transaction whose answer was lost), a changed
//     request under the same token gets IdempotentParameterMismatch.
//
//   - Consumed capacity, counted as DynamoDB documents it for on-demand
//     tables: returned at the level ReturnConsumedCapacity asks, and
//     totalled per table and operation (Consumed).
//
//   - Stale reads, when asked for (WithStaleReads): an eventually
//     consistent GetItem or BatchGetItem may return an older version.
//
//   - The TTL API (UpdateTimeToLive, DescribeTimeToLive), refused as
//     DynamoDB refuses it: on a table that does not exist, for a setting
//     the table already has, and within the hour after a change. Like
//     DynamoDB, which deletes expired items within days, it never deletes
//     them.
//
//   - Numbers as DynamoDB keeps them: exact, and returned without leading
//     or trailing zeros however they were written ("1.50" is returned
//     "1.5", "007" is "7").
//
//   - Global tables (NewGlobal): several Regions, each a Server with its
//     own endpoint, clients and storage, sharing every table one of them
//     creates. Multi-Region eventual consistency (MREC): asynchronous
//     replication at a lag per Region pair (SetLag, Jitter), pausable
//     (Pause, Isolate), conditions evaluated against the local replica,
//     last writer wins per item by the write's timestamp, transactions
//     atomic in their Region only and replicated item by item, and a
//     stream per Region (Server.Stream) carrying the replicated changes
//     too, merged when several arrive together. Multi-Region strong
//     consistency (MRSC): three Regions (or two and a witness),
//     synchronous replication, ReplicatedWriteConflictException on
//     concurrent writes of an item from two Regions, transactions, TTL and
//     local secondary indexes refused, and a write refused without a
//     second reachable Region. DescribeTable reports the replicas,
//     witness and consistency mode as DynamoDB does. Replication is
//     applied at the first request at or after it is due: deterministic,
//     and on fake time in a testing/synctest bubble.
//
// Faults can be injected per operation (Inject: a lost answer, throttling,
// throttling past the SDK's retries, a 5xx, a transaction conflict), a
// transaction cancelled with any reason at any item (InjectCancellation),
// a request slowed while it holds its items (InjectLatency) or parked
// until released (Hold), and requests are counted per operation (Calls).
//
// What it does not model: capacity limits and throttling by load, item
// collections, the Streams API (WithPutHook stands in; a global table's
// streams are read with Server.Stream), PartiQL,
// the legacy request parameters (Expected, AttributeUpdates,
// KeyConditions, ...: refused), the table name's minimum length (3
// characters on DynamoDB; shorter names are accepted here).
package idemtest
