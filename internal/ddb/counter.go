package ddb

import (
	"context"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts DynamoDB requests sent, per operation. It sits after the
// SDK's retry middleware, so a retried call counts once per attempt: what the
// table is billed for and what a benchmark should report.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter { return &Counter{counts: map[string]int{}} }

// Option installs the counter on a DynamoDB client:
// dynamodb.NewFromConfig(cfg, counter.Option).
func (c *Counter) Option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, c.addTo)
}

func (c *Counter) addTo(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("idemlambda.CallCounter",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			c.add(awsmiddleware.GetOperationName(ctx))
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

func (c *Counter) add(op string) {
	c.mu.Lock()
	c.counts[op]++
	c.mu.Unlock()
}

// Snapshot returns a copy of the counts so far.
func (c *Counter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Get returns the count for one operation, such as "PutItem".
func (c *Counter) Get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[op]
}

// Total returns the number of requests of every operation.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Reset sets every count back to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	clear(c.counts)
	c.mu.Unlock()
}

// String formats the counts as "GetItem=1 PutItem=2", sorted by operation.
func (c *Counter) String() string {
	snap := c.Snapshot()
	ops := make([]string, 0, len(snap))
	for op := range snap {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var b strings.Builder
	for i, op := range ops {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(op)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(snap[op]))
	}
	return b.String()
}
