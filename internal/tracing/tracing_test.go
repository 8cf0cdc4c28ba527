package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemlambda/idemlambda/internal/tracing"
)

func TestFromContextReadsAWSLambdaGosKey(t *testing.T) {
	t.Parallel()
	const h = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	assert.Equal(t, "", tracing.FromContext(context.Background()))
	// aws-lambda-go's invoke loop does exactly this with each invocation's
	// Lambda-Runtime-Trace-Id.
	//lint:ignore SA1029 the key aws-lambda-go uses
	lambdaCtx := context.WithValue(context.Background(), "x-amzn-trace-id", h)
	assert.Equal(t, h, tracing.FromContext(lambdaCtx))
	assert.Equal(t, h, tracing.FromContext(tracing.NewContext(context.Background(), h)))
}
