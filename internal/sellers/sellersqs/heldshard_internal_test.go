package sellersqs

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
)

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
