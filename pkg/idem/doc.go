// Package idem makes an operation execute at most once per idempotency key,
// on a DynamoDB table, and replays its stored response to every retry.
//
// The algorithm (DESIGN.md section 5):
//
//  1. Reserve: one conditional PutItem claims the key with a fresh lease
//     token. The condition also takes over a dead holder's key (its lease
//     ended, same payload) in the same atomic write, so there is no
//     delete-then-reserve window in which two takers both win.
//  2. A caller that loses the condition reads the item DynamoDB returned
//     (ReturnValuesOnConditionCheckFailure=ALL_OLD; one consistent GetItem
//     where a backend returns none) and answers: replay (completed, same
//     payload), ErrInFlight (a live lease), ErrKeyReuse (another payload).
//  3. Commit: Lease.Commit adds the completion, fenced by the lease token,
//     to the caller's own TransactWriteItems, so the business writes and the
//     stored response land together or not at all. A holder whose lease was
//     taken over can no longer commit anything (ErrLeaseLost).
//  4. Release: on failure, Lease.Release deletes the reservation, fenced by
//     the token, on a context detached from the caller's cancellation.
//
// The package knows nothing about the operation it protects: products,
// payments or e-mails. Do covers effects outside DynamoDB, with the one
// window such effects cannot close (see Do).
package idem
