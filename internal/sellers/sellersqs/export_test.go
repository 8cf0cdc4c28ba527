package sellersqs

import (
	"math/big"

	"github.com/idemlambda/idemlambda/pkg/idem/idemshard"
)

// SetShardCap lowers the largest count or total the consumer's counter
// stores in one shard, so a full shard can be tested without 10^26
// events, and on a backend whose numbers are float64.
func SetShardCap(c *Consumer, limit int64) { c.batches.counter.Cap = big.NewInt(limit) }

// SetShards changes how many shards the consumer spreads a seller over,
// for the measurements behind sellers.Shards.
func SetShards(c *Consumer, n int) {
	c.batches.counter.Shards = n
	c.batches.shards = idemshard.New(n)
}
