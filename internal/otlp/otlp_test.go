package otlp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/idemlambda/idemlambda/internal/otlp"
)

// spans returns spans with every feature the encoding has: two resources,
// scopes with and without attributes and versions, every attribute type,
// parents local and remote, trace state, events, links, statuses, kinds
// and dropped counts.
func spans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	tid := trace.TraceID{0x5f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	ts, err := trace.ParseTraceState("vendor=a,other=b")
	require.NoError(t, err)
	sc := func(span byte, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{span, 1, 2, 3, 4, 5, 6, 7},
			TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: remote})
	}
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.43.0",
		attribute.String("service.name", "createproduct"), attribute.String("cloud.provider", "aws"))
	other := resource.NewSchemaless(attribute.String("service.name", "relay"))
	every := []attribute.KeyValue{
		attribute.String("s", "v"), attribute.String("empty", ""),
		attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("i", -42), attribute.Int64("zero", 0), attribute.Float64("x", 2.5), attribute.Float64("fzero", 0),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, -2, 0}),
		attribute.Float64Slice("fs", []float64{0.5, -1}), attribute.StringSlice("ss", []string{"a", ""}),
		{Key: "bytes", Value: attribute.ByteSliceValue([]byte{0, 1, 2})},
		{Key: "slice", Value: attribute.SliceValue(attribute.IntValue(1), attribute.StringValue("two"))},
		{Key: "map", Value: attribute.MapValue(attribute.String("k", "v"), attribute.Int("n", 3))},
		{Key: "none"},
	}
	start := time.Date(2026, 11, 3, 10, 0, 0, 123, time.UTC)
	stubs := tracetest.SpanStubs{
		{
			Name: "POST /products", SpanContext: sc(1, false), Parent: sc(9, true), SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: start.Add(3 * time.Millisecond), Attributes: every,
			Status:   sdktrace.Status{Code: codes.Error, Description: "boom"},
			Events:   []sdktrace.Event{{Name: "idem.in_flight", Time: start.Add(time.Millisecond), Attributes: every[:3], DroppedAttributeCount: 2}, {Name: "bare", Time: start}},
			Links:    []sdktrace.Link{{SpanContext: sc(7, true), Attributes: []attribute.KeyValue{attribute.String("messaging.message.id", "m-1")}, DroppedAttributeCount: 1}, {SpanContext: sc(8, false)}},
			Resource: res, InstrumentationScope: instrumentation.Scope{Name: "idemlambda", Version: "v1", SchemaURL: "https://opentelemetry.io/schemas/1.43.0"},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5, ChildSpanCount: 2,
		},
		{
			Name: "idem.claim", SpanContext: sc(2, false), Parent: sc(1, false), SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: start.Add(time.Millisecond), Status: sdktrace.Status{Code: codes.Ok},
			Resource: res, InstrumentationScope: instrumentation.Scope{Name: "idemotel", Attributes: attribute.NewSet(attribute.String("lib", "idem"))},
		},
		{
			Name: "DynamoDB.PutItem", SpanContext: sc(3, false), Parent: sc(1, false), SpanKind: trace.SpanKindClient,
			StartTime: start, EndTime: start.Add(time.Millisecond), Resource: res, InstrumentationScope: instrumentation.Scope{Name: "idemlambda", Version: "v1", SchemaURL: "https://opentelemetry.io/schemas/1.43.0"},
		},
		{Name: "send bus", SpanContext: sc(4, false), SpanKind: trace.SpanKindProducer, StartTime: start, EndTime: start, Resource: other},
		{Name: "process queue", SpanContext: sc(5, false), SpanKind: trace.SpanKindConsumer, StartTime: time.Unix(0, 0).Add(-time.Second), Resource: other,
			InstrumentationScope: instrumentation.Scope{Name: "consumer"}},
		{Name: "unspecified", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{6}}), Resource: other},
	}
	return stubs.Snapshots()
}

// receiver is an OTLP/HTTP collector for the tests: it keeps each
// request's body and answers with answer's status, headers and body.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	types  []string
	paths  []string
	answer func(n int) (int, http.Header, []byte)
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.types = append(r.types, req.Header.Get("Content-Type"))
	r.paths = append(r.paths, req.URL.Path)
	n := len(r.bodies)
	r.mu.Unlock()
	code, h, body := http.StatusOK, http.Header{}, []byte(nil)
	if r.answer != nil {
		code, h, body = r.answer(n)
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", otlp.ContentType)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func (r *receiver) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func decode(t *testing.T, b []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	var req coltracepb.ExportTraceServiceRequest
	require.NoError(t, proto.Unmarshal(b, &req))
	require.Empty(t, req.ProtoReflect().GetUnknown(), "no field the schema does not know")
	return &req
}

