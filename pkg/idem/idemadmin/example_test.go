package idemadmin_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// An operator looks a key up, then evicts it so the client's next request
// runs the operation again. The caller is named as the way in spells it:
// here a JWT authorizer's, as idemhttp.PrincipalV2 names it.
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
	scope, _ := idem.NewScope("POST /emails", idemprincipal.JWT("https://auth.example.com/", "sub", "user-1"), "k-1")
	_, _ = store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 202}, nil
	})

	table := idemadmin.Table{DB: db, Name: "idempotency", Layout: layout}
	rec, err := table.Lookup(ctx, scope)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Principal)
	fmt.Println(rec.Status, rec.ResponseStatus, rec.Fingerprint, rec.Writes)

	if _, err := table.Evict(ctx, scope, idemadmin.EvictOptions{}); err != nil {
		log.Fatal(err)
	}
	_, err = table.Lookup(ctx, scope)
	fmt.Println(errors.Is(err, idemadmin.ErrNotFound))
	// Output:
	// jwt:"https://auth.example.com/":sub="user-1"
	// COMPLETED 202 fp 0
	// true
}

// A span shows a scope hash (idem.scope_hash) and the operation; the
// operator, who holds the key the functions hash scopes with, finds the
// record.
func ExampleTable_Find() {
	ctx := context.Background()
	srv := idemtest.Start() // stands in for dynamodb.NewFromConfig(cfg)
	defer srv.Close()
	db := srv.Client()
	if err := idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	// The functions' key (idemotel.WithScopeHasher), from the secrets.
	hasher, err := idemtrace.NewScopeHasher([]byte("32 random bytes from the secrets"))
	if err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(db, "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"order-4710", "order-4711", "order-4712"} {
		scope, _ := idem.NewScope("POST /orders", "user-42", key)
		_, _ = store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
	}
	seen, _ := idem.NewScope("POST /orders", "user-42", "order-4711")
	spanHash := hasher.Hash(seen.ID()) // what the span shows

	table := idemadmin.Table{DB: db, Name: "idempotency", ScopeHasher: hasher}
	recs, err := table.Find(ctx, "POST /orders", spanHash)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		fmt.Println(r.Principal, r.Key, r.Status)
	}
	// Output:
	// user-42 order-4711 COMPLETED
}
