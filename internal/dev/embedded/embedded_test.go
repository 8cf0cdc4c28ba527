package embedded_test

import (
	"context"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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

func TestResponsesCarryDynamoDBCRC32(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(embedded.New())
	defer srv.Close()
	for _, tc := range []struct{ target, body string }{
		{"DynamoDB_20120810.CreateTable", `{"TableName":"t","AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}],"KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`},
		{"DynamoDB_20120810.GetItem", `{"TableName":"missing","Key":{"id":{"S":"x"}}}`}, // an error response
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tc.body))
		require.NoError(t, err)
		req.Header.Set("X-Amz-Target", tc.target)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.NotEmpty(t, body)
		assert.Equal(t, strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10), resp.Header.Get("X-Amz-Crc32"), tc.target)
		assert.Equal(t, strconv.Itoa(len(body)), resp.Header.Get("Content-Length"))
	}
}

func TestTimeToLiveIsRecordedAndDescribed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(embedded.New())
	defer srv.Close()
	call := func(op, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := call("DescribeTimeToLive", `{"TableName":"t"}`)
	assert.Equal(t, 200, status)
	assert.JSONEq(t, `{"TimeToLiveDescription":{"TimeToLiveStatus":"DISABLED"}}`, body)
	status, _ = call("UpdateTimeToLive", `{"TableName":"t","TimeToLiveSpecification":{"AttributeName":"expires_at","Enabled":true}}`)
	assert.Equal(t, 200, status)
	_, body = call("DescribeTimeToLive", `{"TableName":"t"}`)
	assert.JSONEq(t, `{"TimeToLiveDescription":{"TimeToLiveStatus":"ENABLED","AttributeName":"expires_at"}}`, body)
	status, body = call("UpdateTimeToLive", `{"TableName":"t"}`)
	assert.Equal(t, 400, status)
	assert.Contains(t, body, "ValidationException")
}

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
	client, err := local.Client(ctx, srv.URL)
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
