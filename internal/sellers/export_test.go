package sellers

// SetLimit lowers the largest total a Counter stores, so the overflow path
// can be tested on a backend whose numbers are float64 (the embedded
// store), which cannot compare values near math.MaxInt64 exactly.
func SetLimit(c *Consumer, limit int64) { c.apply.(*Counter).limit = limit }
