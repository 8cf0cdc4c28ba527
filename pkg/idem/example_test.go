package idem_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// localDynamoDB stands in for dynamodb.NewFromConfig(cfg): an embedded
// DynamoDB-compatible server with an idempotency table and an orders
// table, so the examples run anywhere.
func localDynamoDB() (*dynamodb.Client, func()) {
	store := idemtest.Start()
	client, stop := store.Client(), store.Close
	ctx := context.Background()
	if err := idemtable.Create(ctx, client, "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	orders := idemtable.Input("orders", idemtable.Layout{}) // any table keyed by "id" (S)
	if _, err := client.CreateTable(ctx, orders); err != nil {
		log.Fatal(err)
	}
	return client, stop
}

// placeOrder is an operation whose effect is DynamoDB writes: it builds
// its response and the order item; Execute commits both with the key.
func placeOrder(orderID string, cents int) func(context.Context) (idem.Effect, error) {
	return func(context.Context) (idem.Effect, error) {
		body := fmt.Sprintf(`{"order_id":%q,"cents":%d}`, orderID, cents)
		return idem.Effect{
			Response: idem.Response{Meta: map[string]string{"Content-Type": "application/json"}, Body: []byte(body)},
			Writes: []types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String("orders"),
				Item: map[string]types.AttributeValue{
					"id":    &types.AttributeValueMemberS{Value: orderID},
					"cents": &types.AttributeValueMemberN{Value: strconv.Itoa(cents)},
				},
				ConditionExpression: aws.String("attribute_not_exists(id)"),
			}}},
		}, nil
	}
}

