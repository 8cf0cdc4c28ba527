package idemtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// putOwner writes the item id with an owner under attribute_not_exists,
// as an idempotency claim does.
func putOwner(ctx context.Context, db *dynamodb.Client, id, owner string) error {
	it := key(id)
	it["owner"] = &types.AttributeValueMemberS{Value: owner}
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("things"), Item: it,
		ConditionExpression: aws.String("attribute_not_exists(id)")})
	return err
}

// owner reads the item's owner in one Region ("" for none).
func owner(ctx context.Context, db *dynamodb.Client, id string) string {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("things"), Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return ""
	}
	return out.Item["owner"].(*types.AttributeValueMemberS).Value
}

// A global table with multi-Region eventual consistency: each Region's
// conditional write sees its own replica, so under replication lag a key
// is claimed in both; once replication catches up (Settle stands in for
// the lag passing), last writer wins everywhere, and each Region's stream
// has carried the other's write.
func ExampleNewGlobal() {
	ctx := context.Background()
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{"us-east-1", "eu-west-1"}, Lag: time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	east, west := g.Region("us-east-1").HandlerClient(), g.Region("eu-west-1").HandlerClient()
	if err := createTable(ctx, east, "things"); err != nil { // created in both Regions
		fmt.Println(err)
		return
	}

	fmt.Println("claimed in us-east-1:", putOwner(ctx, east, "order-1", "east") == nil)
	fmt.Println("claimed in eu-west-1:", putOwner(ctx, west, "order-1", "west") == nil)
	fmt.Println("on their way to eu-west-1:", g.Pending("eu-west-1"))

	g.Settle()
	fmt.Println("owner in us-east-1:", owner(ctx, east, "order-1"))
	fmt.Println("owner in eu-west-1:", owner(ctx, west, "order-1"))
	for _, r := range g.Region("us-east-1").Stream("things").Read() {
		fmt.Println("us-east-1 stream:", r.EventName, "from", r.Origin)
	}
	fmt.Printf("%+v\n", g.Stats())
	// Output:
	// claimed in us-east-1: true
	// claimed in eu-west-1: true
	// on their way to eu-west-1: 1
	// owner in us-east-1: west
	// owner in eu-west-1: west
	// us-east-1 stream: INSERT from us-east-1
	// us-east-1 stream: MODIFY from eu-west-1
	// {Replicated:1 Superseded:1 Merged:0 WriteConflicts:0 Unavailable:0}
}

// A global table with multi-Region strong consistency, over loopback HTTP:
// a write needs its Region and one more of the three; the Region cut from
// the others fails its writes, the others go on, and it has caught up
// once reconnected.
func ExampleGlobal_Isolate() {
	ctx := context.Background()
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{"us-east-1", "us-east-2", "us-west-2"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	g.Start()
	fast := func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
	}
	east, west := g.Region("us-east-1").Client(fast), g.Region("us-west-2").Client(fast)
	if err := createTable(ctx, east, "things"); err != nil {
		fmt.Println(err)
		return
	}

	_ = g.Isolate("us-west-2")
	var api smithy.APIError
	if err := putOwner(ctx, west, "order-1", "west"); errors.As(err, &api) {
		fmt.Println("us-west-2, isolated:", api.ErrorCode())
	}
	fmt.Println("us-east-1 claims:", putOwner(ctx, east, "order-1", "east") == nil)
	_ = g.Reconnect("us-west-2")
	fmt.Println("owner in us-west-2:", owner(ctx, west, "order-1"))
	// Output:
	// us-west-2, isolated: InternalServerError
	// us-east-1 claims: true
	// owner in us-west-2: east
}
