package sellersqs

import (
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/idemlambda/idemlambda/internal/sellers"
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

// A batch moves only when the shared writes pkg/idem reports contended
// include its shard's update of the sellers table, not for a conflict on
// an event's record or another table's item.
func TestAConflictMovesTheBatchOnlyWhenItNamesItsShard(t *testing.T) {
	t.Parallel()
	shard := types.TransactWriteItem{Update: &types.Update{TableName: aws.String("sellers")}}
	other := types.TransactWriteItem{Update: &types.Update{TableName: aws.String("elsewhere")}}
	assert.True(t, heldShard([]types.TransactWriteItem{shard}, "sellers"))
	assert.True(t, heldShard([]types.TransactWriteItem{other, shard}, "sellers"))
	assert.False(t, heldShard([]types.TransactWriteItem{other}, "sellers"))
	assert.False(t, heldShard(nil, "sellers"), "no shared write contended")
}
