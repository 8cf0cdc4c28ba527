package idemshard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemshard"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// deposit is what a message asks for: cents to an account.
type deposit struct {
	Account string `json:"account"`
	Cents   int64  `json:"cents"`
}

// shards is the process's: one per Lambda execution environment, made
// at start-up and shared by its invocations.
var shards = idemshard.New(8)

// A queue consumer whose messages all credit a few hot accounts: each
// batch adds its deposits to one shard of each account (the account as
// partition key, the shard as sort key), and a read adds the shards up.
func Example() {
	ctx := context.Background()
	srv := idemtest.Start() // stands in for dynamodb.NewFromConfig(cfg)
	defer srv.Close()
	db := srv.Client()
	if err := idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}); err != nil {
		log.Fatal(err)
	}
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String("accounts"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("account"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("shard"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("account"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("shard"), KeyType: types.KeyTypeRange},
		},
	}); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(db, "idempotency")
	if err != nil {
		log.Fatal(err)
	}

	// The handler.
	deposits, err := idemsqs.New(store, "deposit", decode)
	if err != nil {
		log.Fatal(err)
	}
	handle := func(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
		batch := shards.Batch()
		defer batch.Done()
		resp, _ := deposits.Transact(ctx, ev, func(ds []deposit, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			shard := batch.Shard(len(contended) > 0)
			sums := map[string]int64{}
			for _, d := range ds {
				sums[d.Account] += d.Cents
			}
			var writes []types.TransactWriteItem
			for account, cents := range sums {
				writes = append(writes, types.TransactWriteItem{Update: &types.Update{
					TableName: aws.String("accounts"),
					Key: map[string]types.AttributeValue{
						"account": &types.AttributeValueMemberS{Value: account},
						"shard":   &types.AttributeValueMemberN{Value: strconv.Itoa(shard)},
					},
					UpdateExpression:          aws.String("ADD balance :c"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberN{Value: strconv.FormatInt(cents, 10)}},
				}})
			}
			return writes, nil
		})

		return resp
	}
	handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: `{"id":"ev-1","account":"hot","cents":500}`},
		{MessageId: "m-2", Body: `{"id":"ev-2","account":"hot","cents":250}`},
	}})
	handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-3", Body: `{"id":"ev-2","account":"hot","cents":250}`}, // a redelivery: replayed
		{MessageId: "m-4", Body: `{"id":"ev-3","account":"hot","cents":1}`},
	}})

	// The reader: one Query, the shards added up.
	out, err := db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String("accounts"),
		KeyConditionExpression:    aws.String("account = :a"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: "hot"}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		log.Fatal(err)
	}
	var balance int64
	for _, item := range out.Items {
		n, _ := strconv.ParseInt(item["balance"].(*types.AttributeValueMemberN).Value, 10, 64)
		balance += n
	}
	fmt.Println("balance:", balance)
	// Output: balance: 751
}

func decode(m events.SQSMessage) (idemsqs.Entry[deposit], error) {
	var v struct {
		ID string `json:"id"`
		deposit
	}
	if err := json.Unmarshal([]byte(m.Body), &v); err != nil {
		return idemsqs.Entry[deposit]{}, err
	}
	return idemsqs.Entry[deposit]{Principal: "bank", Key: v.ID, Value: v.deposit}, nil
}
