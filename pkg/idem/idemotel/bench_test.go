package idemotel_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
)

// stubAPI answers every request at once, as a table where each key is
// fresh would (pkg/idem's BenchmarkCallCPU has the same): the benchmark
// measures the library's CPU per call and what tracing adds to it, with
// no store, no network and no SDK client.
type stubAPI struct{}

func (stubAPI) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, nil
}

func (stubAPI) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (stubAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}

func (stubAPI) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

func (stubAPI) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// BenchmarkCallCPU is the CPU per call of Execute (claim, effect,
// commit: four spans when traced) and Run (claim, effect, completion),
// each a first execution on the stub API: with no trace; with idemotel
// on a no-op provider (tracing off: NewTrace sets no hook); on the SDK
// with every span sampled out; and on the SDK recording every span,
// ended into a batch processor whose exporter drops them.
func BenchmarkCallCPU(b *testing.B) {
	sampled := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = sampled.Shutdown(context.Background()) })
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = unsampled.Shutdown(context.Background()) })
	tracings := []struct {
		name string
		opts []idem.Option
	}{
		{"off", nil},
		{"otel-noop", []idem.Option{idem.WithTrace(idemotel.NewTrace(noop.NewTracerProvider()))}},
		{"otel-sdk-unsampled", []idem.Option{idem.WithTrace(idemotel.NewTrace(unsampled))}},
		{"otel-sdk", []idem.Option{idem.WithTrace(idemotel.NewTrace(sampled))}},
	}
	effect := func(context.Context) (idem.Effect, error) {
		return idem.Effect{Response: idem.Response{Body: []byte(`{"id":"1"}`)}}, nil
	}
	response := func(context.Context) (idem.Response, error) {
		return idem.Response{Body: []byte(`{"id":"1"}`)}, nil
	}
	for _, tr := range tracings {
		for _, way := range []string{"execute", "run"} {
			b.Run(tr.name+"/"+way, func(b *testing.B) {
				s, err := idem.NewStore(stubAPI{}, "idempotency", tr.opts...)
				if err != nil {
					b.Fatal(err)
				}
				scopes := make([]idem.Scope, 1024)
				for i := range scopes {
					scopes[i] = scope(b, "cpu-"+strconv.Itoa(i))
				}
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					sc := scopes[i%len(scopes)]
					if way == "execute" {
						_, err = s.Execute(ctx, sc, "fp", effect)
					} else {
						_, err = s.Run(ctx, sc, "fp", response)
					}
					if err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}
