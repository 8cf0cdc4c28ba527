package idemshard_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemshard"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// Another transaction holds the shard a batch starts on: the batch's
// transaction conflicts on it, the store says so, and the retry goes to
// another shard and commits there. The held shard gets nothing of the
// batch's, and the batch's deposits land once.
func TestABatchLeavesAHeldShardForAnother(t *testing.T) {
	srv := idemtest.New(t)
	db := srv.Client()
	ctx := context.Background()
	if err := idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("accounts"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("account"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("shard"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("account"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("shard"), KeyType: types.KeyTypeRange},
		},
	}); err != nil {
		t.Fatal(err)
	}
	store, err := idem.NewStore(db, "idempotency")
	if err != nil {
		t.Fatal(err)
	}
	credit := func(shard int, cents int64) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String("accounts"),
			Key: map[string]types.AttributeValue{
				"account": &types.AttributeValueMemberS{Value: "hot"},
				"shard":   &types.AttributeValueMemberN{Value: strconv.Itoa(shard)},
			},
			UpdateExpression:          aws.String("ADD balance :c"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberN{Value: strconv.FormatInt(cents, 10)}},
		}}
	}
	balance := func(shard int) int64 {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("accounts"), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{
				"account": &types.AttributeValueMemberS{Value: "hot"},
				"shard":   &types.AttributeValueMemberN{Value: strconv.Itoa(shard)},
			}})
		if err != nil {
			t.Fatal(err)
		}
		n, ok := out.Item["balance"].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}

	shards := idemshard.New(4)
	batch := shards.Batch()
	defer batch.Done()
	start := batch.Shard(false)

	// Another process's transaction holds that shard.
	held := srv.Hold(idemtest.OpTransactWriteItems)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer held.Release()
	wg.Go(func() {
		if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{credit(start, 1000)}}); err != nil {
			t.Error(err)
		}
	})
	<-held.Arrived()

	var used []int
	items := make([]idem.BatchItem, 3)
	for i := range items {
		sc, err := idem.NewScope("deposit", "bank", "ev-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		items[i] = idem.BatchItem{Scope: sc, Fingerprint: strconv.Itoa(i), Response: idem.Response{Status: 200}}
	}
	res, err := store.ExecuteBatch(ctx, items, func(executing []int, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		shard := batch.Shard(len(contended) > 0)
		used = append(used, shard)
		return []types.TransactWriteItem{credit(shard, int64(len(executing)))}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.Outcome != idem.OutcomeExecuted {
			t.Errorf("item %d: %s, %v", i, r.Outcome, r.Err)
		}
	}
	if len(used) != 2 || used[0] != start || used[1] == start {
		t.Errorf("shards of the batch's transactions: %v; want %d (held), then another", used, start)
	}
	held.Release()
	wg.Wait()
	if got := balance(start); got != 1000 {
		t.Errorf("the held shard's balance is %d, want the holder's 1000 alone", got)
	}
	if got := balance(used[len(used)-1]); got != 3 {
		t.Errorf("the batch's shard has %d, want its 3 deposits once", got)
	}
	if slices.Contains(used[1:], start) {
		t.Errorf("went back to the held shard: %v", used)
	}
}
