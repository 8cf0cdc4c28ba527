package idem_test

import (
	"context"
	"fmt"
	"log"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// ExecuteBatch applies a batch of messages (here, top-ups of wallets) in
// one transaction: each message's record, and one update per wallet with
// the sum of its messages. A redelivered message replays; the batch's new
// messages commit without it, and its wallet is not credited twice.
func ExampleStore_ExecuteBatch() {
	client, stop := localDynamoDB()
	defer stop()
	ctx := context.Background()
	if _, err := client.CreateTable(ctx, idemtable.Input("wallets", idemtable.Layout{})); err != nil {
		log.Fatal(err)
	}
	store, err := idem.NewStore(client, "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	type topUp struct {
		msgID, wallet string
		cents         int
	}
	apply := func(msgs []topUp) {
		items := make([]idem.BatchItem, len(msgs))
		for i, m := range msgs {
			scope, err := idem.NewScope("wallet top-up", "payments", m.msgID)
			if err != nil {
				log.Fatal(err)
			}
			fp, _ := idem.Fingerprint(map[string]any{"wallet": m.wallet, "cents": m.cents})
			items[i] = idem.BatchItem{Scope: scope, Fingerprint: fp, Response: idem.Response{}}
		}
		// The writes of exactly the messages that execute: one ADD per
		// wallet, so a hot wallet is one item in the transaction.
		perWallet := func(executing []int, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			sums := map[string]int{}
			for _, i := range executing {
				sums[msgs[i].wallet] += msgs[i].cents
			}
			var writes []types.TransactWriteItem
			for _, w := range []string{"alice", "bob"} { // a fixed order, for the example's output
				if sums[w] == 0 {
					continue
				}
				writes = append(writes, types.TransactWriteItem{Update: &types.Update{
					TableName:                 aws.String("wallets"),
					Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: w}},
					UpdateExpression:          aws.String("ADD cents :c"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberN{Value: strconv.Itoa(sums[w])}},
				}})
			}
			return writes, nil
		}
		results, err := store.ExecuteBatch(ctx, items, perWallet)
		if err != nil {
			log.Fatal(err)
		}
		for i, r := range results {
			fmt.Println(msgs[i].msgID, r.Outcome, r.Err)
		}
	}
	apply([]topUp{{"m-1", "alice", 500}, {"m-2", "bob", 250}, {"m-3", "alice", 100}})
	// The queue redelivers m-2 with two new messages.
	apply([]topUp{{"m-2", "bob", 250}, {"m-4", "bob", 50}, {"m-5", "alice", 1}})
	for _, w := range []string{"alice", "bob"} {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String("wallets"), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: w}},
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(w, out.Item["cents"].(*types.AttributeValueMemberN).Value)
	}
	// Output:
	// m-1 executed <nil>
	// m-2 executed <nil>
	// m-3 executed <nil>
	// m-2 replayed <nil>
	// m-4 executed <nil>
	// m-5 executed <nil>
	// alice 601
	// bob 300
}