// The body is the one OpenTelemetry's own OTLP/HTTP exporter sends for
// the same spans, message for message: what a collector receives does not
// change with the exporter.
func TestTheRequestIsTheOfficialExportersOne(t *testing.T) {
	t.Parallel()
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	official, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	require.NoError(t, err)
	in := spans(t)
	require.NoError(t, official.ExportSpans(t.Context(), in))
	require.NoError(t, official.Shutdown(t.Context()))
	require.Equal(t, 1, rec.calls())

	want := decode(t, rec.bodies[0])
	got := decode(t, otlp.AppendRequest(nil, in))
	require.Len(t, got.ResourceSpans, 2)
	assert.Equal(t, "https://opentelemetry.io/schemas/1.43.0", got.ResourceSpans[0].SchemaUrl, "resources in the order they first appear")
	// The official exporter groups resources through a map, so in any
	// order: compare them as a set, each with its scopes and spans in order.
	bySchema := func(r *coltracepb.ExportTraceServiceRequest) {
		slices.SortFunc(r.ResourceSpans, func(a, b *tracepb.ResourceSpans) int { return strings.Compare(a.SchemaUrl, b.SchemaUrl) })
	}
	bySchema(want)
	bySchema(got)
	// One difference: a link's trace state, which OTLP's Link has and the
	// official exporter leaves out (v1.47.0); ours keeps it.
	for _, rs := range got.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				for _, l := range s.Links {
					assert.Equal(t, "vendor=a,other=b", l.TraceState, "the link's trace state")
					l.TraceState = ""
				}
			}
		}
	}
	assert.True(t, proto.Equal(want, got), "ours:\n%v\nthe official exporter's:\n%v", prototext.Format(got), prototext.Format(want))
}

func TestNoSpansIsNoBody(t *testing.T) {
	t.Parallel()
	assert.Empty(t, otlp.AppendRequest(nil, nil))
	assert.Empty(t, otlp.AppendRequest(nil, []sdktrace.ReadOnlySpan{nil}))
}

func TestExportPostsProtobufToTheURL(t *testing.T) {
	t.Parallel()
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	e := otlp.New(srv.URL+"/v1/traces", nil)
	require.NoError(t, e.ExportSpans(t.Context(), nil), "nothing to send is no request")
	assert.Equal(t, 0, rec.calls())
	in := spans(t)
	require.NoError(t, e.ExportSpans(t.Context(), in))
	require.Equal(t, 1, rec.calls())
	assert.Equal(t, "/v1/traces", rec.paths[0])
	assert.Equal(t, "application/x-protobuf", rec.types[0])
	n := 0
	for _, rs := range decode(t, rec.bodies[0]).ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	assert.Equal(t, len(in), n)

	require.NoError(t, e.Shutdown(t.Context()))
	assert.ErrorIs(t, e.ExportSpans(t.Context(), in), otlp.ErrShutdown)
	assert.Equal(t, 1, rec.calls(), "nothing sent after shutdown")
}

// closeCounter is a transport that counts CloseIdleConnections.
type closeCounter struct {
	http.RoundTripper
	closed atomic.Int32
}

func (c *closeCounter) CloseIdleConnections() { c.closed.Add(1) }

// Shutdown closes no connection of a client it was given: its transport
// may be shared (http.DefaultTransport is), and closing its idle
// connections cut another user's request in flight ("http:
// CloseIdleConnections called", seen in a parallel test).
func TestShutdownLeavesAGivenClientsConnections(t *testing.T) {
	t.Parallel()
	rec := &receiver{answer: func(int) (int, http.Header, []byte) { return http.StatusOK, nil, nil }}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	tr := &closeCounter{RoundTripper: srv.Client().Transport}
	e := otlp.New(srv.URL, &http.Client{Transport: tr})
	require.NoError(t, e.ExportSpans(t.Context(), spans(t)))
	require.NoError(t, e.Shutdown(t.Context()))
	assert.Zero(t, tr.closed.Load(), "Shutdown closed the given client's idle connections")
	assert.Equal(t, 1, rec.calls())
}

// 429, 502, 503 and 504 are retried, after the collector's Retry-After;
// a success ends the export.
func TestRetryableAnswersAreRetried(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
		rec := &receiver{answer: func(n int) (int, http.Header, []byte) {
			if n < 3 {
				return code, http.Header{"Retry-After": {"0"}}, nil
			}
			return http.StatusOK, nil, nil
		}}
		srv := httptest.NewServer(rec)
		e := otlp.New(srv.URL, nil)
		require.NoError(t, e.ExportSpans(t.Context(), spans(t)), "%d", code)
		assert.Equal(t, 3, rec.calls(), "%d: two refusals, then the success", code)
		srv.Close()
	}
}

