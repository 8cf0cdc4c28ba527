// Package deadline keeps work inside a Lambda invocation's time.
package deadline

import (
	"context"
	"time"
)

// Before returns ctx with its deadline moved margin earlier, so the work
// stops while there is still time to answer; without a deadline, or with
// less than twice the margin left, ctx's own deadline stands.
func Before(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) > 2*margin {
		return context.WithDeadline(ctx, dl.Add(-margin))
	}
	return context.WithCancel(ctx)
}
