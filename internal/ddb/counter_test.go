package ddb_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
)

func TestCounterCountsEachRequestPerOperation(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t) // resets the counter after creating tables
	ctx := context.Background()
	item := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}

	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Products), Item: item})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	_, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Tables.Products), Key: item})
	require.NoError(t, err)
	// A failed call still reached the server once and counts.
	_, err = env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("no-such-table"), Key: item})
	require.Error(t, err)

	assert.Equal(t, 20, env.Counter.Get("PutItem"))
	assert.Equal(t, 2, env.Counter.Get("GetItem"))
	assert.Equal(t, 22, env.Counter.Total())
	assert.Equal(t, "GetItem=2 PutItem=20", env.Counter.String())
	assert.Equal(t, map[string]int{"GetItem": 2, "PutItem": 20}, env.Counter.Snapshot())

	env.Counter.Reset()
	assert.Zero(t, env.Counter.Total())
	assert.Empty(t, env.Counter.String())
}
