package embedded_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/embedded"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
)

func TestOnPutReportsCommittedPutsInOrder(t *testing.T) {
	t.Parallel()
	store := embedded.New()
	var mu sync.Mutex
	var got []string
	store.OnPut(func(p embedded.Put) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p.Table+":"+p.Item["id"].String())
	})
	srv := httptest.NewServer(store)
	defer srv.Close()
	ctx := context.Background()
	client, err := local.Client(srv.URL)
	require.NoError(t, err)
	n := tables.Names{Products: "p", Idempotency: "i", Outbox: "o"}
	require.NoError(t, local.EnsureTables(ctx, client, n))
	item := func(id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}
	}
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("p"), Item: item("a")})
	require.NoError(t, err)
	// A failed conditional put is not reported.
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("p"), Item: item("a"), ConditionExpression: aws.String("attribute_not_exists(id)")})
	require.Error(t, err)
	_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("p"), Item: item("b")}},
		{Put: &types.Put{TableName: aws.String("i"), Item: item("c")}},
	}})
	require.NoError(t, err)
	// A cancelled transaction reports nothing.
	_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("p"), Item: item("d")}},
		{Put: &types.Put{TableName: aws.String("p"), Item: item("b"), ConditionExpression: aws.String("attribute_not_exists(id)")}},
	}})
	require.Error(t, err)
	_, err = client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"i": {{PutRequest: &types.PutRequest{Item: item("e")}}},
	}})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"p:a", "p:b", "i:c", "i:e"}, got)
}

// GET /consumed answers the units every request consumed, per table and
// operation, as DynamoDB bills them: a failed condition and a cancelled
// transaction too, though their answers carry no ConsumedCapacity.
func TestConsumedCountsEveryRequestTheAnswerCannot(t *testing.T) {
	t.Parallel()
	store := embedded.New()
	srv := httptest.NewServer(store)
	defer srv.Close()
	ctx := context.Background()
	client, err := local.Client(srv.URL)
	require.NoError(t, err)
	require.NoError(t, tables.Products.Create(ctx, client, "p", tables.CreateOptions{}))
	item := func(id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}
	}
	cond := aws.String("attribute_not_exists(id)")
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("p"), Item: item("a"), ConditionExpression: cond})
	require.NoError(t, err)
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("p"), Item: item("a"), ConditionExpression: cond})
	var ccf *types.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
	_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("p"), Item: item("b")}},
		{Put: &types.Put{TableName: aws.String("p"), Item: item("c")}},
	}})
	require.NoError(t, err)
	_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("p"), Item: item("d")}},
		{Put: &types.Put{TableName: aws.String("p"), Item: item("b"), ConditionExpression: cond}},
	}})
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	_, err = client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("p"), Key: item("a"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)

	resp, err := http.Get(srv.URL + embedded.ConsumedPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got map[string]map[string]embedded.Units
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	assert.Equal(t, map[string]embedded.Units{
		// The put, and the failed one: 1 unit each (items under 1 KB).
		"PutItem": {Write: 2, Requests: 2},
		// Two items, doubled; then the cancelled one's prepare: 1 a item.
		"TransactWriteItems": {Write: 2*2 + 2, Requests: 2},
		"GetItem":            {Read: 1, Requests: 1},
	}, got["p"])
	assert.Equal(t, got, store.Consumed())
}
