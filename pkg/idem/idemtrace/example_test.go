package idemtrace_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// A trace of one's own: a duplicate that arrives while the first request
// runs is told apart from one that arrives after it, by what its claim
// met. Only the hooks set cost anything; the rest are nil.
func ExampleTrace() {
	server := idemtest.Start() // stands in for DynamoDB
	defer server.Close()
	ctx := context.Background()
	if err := idemtable.Create(ctx, server.Client(), "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	trace := &idemtrace.Trace{
		ClaimAttempt: func(_ context.Context, i idemtrace.ClaimAttemptInfo) {
			fmt.Printf("claim attempt %d: %s\n", i.Attempt, i.Result)
		},
		CallDone: func(_ context.Context, i idemtrace.CallDoneInfo) {
			fmt.Printf("%s %s: %s\n", i.Way, i.Operation, i.Outcome)
		},
	}
	store, err := idem.NewStore(server.Client(), "idempotency", idem.WithTrace(trace))
	if err != nil {
		log.Fatal(err)
	}
	scope, err := idem.NewScope("POST /payments", "user-1", "key-1")
	if err != nil {
		log.Fatal(err)
	}
	duplicate := func() {
		_, _ = store.Run(ctx, scope, "fingerprint", func(context.Context) (idem.Response, error) {
			return idem.Response{}, nil
		})
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = store.Run(ctx, scope, "fingerprint", func(context.Context) (idem.Response, error) {
			duplicate() // arrives while the payment is being made
			return idem.Response{Body: []byte(`{"paid":true}`)}, nil
		})
	})
	wg.Wait()
	duplicate() // arrives after it
	// Output:
	// claim attempt 1: won
	// claim attempt 1: in_flight
	// run POST /payments: in_flight
	// run POST /payments: executed
	// claim attempt 1: replayed
	// run POST /payments: replayed
}

// The calls made with one context can carry a trace of their own, beside
// the store's: here, to count the DynamoDB requests' retries of one
// request.
func ExampleWithTrace() {
	server := idemtest.Start()
	defer server.Close()
	ctx := context.Background()
	if err := idemtable.Create(ctx, server.Client(), "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(server.Client(), "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	scope, err := idem.NewScope("POST /payments", "user-1", "key-2")
	if err != nil {
		log.Fatal(err)
	}
	retries := 0
	ctx = idemtrace.WithTrace(ctx, &idemtrace.Trace{
		Retry: func(context.Context, idemtrace.RetryInfo) { retries++ },
	})
	server.InjectCancellation("TransactionConflict", 0, 2) // the commit meets another transaction, twice
	_, err = store.Execute(ctx, scope, "fingerprint", func(context.Context) (idem.Effect, error) {
		return idem.Effect{Response: idem.Response{Body: []byte(`{"paid":true}`)}}, nil
	})
	fmt.Println(err, retries)
	// Output:
	// <nil> 2
}

// A scope hash is keyed: the operators, who hold the key, find a key's
// spans from the key; a reader of the spans without it learns nothing of
// the key, not even by trying every key of a guessable shape.
func ExampleScopeHasher() {
	// The key, from the function's secret configuration: never in code.
	hasher, err := idemtrace.NewScopeHasher([]byte("32 random bytes from the secrets"))
	if err != nil {
		log.Fatal(err)
	}
	other, err := idemtrace.NewScopeHasher([]byte("another key of 32 random bytes.."))
	if err != nil {
		log.Fatal(err)
	}
	scope, _ := idem.NewScope("POST /orders", "user-42", "order-4711")
	fmt.Println(len(hasher.Hash(scope.ID())), hasher.Hash(scope.ID()) != other.Hash(scope.ID()))
	_, err = idemtrace.NewScopeHasher([]byte("short"))
	fmt.Println(err != nil)
	// Output:
	// 16 true
	// true
}
