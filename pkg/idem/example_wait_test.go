package idem_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// WithWait: a duplicate that arrives while the first call still runs
// waits for its response and replays it, instead of ErrInFlight (a 409
// the client must retry).
func ExampleWithWait() {
	client, stop := localDynamoDB()
	defer stop()
	store, err := idem.NewStore(client, "idempotency", idem.WithWait(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	scope, _ := idem.NewScope("POST /emails", "user-42", "welcome-1")
	ctx := context.Background()

	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		res, err := store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
			close(started)
			time.Sleep(200 * time.Millisecond) // the e-mail goes out
			return idem.Response{Body: []byte(`{"message_id":"m-1"}`)}, nil
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("first:", res.Outcome, string(res.Response.Body))
	})
	<-started
	dup, err := store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
		panic("a duplicate never sends")
	})
	wg.Wait()
	fmt.Println("duplicate:", dup.Outcome, string(dup.Response.Body), err)
	// Output:
	// first: executed {"message_id":"m-1"}
	// duplicate: replayed {"message_id":"m-1"} <nil>
}
