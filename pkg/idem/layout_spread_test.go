package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// With the scope's ID in the partition key and a fixed sort key value, a
// scope ID takes what a partition key holds (2048 bytes less the
// prefix), not a sort key's 1024: the scope a static-partition layout
// refuses (TestLayoutLimitsTheScopeIDToItsKey) runs here, once.
func TestASortValueLayoutHoldsTheIDsAPartitionKeyHolds(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx := context.Background()
	layout := idemtable.Layout{PartitionKey: "PK", SortKey: "SK", SortValue: "#IDEMPOTENCY", KeyPrefix: "IDEM#"}
	table := env.Tables.Idempotency + "-spread"
	if err := idemtable.Create(ctx, env.Client, table, layout); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = env.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	s, err := idem.NewStore(env.Client, table, idem.WithLayout(layout))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := idem.NewScope("POST /"+strings.Repeat("x", 1000), "user-1", "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed} {
		if res, err := s.Execute(ctx, sc, "fp", effect(env)); err != nil || res.Outcome != want {
			t.Fatalf("%s, %v; want %s", res.Outcome, err, want)
		}
	}
	// One byte past what the key leaves behind the prefix: refused.
	var too idem.Scope
	for n := 2000; len(too.ID()) < layout.MaxIDLength()+1; n++ {
		if too, err = idem.NewScope("POST /"+strings.Repeat("x", n), "user-1", "k"); err != nil {
			t.Fatal(err)
		}
	}
	if len(too.ID()) != layout.MaxIDLength()+1 {
		t.Fatalf("built a scope ID of %d bytes, want %d", len(too.ID()), layout.MaxIDLength()+1)
	}
	if res, err := s.Execute(ctx, too, "fp", effect(env)); !errors.Is(err, idem.ErrInvalidKey) || res.Outcome != idem.OutcomeRejected {
		t.Errorf("a scope ID of %d bytes behind a 5-byte prefix: %s, %v; want rejected, ErrInvalidKey", len(too.ID()), res.Outcome, err)
	}
}