// Execute: the first call claims the key,
// runs the operation and commits its writes with the key's completion;
// the retry gets the stored response and writes nothing.
func ExampleStore_Execute() {
	client, stop := localDynamoDB()
	defer stop()
	store, err := idem.NewStore(client, "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	scope, _ := idem.NewScope("POST /orders", "user-42", "order-key-1")
	fp, _ := idem.Fingerprint(map[string]any{"sku": "widget", "qty": 2})

	first, err := store.Execute(ctx, scope, fp, placeOrder("o-1", 1998))
	fmt.Println(first.Outcome, string(first.Response.Body), err)
	// The client retries (it never saw the answer): same key, same payload.
	retry, err := store.Execute(ctx, scope, fp, placeOrder("o-2", 1998))
	fmt.Println(retry.Outcome, string(retry.Response.Body), err)
	// The same key with another payload is refused.
	other, _ := idem.Fingerprint(map[string]any{"sku": "gadget", "qty": 1})
	_, err = store.Execute(ctx, scope, other, placeOrder("o-3", 500))
	fmt.Println(errors.Is(err, idem.ErrKeyReuse))
	// Output:
	// executed {"order_id":"o-1","cents":1998} <nil>
	// replayed {"order_id":"o-1","cents":1998} <nil>
	// true
}

// Transact: the claim rides in the operation's own transaction, so a
// first execution is one DynamoDB call, and so is a replay (the cancelled
// transaction returns the record).
func ExampleStore_Transact() {
	client, stop := localDynamoDB()
	defer stop()
	store, err := idem.NewStore(client, "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	scope, _ := idem.NewScope("POST /orders", "user-42", "order-key-2")
	first, err := store.Transact(ctx, scope, "fp-1", placeOrder("o-10", 250))
	fmt.Println(first.Outcome, string(first.Response.Body), err)
	retry, err := store.Transact(ctx, scope, "fp-1", placeOrder("o-11", 250))
	fmt.Println(retry.Outcome, string(retry.Response.Body), err)
	// Output:
	// executed {"order_id":"o-10","cents":250} <nil>
	// replayed {"order_id":"o-10","cents":250} <nil>
}

// A store with a cache answers replays of keys it has seen from memory.
func ExampleWithCache() {
	client, stop := localDynamoDB()
	defer stop()
	store, err := idem.NewStore(client, "idempotency", idem.WithCache(1000, 0))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	scope, _ := idem.NewScope("POST /orders", "user-7", "order-key-3")
	if _, err := store.Execute(ctx, scope, "fp", placeOrder("o-20", 100)); err != nil {
		log.Fatal(err)
	}
	replay, err := store.Execute(ctx, scope, "fp", placeOrder("o-21", 100)) // no DynamoDB call
	fmt.Println(replay.Outcome, string(replay.Response.Body), err)
	// Output:
	// replayed {"order_id":"o-20","cents":100} <nil>
}

// Do runs an effect outside DynamoDB (here, a charge) once per key and
// hands every retry the stored result.
func ExampleDo() {
	client, stop := localDynamoDB()
	defer stop()
	store, err := idem.NewStore(client, "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	type receipt struct {
		ChargeID string `json:"charge_id"`
	}
	charges := 0
	charge := func(context.Context) (receipt, error) {
		charges++ // the payment API call; pass it the scope's key if it takes one
		return receipt{ChargeID: fmt.Sprintf("ch_%d", charges)}, nil
	}
	ctx := context.Background()
	scope, _ := idem.NewScope("POST /charges", "user-42", "charge-key-1")
	for range 3 {
		r, outcome, err := idem.Do(ctx, store, scope, "fp", charge)
		fmt.Println(r.ChargeID, outcome, err)
	}
	fmt.Println("charges made:", charges)
	// Output:
	// ch_1 executed <nil>
	// ch_1 replayed <nil>
	// ch_1 replayed <nil>
	// charges made: 1
}

// NewScope keeps callers apart: the same client key from two principals
// is two records.
func ExampleNewScope() {
	a, _ := idem.NewScope("POST /orders", "alice", "k-1")
	b, _ := idem.NewScope("POST /orders", "bob", "k-1")
	fmt.Println(a.ID())
	fmt.Println(b.ID())
	_, err := idem.NewScope("POST /orders", "alice", "has space")
	fmt.Println(errors.Is(err, idem.ErrInvalidKey))
	// Output:
	// v1|12:POST /orders|5:alice|3:k-1
	// v1|12:POST /orders|3:bob|3:k-1
	// true
}

// WithTrace's CallDone sees every call's outcome, for metrics or logs
// of the caller's own (pkg/idem/idemotel maps the whole trace to
// OpenTelemetry spans); it must not block.
func ExampleWithTrace() {
	client, stop := localDynamoDB()
	defer stop()
	counts := map[string]int{} // a metric; calls here are sequential
	store, err := idem.NewStore(client, "idempotency", idem.WithTrace(&idemtrace.Trace{
		CallDone: func(ctx context.Context, i idemtrace.CallDoneInfo) {
			counts[i.Outcome]++
			fmt.Println(i.Way, i.Operation, i.Outcome, i.Err)
		},
	}))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	scope, _ := idem.NewScope("POST /orders", "user-42", "order-key-4")
	_, _ = store.Execute(ctx, scope, "fp", placeOrder("o-30", 100))
	_, _ = store.Execute(ctx, scope, "fp", placeOrder("o-31", 100))
	_, _ = store.Execute(ctx, scope, "other", placeOrder("o-32", 100))
	fmt.Println(counts)
	// Output:
	// execute POST /orders executed <nil>
	// execute POST /orders replayed <nil>
	// execute POST /orders key_reuse idem: idempotency key reused with a different payload
	// map[executed:1 key_reuse:1 replayed:1]
}

// An adapter of your own answers its client in its own protocol from the
// error a call returned: OutcomeOf classes it, RetryAfter says when the
// client may retry under the same key (0: not with this key, or at once).
func ExampleOutcomeOf() {
	for _, err := range []error{
		fmt.Errorf("charge: %w", &idem.InFlightError{RetryAfter: 2500 * time.Millisecond}),
		idem.ErrKeyReuse,
		context.DeadlineExceeded,
		errors.New("the payment API refused the card"),
	} {
		fmt.Println(idem.OutcomeOf(err), idem.RetryAfter(err))
	}
	// Output:
	// in_flight 2.5s
	// key_reuse 0s
	// unavailable 1s
	// error 0s
}
