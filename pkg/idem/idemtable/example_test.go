package idemtable_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// A single-table design: every record in partition "IDEMPOTENCY", the
// scope's ID behind a prefix in the sort key, the expiry in "ttl".
func ExampleLayout() {
	ctx := context.Background()
	srv := idemtest.Start() // stands in for dynamodb.NewFromConfig(cfg)
	defer srv.Close()
	client := srv.Client()

	layout := idemtable.Layout{
		PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY", KeyPrefix: "IDEM#",
		Attributes: idemtable.Attributes{ExpiresAt: "ttl"},
	}
	if err := idemtable.Create(ctx, client, "app", layout); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(client, "app", idem.WithLayout(layout))
	if err != nil {
		log.Fatal(err)
	}
	scope, _ := idem.NewScope("POST /orders", "user-1", "k-1")
	_, err = store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 201, Body: []byte(`{"id":"o-1"}`)}, nil
	})
	if err != nil {
		log.Fatal(err)
	}

	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("app"), Key: layout.Key(scope.ID()), ConsistentRead: aws.Bool(true)})
	if err != nil {
		log.Fatal(err)
	}
	s := func(name string) string { return out.Item[name].(*types.AttributeValueMemberS).Value }
	fmt.Println("PK:", s("PK"))
	fmt.Println("SK:", s("SK"))
	fmt.Println("status:", s("status"))
	fmt.Println("has ttl:", out.Item["ttl"] != nil)
	fmt.Println("LeadingKeys:", layout.LeadingKeyPrefix("POST /orders"))
	// Output:
	// PK: IDEMPOTENCY
	// SK: IDEM#v1|12:POST /orders|6:user-1|3:k-1
	// status: COMPLETED
	// has ttl: true
	// LeadingKeys: IDEMPOTENCY
}

// A prefix in a table shared with other items: the IAM condition still
// confines a role to one operation.
func ExampleLayout_LeadingKeyPrefix() {
	layout := idemtable.Layout{KeyPrefix: "IDEMPOTENCY#"}
	fmt.Println(layout.LeadingKeyPrefix("POST /orders") + "*")
	// Output: IDEMPOTENCY#v1|12:POST /orders|*
}
