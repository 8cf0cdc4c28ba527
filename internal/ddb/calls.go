package ddb

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// Calls counts the DynamoDB requests made with one context: one
// invocation's, for its metrics line. Like Counter, it counts attempts
// after the SDK's retries, so the figure an operator sees per request is
// the figure the benchmarks report.
type Calls struct {
	n      atomic.Int64
	parent *Calls
}

// Load returns the requests counted so far.
func (c *Calls) Load() int { return int(c.n.Load()) }

func (c *Calls) add() {
	for ; c != nil; c = c.parent {
		c.n.Add(1)
	}
}

type callsKey struct{}

// CountCalls returns a context whose DynamoDB requests add to the
// returned Calls, through any client built with CountPerContext (as
// NewClient builds them). Nested counts add to every enclosing one.
func CountCalls(ctx context.Context) (context.Context, *Calls) {
	parent, _ := ctx.Value(callsKey{}).(*Calls)
	c := &Calls{parent: parent}
	return context.WithValue(ctx, callsKey{}, c), c
}

// CountPerContext installs the per-context count on a client:
// dynamodb.NewFromConfig(cfg, ddb.CountPerContext). A request whose
// context carries no Calls costs one context lookup.
func CountPerContext(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("idemlambda.ContextCalls",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if c, ok := ctx.Value(callsKey{}).(*Calls); ok {
					c.add()
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}
