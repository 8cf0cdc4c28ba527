package sellers

// SetLimit lowers the largest total a Counter stores, so the overflow path
// can be tested on a backend whose numbers are float64 (the embedded
// store), which cannot compare values near math.MaxInt64 exactly.
func SetLimit(c *Consumer, limit int64) { c.apply.(*Counter).limit = limit }

// SetShards changes how many shards a Counter spreads a seller over, for
// the measurements behind Shards.
func SetShards(c *Consumer, n int) {
	c.apply.(*Counter).shards = n
	c.apply.(*Counter).homes = newHomes(n)
}
