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

func createTable(ctx context.Context, db *dynamodb.Client, name string) error {
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	return err
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}
}

// A write to an item of a running transaction is refused, as DynamoDB
// refuses it: the transaction is parked with Hold while the PutItem runs.
func ExampleServer_Hold() {
	ctx := context.Background()
	store := idemtest.Start()
	defer store.Close()
	db := store.Client()
	if err := createTable(ctx, db, "things"); err != nil {
		fmt.Println(err)
		return
	}

	hold := store.Hold(idemtest.OpTransactWriteItems)
	done := make(chan error)
	go func() {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String("things"), Item: key("a")}},
		}})
		done <- err
	}()
	<-hold.Arrived()

	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("things"), Item: key("a")})
	var conflict *types.TransactionConflictException
	fmt.Println("PutItem during the transaction:", errors.As(err, &conflict))
	got, _ := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("things"), Key: key("a"), ConsistentRead: aws.Bool(true)})
	fmt.Println("read sees the transaction's item:", got.Item != nil)

	hold.Release()
	fmt.Println("transaction:", <-done)
	fmt.Println("PutItem calls:", store.Calls(idemtest.OpPutItem))
	// Output:
	// PutItem during the transaction: true
	// read sees the transaction's item: false
	// transaction: <nil>
	// PutItem calls: 1
}

// A failed condition returns the item that failed it, as DynamoDB does
// with ReturnValuesOnConditionCheckFailure ALL_OLD, so no second read is
// needed.
func ExampleServer_allOld() {
	ctx := context.Background()
	store := idemtest.Start()
	defer store.Close()
	db := store.Client()
	if err := createTable(ctx, db, "things"); err != nil {
		fmt.Println(err)
		return
	}
	item := key("a")
	item["owner"] = &types.AttributeValueMemberS{Value: "first"}
	put := &dynamodb.PutItemInput{
		TableName: aws.String("things"), Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if _, err := db.PutItem(ctx, put); err != nil {
		fmt.Println(err)
		return
	}
	_, err := db.PutItem(ctx, put)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		fmt.Println("owner:", ccf.Item["owner"].(*types.AttributeValueMemberS).Value)
	}
	// Output:
	// owner: first
}

// A write whose answer is lost has landed: the SDK's retry meets it.
func ExampleServer_Inject() {
	ctx := context.Background()
	store := idemtest.Start()
	defer store.Close()
	db := store.Client()
	if err := createTable(ctx, db, "things"); err != nil {
		fmt.Println(err)
		return
	}
	store.Inject(idemtest.OpPutItem, idemtest.LostAnswer, 1)
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("things"), Item: key("a"),
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	})
	var ccf *types.ConditionalCheckFailedException
	fmt.Println("the retry found the first attempt's item:", errors.As(err, &ccf))
	fmt.Println("PutItem calls:", store.Calls(idemtest.OpPutItem))
	// Output:
	// the retry found the first attempt's item: true
	// PutItem calls: 2
}

// A transaction DynamoDB cancels for a reason a test cannot provoke on
// demand (here throttling on the second item): the reasons line up with
// the items, and nothing is written.
func ExampleServer_InjectCancellation() {
	ctx := context.Background()
	store := idemtest.Start()
	defer store.Close()
	db := store.Client()
	if err := createTable(ctx, db, "things"); err != nil {
		fmt.Println(err)
		return
	}
	store.InjectCancellation("ThrottlingError", 1, 1)
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("things"), Item: key("a")}},
		{Put: &types.Put{TableName: aws.String("things"), Item: key("b")}},
	}})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			fmt.Println(i, aws.ToString(r.Code))
		}
	}
	fmt.Println("attempts:", store.Calls(idemtest.OpTransactWriteItems))
	// Output:
	// 0 None
	// 1 ThrottlingError
	// attempts: 1
}

// Throttling that outlasts the SDK's retries: every attempt of the call
// is refused, so the error reaches the caller, as it does on AWS when a
// table stays throttled.
func ExampleThrottledPastRetries() {
	ctx := context.Background()
	store := idemtest.Start()
	defer store.Close()
	// The standard retryer (3 attempts), with short backoffs.
	db := store.Client(func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
	})
	if err := createTable(ctx, db, "things"); err != nil {
		fmt.Println(err)
		return
	}
	store.Inject(idemtest.OpPutItem, idemtest.ThrottledPastRetries, 1)
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("things"), Item: key("a")})
	var api smithy.APIError
	if errors.As(err, &api) {
		fmt.Println(api.ErrorCode())
	}
	fmt.Println("attempts:", store.Calls(idemtest.OpPutItem))
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("things"), Item: key("a")})
	fmt.Println("next call:", err)
	// Output:
	// ThrottlingException
	// attempts: 3
	// next call: <nil>
}
