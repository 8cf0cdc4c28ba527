package ddb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
)

// Concurrent invocations on one client each see only their own calls,
// and together they add up to what the client-wide Counter saw.
func TestCountCallsIsPerContext(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	key := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}
	get := func(ctx context.Context) {
		_, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Tables.Products), Key: key})
		assert.NoError(t, err)
	}

	const workers = 16
	got := make([]int, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			ctx, calls := ddb.CountCalls(context.Background())
			for range i + 1 {
				get(ctx)
			}
			got[i] = calls.Load()
		})
	}
	get(context.Background()) // counted by the Counter, by no Calls
	wg.Wait()
	total := 1
	for i, n := range got {
		assert.Equal(t, i+1, n, "worker %d", i)
		total += n
	}
	assert.Equal(t, total, env.Counter.Total())

	outer, all := ddb.CountCalls(context.Background())
	get(outer)
	inner, part := ddb.CountCalls(outer)
	get(inner)
	get(inner)
	assert.Equal(t, 2, part.Load())
	assert.Equal(t, 3, all.Load(), "a nested count adds to the enclosing one")
}

// A failed call reached the server and counts, as the Counter counts it.
func TestCountCallsCountsFailedCalls(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	ctx, calls := ddb.CountCalls(context.Background())
	_, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("no-such-table"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}})
	require.Error(t, err)
	assert.Equal(t, 1, calls.Load())
	assert.Equal(t, env.Counter.Total(), calls.Load())
}

func ExampleCountCalls() {
	ctx, calls := ddb.CountCalls(context.Background())
	_ = ctx // pass ctx to every DynamoDB call of the invocation
	fmt.Println(calls.Load())
	// Output: 0
}
