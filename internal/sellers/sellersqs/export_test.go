package sellersqs

import "github.com/idemlambda/idemlambda/pkg/idem/idemshard"

// SetLimit lowers the largest total the consumer's counter stores, so the
// overflow path can be tested on a backend whose numbers are float64,
// which cannot compare values near math.MaxInt64 exactly.
func SetLimit(c *Consumer, limit int64) { c.batches.counter.Limit = limit }

// SetShards changes how many shards the consumer spreads a seller over,
// for the measurements behind sellers.Shards.
func SetShards(c *Consumer, n int) {
	c.batches.counter.Shards = n
	c.batches.shards = idemshard.New(n)
}
