package sellersqs

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// One batch at a time keeps its home; a move goes elsewhere and sticks.
func TestABatchKeepsItsEnvironmentsHomeUntilItMoves(t *testing.T) {
	t.Parallel()
	h := newHomes(sellers.Shards)
	home := h.take()
	h.give(home)
	for range 20 {
		s := h.take()
		assert.Equal(t, home, s, "one batch at a time writes one shard")
		h.give(s)
	}
	s := h.take()
	moved := h.move(s)
	assert.NotEqual(t, s, moved)
	assert.GreaterOrEqual(t, moved, 0)
	assert.Less(t, moved, sellers.Shards)
	h.give(moved)
	assert.Equal(t, moved, h.take(), "the next batch starts where the last one moved to")
}

// Concurrent batches of one consumer take different homes while there
// are free shards, and every move lands on a shard.
func TestConcurrentBatchesTakeDifferentHomes(t *testing.T) {
	t.Parallel()
	h := newHomes(sellers.Shards)
	var mu sync.Mutex
	taken := map[int]int{}
	var wg sync.WaitGroup
	for range sellers.Shards {
		wg.Go(func() {
			s := h.take()
			mu.Lock()
			taken[s]++
			mu.Unlock()
		})
	}
	wg.Wait()
	assert.Len(t, taken, sellers.Shards, "each of %d concurrent batches has its own shard: %v", sellers.Shards, taken)
	// All shards held: one more batch still gets one.
	s := h.take()
	assert.GreaterOrEqual(t, s, 0)
	assert.Less(t, s, sellers.Shards)

	one := newHomes(1)
	assert.Equal(t, 0, one.take())
	assert.Equal(t, 0, one.move(0), "one shard: nowhere else to go")
}

func cancelled(codes ...string) error {
	reasons := make([]types.CancellationReason, len(codes))
	for i, c := range codes {
		reasons[i] = types.CancellationReason{Code: aws.String(c)}
	}
	return &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons}
}

// fakeTx answers every TransactWriteItems with err.
type fakeTx struct {
	idem.API
	err error
}

func (f fakeTx) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, f.err
}

// The watched client tells a batch whether its shard was held: only a
// TransactionConflict on the sellers table's update says so, not one on
// an event's record or a record found there already. Unwatched, a batch
// takes the same items sent again as that sign.
func TestAConflictMovesTheBatchOnlyWhenItNamesItsShard(t *testing.T) {
	t.Parallel()
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("idempotency")}},
		{Put: &types.Put{TableName: aws.String("idempotency")}},
		{Update: &types.Update{TableName: aws.String("sellers")}},
	}}
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"shard held":          {cancelled("None", "None", "TransactionConflict"), true},
		"record held":         {cancelled("TransactionConflict", "None", "None"), false},
		"record and shard":    {cancelled("None", "TransactionConflict", "TransactionConflict"), true},
		"duplicate":           {cancelled("ConditionalCheckFailed", "None", "None"), false},
		"shard over its cap":  {cancelled("None", "None", "ConditionalCheckFailed"), false},
		"committed":           {nil, false},
		"no reasons":          {&types.TransactionCanceledException{}, false},
		"throttled, no shard": {cancelled("None", "ThrottlingError", "None"), false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seen := &conflicts{table: "sellers"}
			ctx := context.WithValue(context.Background(), conflictsKey{}, seen)
			_, err := WatchConflicts(fakeTx{err: c.err}).TransactWriteItems(ctx, in)
			assert.Equal(t, c.err, err, "the call's answer passes through")
			assert.Equal(t, c.want, seen.heldShard(true))
			assert.Equal(t, c.want, seen.heldShard(false), "what the reasons said, not the items")
		})
	}

	unwatched := &conflicts{table: "sellers"}
	_, err := fakeTx{err: cancelled("None", "None", "TransactionConflict")}.TransactWriteItems(context.WithValue(context.Background(), conflictsKey{}, unwatched), in)
	require.Error(t, err)
	assert.True(t, unwatched.heldShard(true), "unwatched: the same items again")
	assert.False(t, unwatched.heldShard(false))
}
