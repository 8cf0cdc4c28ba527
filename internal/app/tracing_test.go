package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

func TestNoExporterTracesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []config.Tracing{{}, {Exporter: config.ExporterNone, Propagators: []string{"xray"}}} {
		tr, err := Tracing(c, "getproduct", &bytes.Buffer{})
		require.NoError(t, err)
		assert.Nil(t, tr)
		assert.False(t, tr.On())
	}
}

// A span ended in an invocation is exported before the invocation
// answers: the batch would otherwise keep it (5 s, or 512 spans) while
// Lambda froze the environment. The span names the function as its
// service unless OTEL_SERVICE_NAME does.
func TestFlushedExportsAtTheEndOfEachInvocation(t *testing.T) {
	t.Parallel()
	var out logbuf.Buffer
	tr, err := Tracing(config.Tracing{Exporter: config.ExporterConsole}, "getproduct", &out)
	require.NoError(t, err)
	h := Flushed(func(ctx context.Context, in map[string]string) (string, error) {
		_, span := tr.Tracer("test").Start(ctx, "work "+in["n"])
		span.End()
		return "done", nil
	}, tr, Logger(config.Common{}, &out))
	handler, ok := h.(interface {
		Invoke(context.Context, []byte) ([]byte, error)
	})
	require.True(t, ok, "a lambda.Handler")
	for n := range 3 {
		resp, err := handler.Invoke(context.Background(), []byte(`{"n":"`+string(rune('0'+n))+`"}`))
		require.NoError(t, err)
		assert.JSONEq(t, `"done"`, string(resp))
		lines := out.Logs()
		require.Len(t, lines, n+1, "invocation %d's span is out when it answers", n)
		var span struct {
			Name     string
			Resource []struct {
				Key   string
				Value struct{ Value any }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(lines[n]), &span), lines[n])
		assert.Equal(t, "work "+string(rune('0'+n)), span.Name)
		service := ""
		for _, kv := range span.Resource {
			if kv.Key == "service.name" {
				service, _ = kv.Value.Value.(string)
			}
		}
		assert.Equal(t, "getproduct", service)
	}
}

// A collector that is not there costs an invocation a logged warning
// and at most FlushTimeout, never its answer.
func TestAFailedFlushIsLoggedNotReturned(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest) // not retried
	}))
	defer dead.Close()
	var out logbuf.Buffer
	tr, err := Tracing(config.Tracing{Exporter: config.ExporterOTLP, Endpoint: dead.URL}, "getproduct", &out)
	require.NoError(t, err)
	h := Flushed(func(ctx context.Context) (string, error) {
		_, span := tr.Tracer("test").Start(ctx, "work")
		span.End()
		return "done", nil
	}, tr, Logger(config.Common{}, &out)).(interface {
		Invoke(context.Context, []byte) ([]byte, error)
	})
	start := time.Now()
	resp, err := h.Invoke(context.Background(), []byte(`{}`))
	require.NoError(t, err)
	assert.JSONEq(t, `"done"`, string(resp))
	assert.Less(t, time.Since(start), FlushTimeout+500*time.Millisecond)
	assert.Contains(t, out.String(), `"msg":"spans not exported"`)
}

// With tracing on, each AWS SDK call is a client span of the function's
// trace, and its request carries the trace header the propagators name;
// off, the request carries none.
func TestClientCallsAreSpans(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var headers []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.Header.Get("X-Amzn-Trace-Id"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	a := config.AWS{Region: "us-east-1", AccessKeyID: "a", SecretAccessKey: "s", Endpoint: srv.URL}
	get := func(db *dynamodb.Client, ctx context.Context) {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("products"),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "1"}}})
		require.NoError(t, err)
	}

	rec := tracetest.NewSpanRecorder()
	on, err := Tracing(config.Tracing{Propagators: []string{config.PropagatorXRay}}, "getproduct", &bytes.Buffer{}, rec)
	require.NoError(t, err)
	db, err := Client(a, on, dynamodb.NewFromConfig)
	require.NoError(t, err)
	ctx, parent := on.Tracer("test").Start(context.Background(), "GET /products/{id}")
	get(db, ctx)
	parent.End()

	off, err := Client(a, nil, dynamodb.NewFromConfig)
	require.NoError(t, err)
	get(off, ctx)

	var call sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), "DynamoDB") {
			call = s
		}
	}
	require.NotNil(t, call, "the call is a span: %v", rec.Ended())
	assert.Equal(t, "DynamoDB.GetItem", call.Name())
	assert.Equal(t, trace.SpanKindClient, call.SpanKind())
	assert.Equal(t, parent.SpanContext().SpanID(), call.Parent().SpanID())
	require.Len(t, headers, 2)
	assert.Equal(t, tracing.XRayHeader(trace.ContextWithSpanContext(context.Background(), call.SpanContext())), headers[0],
		"the traced request carries its span's X-Ray header")
	assert.Empty(t, headers[1], "an untraced client adds no header")
}

// blockingProvider is a tracer provider whose flush waits for its
// context, as one does whose collector never answers.
type blockingProvider struct {
	noop.TracerProvider
}

func (blockingProvider) ForceFlush(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (blockingProvider) Shutdown(context.Context) error { return nil }

// The flush never runs the invocation past its deadline: an answer sent
// at the deadline is a timeout, which for the relay retries its whole
// batch and for an API function turns a done request into a 5xx.
// Whatever the handler left of its time, the flush leaves FlushMargin
// of it to answer in. In fake time (testing/synctest), so that the
// machine's load cannot eat into the margin the test measures.
func TestFlushLeavesTimeToAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tr := tracing.New(blockingProvider{}, nil)
		var out logbuf.Buffer
		h := Flushed(func(context.Context) (string, error) { return "done", nil }, tr, Logger(config.Common{}, &out)).(interface {
			Invoke(context.Context, []byte) ([]byte, error)
		})
		for _, left := range []time.Duration{300 * time.Millisecond, FlushMargin / 2} {
			ctx, cancel := context.WithTimeout(context.Background(), left)
			dl, _ := ctx.Deadline()
			resp, err := h.Invoke(ctx, []byte(`{}`))
			answered := time.Now()
			cancel()
			require.NoError(t, err)
			assert.JSONEq(t, `"done"`, string(resp))
			assert.True(t, answered.Before(dl), "answered %v after the deadline (%v left)", answered.Sub(dl), left)
			if left > 2*FlushMargin {
				assert.GreaterOrEqual(t, dl.Sub(answered), FlushMargin, "%v left", left)
			}
		}
	})
}
