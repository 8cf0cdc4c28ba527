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

// A single-table design whose sort key is required, with each record in
// a partition of its own: the scope's ID behind a prefix in the partition
// key, a fixed sort key value. A role can be confined to one operation.
func ExampleLayout_sortValue() {
	ctx := context.Background()
	srv := idemtest.Start() // stands in for dynamodb.NewFromConfig(cfg)
	defer srv.Close()
	client := srv.Client()

	layout := idemtable.Layout{PartitionKey: "PK", SortKey: "SK", SortValue: "#IDEMPOTENCY", KeyPrefix: "IDEM#"}
	if err := idemtable.Create(ctx, client, "app", layout); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(client, "app", idem.WithLayout(layout))
	if err != nil {
		log.Fatal(err)
	}
	scope, _ := idem.NewScope("POST /orders", "user-1", "k-1")
	_, err = store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 201}, nil
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
	fmt.Println("LeadingKeys:", layout.LeadingKeyPrefix("POST /orders")+"*")
	// Output:
	// PK: IDEM#v1|12:POST /orders|6:user-1|3:k-1
	// SK: #IDEMPOTENCY
	// LeadingKeys: IDEM#v1|12:POST /orders|*
}
