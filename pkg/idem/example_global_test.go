package idem_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// On a global table with multi-Region strong consistency (here the test
// store's simulation of one, in three Regions), which supports no
// transaction, an operation whose effect is DynamoDB writes commits all
// the same: its writes are recorded with the key's completion, then each
// applied once. A duplicate in another Region replays the response, and
// the order and the count landed once.
func ExampleStore_Execute_mrsc() {
	ctx := context.Background()
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{"us-east-1", "us-east-2", "us-west-2"}})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	east, west := g.Region("us-east-1").HandlerClient(), g.Region("us-west-2").HandlerClient()
	// A replica in each Region; no TTL, which MRSC does not support.
	if err := idemtable.Create(ctx, east, "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	for _, table := range []string{"orders", "counts"} {
		if _, err := east.CreateTable(ctx, idemtable.Input(table, idemtable.Layout{})); err != nil {
			log.Fatal(err)
		}
	}
	storeEast, err := idem.NewStore(east, "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	info, err := storeEast.Learn(ctx) // at init: one DescribeTable
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("table:", info.Kind, "in", info.Region, "with replicas in", info.Replicas)

	placeOrder := func(context.Context) (idem.Effect, error) {
		return idem.Effect{
			Response: idem.Response{Body: []byte(`{"order":"o-1"}`)},
			Writes: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String("orders"), // created once
					Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "o-1"}},
					ConditionExpression: aws.String("attribute_not_exists(id)")}},
				{Update: &types.Update{TableName: aws.String("counts"), // counted once
					Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "orders"}},
					UpdateExpression:          aws.String("ADD n :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}},
			},
		}, nil
	}
	scope, err := idem.NewScope("POST /orders", "customer-7", "order-key-1")
	if err != nil {
		log.Fatal(err)
	}
	res, err := storeEast.Execute(ctx, scope, "fp", placeOrder)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("us-east-1:", res.Outcome)

	storeWest, err := idem.NewStore(west, "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	res, err = storeWest.Execute(ctx, scope, "fp", placeOrder)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("us-west-2:", res.Outcome, string(res.Response.Body))

	count, err := west.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("counts"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "orders"}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("orders counted:", count.Item["n"].(*types.AttributeValueMemberN).Value)
	fmt.Println("transactions sent:", g.Region("us-east-1").Calls(idemtest.OpTransactWriteItems)+g.Region("us-west-2").Calls(idemtest.OpTransactWriteItems))
	// Output:
	// table: MRSC in us-east-1 with replicas in [us-east-2 us-west-2]
	// us-east-1: executed
	// us-west-2: replayed {"order":"o-1"}
	// orders counted: 1
	// transactions sent: 0
}

// A table without TTL (multi-Region strong consistency supports none)
// keeps its expired records until a sweep deletes them: schedule one (an
// EventBridge Scheduler rule invoking a function that calls Sweep). A
// record still live, or whose writes still wait, is never deleted.
func ExampleStore_Sweep() {
	ctx := context.Background()
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{"us-east-1", "us-east-2", "us-west-2"}})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	db := g.Region("us-east-1").HandlerClient()
	if err := idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	// A short retention, for the example to see a record expire.
	store, err := idem.NewStore(db, "idempotency", idem.WithLease(time.Second, 0), idem.WithRetention(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"mail-1", "mail-2"} {
		scope, err := idem.NewScope("send mail", "billing", key)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil }); err != nil {
			log.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // past the retention, to the second

	stats, err := store.Sweep(ctx, idem.SweepOptions{PageSize: 100})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("scanned %d, deleted %d\n", stats.Scanned, stats.Deleted)
	// Output:
	// scanned 2, deleted 2
}
