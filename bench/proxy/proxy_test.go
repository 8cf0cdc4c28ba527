package proxy_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/bench/proxy"
	"github.com/idemlambda/idemlambda/internal/dev/embedded"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
)

func TestProxyCountsEveryRequestByOperationAtTheEndpoint(t *testing.T) {
	t.Parallel()
	store := httptest.NewServer(embedded.New())
	t.Cleanup(store.Close)
	target, err := url.Parse(store.URL)
	require.NoError(t, err)
	p := proxy.New(target)
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)

	ctx := context.Background()
	client, err := local.Client(front.URL)
	require.NoError(t, err)
	require.NoError(t, tables.Products.Create(ctx, client, "p", tables.CreateOptions{}))
	p.Reset()

	item := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			_, _ = client.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String("p"), Item: item,
				ConditionExpression: aws.String("attribute_not_exists(id)"),
				// As both libraries ask: the proxy counts a failed
				// condition answered without the item apart.
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
		})
	}
	wg.Wait()
	_, err = client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("p"), Key: item})
	require.NoError(t, err)

	c := p.Snapshot()
	assert.Equal(t, map[string]int{"PutItem": 10, "GetItem": 1}, c.Ops)
	assert.Equal(t, map[string]int{"PutItem ConditionalCheckFailedException": 9}, c.Errors)
	assert.Equal(t, 11, c.Total())
	assert.Len(t, c.Micros, 2)
	assert.Positive(t, c.TotalMicros())

	// A failed call reached the endpoint and counts; its body still reaches the client.
	_, err = client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("missing"), Key: item})
	var nf *types.ResourceNotFoundException
	require.True(t, errors.As(err, &nf), "got %v", err)
	assert.Equal(t, 2, p.Snapshot().Ops["GetItem"])

	p.Reset()
	assert.Zero(t, p.Snapshot().Total())
}

func TestOperation(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "PutItem", proxy.Operation("DynamoDB_20120810.PutItem"))
	assert.Equal(t, "(none)", proxy.Operation(""))
}
