// Package idemtest is a DynamoDB-compatible store for tests that behaves
// as DynamoDB does under concurrency, where other local stores are kinder.
//
// It serves the DynamoDB JSON API over real HTTP on loopback, so the real
// AWS SDK, its retryer and its error types are exercised; the items live
// in github.com/truora/minidyn. Around it, the store models what DynamoDB
// does and minidyn does not:
//
//   - Transaction isolation. A running TransactWriteItems holds its items
//     until it commits. A PutItem, UpdateItem or DeleteItem on a held item
//     is refused with TransactionConflictException (HTTP 400; the SDK's
//     standard retryer does not retry it); a transaction touching a held
//     item is cancelled with reason TransactionConflict at that item's
//     index and None elsewhere; reads see the last committed value.
//     WithTransactionLatency keeps transactions running longer, to widen
//     that window in tests.
//   - Condition failures that say why. ReturnValuesOnConditionCheckFailure
//     ALL_OLD returns the item with a failed PutItem, UpdateItem or
//     DeleteItem, and in each cancellation reason of a transaction; every
//     failed condition of a cancelled transaction is reported, not only the
//     first. PutItem's ReturnValues ALL_OLD returns the replaced item.
//   - Idempotent transactions. A TransactWriteItems repeated with the same
//     ClientRequestToken within ten minutes succeeds without writing again
//     (the SDK's retry of a transaction whose answer was lost), a changed
//     request under the same token gets IdempotentParameterMismatch.
//   - The TTL API (UpdateTimeToLive, DescribeTimeToLive). Like DynamoDB,
//     which deletes expired items within days, it never deletes them.
//
// Faults can be injected per operation (Inject: a lost answer, throttling,
// a 5xx, a transaction conflict), a request can be parked while it holds
// its items (Hold), and requests are counted per operation (Calls).
//
// What it does not model: capacity and throttling by load, item
// collections, global tables, Streams (WithPutHook stands in), and
// numbers beyond float64 precision (minidyn keeps numbers as float64;
// DynamoDB keeps 38 digits).
package idemtest
