package idemadmin_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// An operator looks a key up, then evicts it so the client's next request
// runs the operation again.
func Example() {
	ctx := context.Background()
	srv := idemtest.Start() // stands in for dynamodb.NewFromConfig(cfg)
	defer srv.Close()
	db := srv.Client()
	layout := idemtable.Layout{KeyPrefix: "IDEMPOTENCY#"}
	if err := idemtable.Create(ctx, db, "idempotency", layout); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(db, "idempotency", idem.WithLayout(layout))
	if err != nil {
		log.Fatal(err)
	}
	scope, _ := idem.NewScope("POST /emails", "user-1", "k-1")
	_, _ = store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
		return idem.Response{Meta: map[string]string{":status": "202"}}, nil
	})

	rec, err := idemadmin.Lookup(ctx, db, "idempotency", layout, scope)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Status, rec.ResponseStatus, rec.Fingerprint)

	if _, err := idemadmin.Evict(ctx, db, "idempotency", layout, scope, false); err != nil {
		log.Fatal(err)
	}
	_, err = idemadmin.Lookup(ctx, db, "idempotency", layout, scope)
	fmt.Println(errors.Is(err, idemadmin.ErrNotFound))
	// Output:
	// COMPLETED 202 fp
	// true
}
