package tracing_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

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

func TestTraceIDAndValid(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1": "1-5759e988-bd862e3fe1be46a994272793",
		"Parent=53995c3f42cd8ad8; Root=1-5759e988-bd862e3fe1be46a994272793":          "1-5759e988-bd862e3fe1be46a994272793",
		"": "", "Root=": "", "Sampled=1": "",
		"Root=2-5759e988-bd862e3fe1be46a994272793":  "", // version
		"Root=1-5759e98-bd862e3fe1be46a994272793":   "", // epoch length
		"Root=1-5759e988-bd862e3fe1be46a99427279":   "", // random length
		"Root=1-5759e988-BD862E3FE1BE46A994272793":  "", // X-Ray writes lower case
		"Root=1-5759e988-bd862e3fe1be46a99427279g":  "",
		"Root=1-5759e988-bd862e3fe1be46a994272793x": "",
	} {
		assert.Equal(t, want, tracing.TraceID(h), "%q", h)
		assert.Equal(t, want != "", tracing.Valid(h), "%q", h)
	}
	long := "Root=1-5759e988-bd862e3fe1be46a994272793;Lineage=" + strings.Repeat("a", tracing.MaxHeaderBytes)
	assert.False(t, tracing.Valid(long), "longer than PutEvents takes")
}

func TestNewIsXRayFormat(t *testing.T) {
	t.Parallel()
	at := time.Unix(0x5759e988, 0)
	format := regexp.MustCompile(`^Root=1-5759e988-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=1$`)
	a, b := tracing.New(at), tracing.New(at)
	assert.Regexp(t, format, a)
	assert.NotEqual(t, tracing.TraceID(a), tracing.TraceID(b))
	assert.True(t, tracing.Valid(a))
}
