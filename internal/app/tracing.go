package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/otlp"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// Runtime is what a function's assembly is given beside its configuration
// and its clients.
type Runtime struct {
	// Out is the function's stdout: its JSON log and metrics lines, and
	// its spans with the console exporter.
	Out io.Writer
	// Tracing is what it traces with; nil records nothing.
	Tracing *tracing.Tracing
}

// FlushTimeout bounds the export of an invocation's spans at its end (and
// the invocation's own deadline bounds it too): a collector that does not
// answer costs an invocation this much at most, never its response.
const FlushTimeout = time.Second

// FlushMargin is the time the flush leaves before the invocation's
// deadline, to send the answer in: one sent at the deadline is a timeout
// (the relay's whole batch retried, an API request's 5xx).
const FlushMargin = 100 * time.Millisecond

// Tracing builds what the function named function traces with, from c:
// nil with no exporter (nothing is recorded or exported; the no-op
// tracers still pass the trace Lambda began on to the events). Otherwise
// the SDK's tracer provider: X-Ray's trace ids (their first 32 bits are
// the epoch second, as X-Ray requires of the traces it accepts), a
// parent-based sampler (Lambda's sampling decision, in its trace header,
// rules), spans batched to an OTLP/HTTP exporter (internal/otlp) sending to c.Endpoint
// or, for console, one JSON line each to out. The AWS SDK's requests carry
// the headers c.Propagators name. extra adds span processors, before the
// exporter's (tests record spans with one).
func Tracing(c config.Tracing, function string, out io.Writer, extra ...sdktrace.SpanProcessor) (*tracing.Tracing, error) {
	var exporter sdktrace.SpanExporter
	switch c.Exporter {
	case config.ExporterNone, "":
		if len(extra) == 0 {
			return nil, nil
		}
	case config.ExporterOTLP:
		// internal/otlp, not OpenTelemetry's otlptracehttp: the same
		// requests without the gRPC code that one links, which doubled
		// every bootstrap and its start (docs/development.md, Start time).
		exporter = otlp.New(strings.TrimSuffix(c.Endpoint, "/")+"/v1/traces", nil)
	case config.ExporterConsole:
		exp, err := stdouttrace.New(stdouttrace.WithWriter(out))
		if err != nil {
			return nil, fmt.Errorf("app: console exporter: %w", err)
		}
		exporter = exp
	default:
		return nil, fmt.Errorf("app: unknown exporter %q", c.Exporter)
	}
	service := c.ServiceName
	if service == "" {
		service = function
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL,
			semconv.ServiceName(service), semconv.CloudProviderAWS, semconv.CloudPlatformAWSLambda,
			semconv.FaaSName(function))),
		sdktrace.WithIDGenerator(xray.NewIDGenerator()),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
	}
	for _, p := range extra {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	if exporter != nil {
		opts = append(opts, sdktrace.WithBatcher(exporter))
	}
	return tracing.New(sdktrace.NewTracerProvider(opts...), propagator(c.Propagators)), nil
}

// propagator is the composite of the named propagators (config has
// checked the names).
func propagator(names []string) propagation.TextMapPropagator {
	var ps []propagation.TextMapPropagator
	for _, n := range names {
		switch n {
		case config.PropagatorTraceContext:
			ps = append(ps, propagation.TraceContext{})
		case config.PropagatorBaggage:
			ps = append(ps, propagation.Baggage{})
		case config.PropagatorXRay:
			ps = append(ps, xray.Propagator{})
		}
	}
	return propagation.NewCompositeTextMapPropagator(ps...)
}

// Flushed returns h, any handler lambda.Start takes, as one that exports
// t's spans at the end of each invocation, before it answers: Lambda may
// freeze the environment once the invocation is answered, and a span
// left in the batch would wait for the next invocation, or be lost with
// the environment. The flush takes at most FlushTimeout and ends
// FlushMargin before the invocation's deadline, so the answer is never
// late for it. A failed export is logged to log, never the invocation's
// failure. With t off, h itself: nothing to flush.
func Flushed(h any, t *tracing.Tracing, log *slog.Logger) any {
	if !t.On() {
		return h
	}
	return flushed{inner: lambda.NewHandler(h), tracing: t, log: log}
}

type flushed struct {
	inner   lambda.Handler
	tracing *tracing.Tracing
	log     *slog.Logger
}

func (f flushed) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := f.inner.Invoke(ctx, payload)
	until := time.Now().Add(FlushTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-FlushMargin).Before(until) {
		until = dl.Add(-FlushMargin)
	}
	if !time.Now().Before(until) {
		// No time left to flush in: the spans stay in the batch, for the
		// next invocation's flush, and the answer goes out in time.
		f.log.WarnContext(ctx, "spans not exported", slog.String("err", "no time left before the invocation's deadline"))
		return out, err
	}
	fctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	if ferr := f.tracing.Flush(fctx); ferr != nil {
		f.log.WarnContext(ctx, "spans not exported", slog.Any("err", ferr))
	}
	return out, err
}