// Without Retry-After, the exporter backs off on its own and retries.
func TestRetryWithoutRetryAfter(t *testing.T) {
	t.Parallel()
	rec := &receiver{answer: func(n int) (int, http.Header, []byte) {
		if n == 1 {
			return http.StatusServiceUnavailable, nil, nil
		}
		return http.StatusOK, nil, nil
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	require.NoError(t, otlp.New(srv.URL, nil).ExportSpans(t.Context(), spans(t)))
	assert.Equal(t, 2, rec.calls())
}

// A collector that keeps refusing costs Attempts requests, then the
// export fails with its status.
func TestRetriesEnd(t *testing.T) {
	t.Parallel()
	rec := &receiver{answer: func(int) (int, http.Header, []byte) {
		return http.StatusServiceUnavailable, http.Header{"Retry-After": {"0"}}, nil
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	err := otlp.New(srv.URL, nil).ExportSpans(t.Context(), spans(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "503")
	assert.Equal(t, otlp.Attempts, rec.calls())
}

// A retry the context's deadline leaves no time for is not waited for:
// the export fails at once, and the invocation that flushes answers.
func TestNoRetryPastTheDeadline(t *testing.T) {
	t.Parallel()
	rec := &receiver{answer: func(int) (int, http.Header, []byte) {
		return http.StatusTooManyRequests, http.Header{"Retry-After": {"3600"}}, nil
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := otlp.New(srv.URL, nil).ExportSpans(ctx, spans(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no time left to retry")
	assert.Equal(t, 1, rec.calls())
	assert.NoError(t, ctx.Err(), "it did not wait for the deadline")
}

// Any other answer fails the export at once, with the collector's
// message (a google.rpc.Status) when it sent one.
func TestOtherAnswersAreNotRetried(t *testing.T) {
	t.Parallel()
	msg, err := proto.Marshal(&status.Status{Code: 3, Message: "bad span id"})
	require.NoError(t, err)
	for _, code := range []int{http.StatusBadRequest, http.StatusNotFound, http.StatusInternalServerError} {
		rec := &receiver{answer: func(int) (int, http.Header, []byte) { return code, nil, msg }}
		srv := httptest.NewServer(rec)
		err := otlp.New(srv.URL, nil).ExportSpans(t.Context(), spans(t))
		require.Error(t, err, "%d", code)
		assert.Contains(t, err.Error(), "bad span id")
		assert.Equal(t, 1, rec.calls(), "%d is not retried", code)
		srv.Close()
	}
}

// A partial success (2xx with rejected spans) is an error to report, not
// a request to retry.
func TestPartialSuccessIsAnError(t *testing.T) {
	t.Parallel()
	answer, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old"}})
	require.NoError(t, err)
	rec := &receiver{answer: func(int) (int, http.Header, []byte) { return http.StatusOK, nil, answer }}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	err = otlp.New(srv.URL, nil).ExportSpans(t.Context(), spans(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rejected 2")
	assert.Contains(t, err.Error(), "too old")
	assert.Equal(t, 1, rec.calls())
}

// No collector (nothing listens) and a collector that never answers both
// fail the export, the second when the context ends.
func TestACollectorDownFailsTheExport(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&receiver{})
	url := srv.URL
	srv.Close()
	err := otlp.New(url, nil).ExportSpans(t.Context(), spans(t))
	require.Error(t, err)

	release := make(chan struct{})
	var entered atomic.Int32
	hung := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- otlp.New(hung.URL, nil).ExportSpans(ctx, spans(t)) }()
	require.Eventually(t, func() bool { return entered.Load() == 1 }, time.Minute, time.Millisecond)
	cancel()
	err = <-done
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}

func TestPartialSuccess(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		resp     *coltracepb.ExportTraceServiceResponse
		rejected int64
		msg      string
	}{
		{&coltracepb.ExportTraceServiceResponse{}, 0, ""},
		{&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{}}, 0, ""},
		{&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{ErrorMessage: "warning"}}, 0, "warning"},
		{&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1 << 40, ErrorMessage: "x"}}, 1 << 40, "x"},
	} {
		b, err := proto.Marshal(c.resp)
		require.NoError(t, err)
		rejected, msg := otlp.PartialSuccess(b)
		assert.Equal(t, c.rejected, rejected)
		assert.Equal(t, c.msg, msg)
	}
	rejected, msg := otlp.PartialSuccess([]byte("{}"))
	assert.Zero(t, rejected, "not protobuf")
	assert.Empty(t, msg)
}

// The answers' decoders never panic, and agree with the protobuf runtime
// on what it can decode.
func FuzzAnswer(f *testing.F) {
	for _, m := range []proto.Message{
		&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "no"}},
		&status.Status{Code: 8, Message: "busy"},
	} {
		b, err := proto.Marshal(m)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		rejected, msg := otlp.PartialSuccess(b)
		var resp coltracepb.ExportTraceServiceResponse
		if proto.Unmarshal(b, &resp) == nil && len(resp.ProtoReflect().GetUnknown()) == 0 && len(resp.GetPartialSuccess().ProtoReflect().GetUnknown()) == 0 {
			if rejected != resp.GetPartialSuccess().GetRejectedSpans() || msg != resp.GetPartialSuccess().GetErrorMessage() {
				t.Errorf("PartialSuccess = %d, %q; the protobuf runtime reads %v", rejected, msg, &resp)
			}
		}
		got := otlp.StatusMessage(b)
		var st status.Status
		if proto.Unmarshal(b, &st) == nil && len(st.ProtoReflect().GetUnknown()) == 0 && got != st.GetMessage() {
			t.Errorf("StatusMessage = %q; the protobuf runtime reads %q", got, st.GetMessage())
		}
	})
}
