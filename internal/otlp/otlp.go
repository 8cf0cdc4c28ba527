// Package otlp exports spans to an OpenTelemetry collector over OTLP/HTTP,
// in protobuf, as the SDK's span exporter.
//
// It stands in for go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp,
// which speaks the same protocol but links the collector's generated
// service code, and so gRPC, grpc-gateway and the protobuf runtime
// (open-telemetry/opentelemetry-go#2579): about 8 MB of every bootstrap
// and the initialisers of some 130 packages at every cold start, for a
// request body that is a few nested messages. The body is encoded here
// with encoding/binary (AppendRequest), and the request is one POST.
//
// What it leaves out, for a collector on the function's own host (the
// collector layer on localhost): compression, headers, TLS settings and
// the OTEL_EXPORTER_OTLP_* variables other than the endpoint the caller
// passes. It retries what the specification calls retryable (429, 502,
// 503, 504), after the collector's Retry-After or a backoff, while the
// context's deadline leaves time; anything else fails the export at once,
// and a failed export is the caller's to report, never to wait on.
package otlp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ContentType is the body's media type: OTLP's binary protobuf encoding.
const ContentType = "application/x-protobuf"

// Attempts is how many times one export is sent at most: the first, and
// retries of retryable answers.
const Attempts = 5

// Timeout bounds one export whose context has no deadline (the SDK's
// batch processor gives each export 30 s; a flush gives less).
const Timeout = 10 * time.Second

// firstBackoff is the wait before the first retry of an answer without
// Retry-After; each further retry waits twice as long.
const firstBackoff = 100 * time.Millisecond

// responseLimit is how much of a collector's answer is read: enough for a
// partial success or an error status, never a body without end.
const responseLimit = 64 << 10

// ErrShutdown is the error of an export after Shutdown.
var ErrShutdown = errors.New("otlp: exporter shut down")

// Exporter sends spans to one OTLP/HTTP traces URL. It is an
// sdktrace.SpanExporter, safe for concurrent use.
type Exporter struct {
	url     string
	client  *http.Client
	owned   bool // the client is the exporter's own: Shutdown closes its connections
	stopped atomic.Bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New returns an exporter that POSTs to url, the full traces URL (an
// OTLP endpoint with /v1/traces appended), with client, or with a client
// of its own when client is nil. Its own client has its own transport:
// closing its connections at Shutdown never cuts a request another user
// of http.DefaultTransport has in flight.
func New(url string, client *http.Client) *Exporter {
	owned := client == nil
	if owned {
		client = &http.Client{Timeout: Timeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &Exporter{url: url, client: client, owned: owned}
}

// ExportSpans sends spans in one request, retried while the collector
// answers that it is busy and ctx leaves time; it returns an error when
// the spans did not reach the collector, or when it rejected some
// (a partial success).
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return ErrShutdown
	}
	if len(spans) == 0 {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Timeout)
		defer cancel()
	}
	body := AppendRequest(nil, spans)
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		r := e.send(ctx, body)
		if r.err == nil || !r.retryable || attempt == Attempts {
			return r.err
		}
		wait := r.after
		if !r.hasAfter {
			wait = backoff
			backoff *= 2
		}
		if dl, _ := ctx.Deadline(); time.Now().Add(wait).After(dl) {
			return fmt.Errorf("%w (no time left to retry in %v)", r.err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%w)", r.err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// attempt is what one request came to.
type attempt struct {
	err       error
	retryable bool          // the collector asked to be asked again
	after     time.Duration // its Retry-After, when hasAfter
	hasAfter  bool
}

// send makes one attempt.
func (e *Exporter) send(ctx context.Context, body []byte) attempt {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return attempt{err: fmt.Errorf("otlp: %w", err)}
	}
	req.Header.Set("Content-Type", ContentType)
	resp, err := e.client.Do(req)
	if err != nil {
		return attempt{err: fmt.Errorf("otlp: %w", err)}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, responseLimit))
	if err != nil {
		return attempt{err: fmt.Errorf("otlp: reading the collector's answer (%s): %w", resp.Status, err)}
	}
	if resp.StatusCode/100 == 2 {
		if rejected, msg := PartialSuccess(answer); rejected > 0 {
			return attempt{err: fmt.Errorf("otlp: the collector rejected %d of the spans: %s", rejected, msg)}
		}
		return attempt{}
	}
	err = fmt.Errorf("otlp: %s from %s", resp.Status, e.url)
	if msg := StatusMessage(answer); msg != "" {
		err = fmt.Errorf("otlp: %s from %s: %s", resp.Status, e.url, msg)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		// Retry-After in delay-seconds; a date (rare from a collector)
		// counts as none.
		s, perr := strconv.Atoi(resp.Header.Get("Retry-After"))
		return attempt{err: err, retryable: true, after: time.Duration(s) * time.Second, hasAfter: perr == nil && s >= 0}
	}
	return attempt{err: err}
}

// Shutdown stops the exporter: later exports fail with ErrShutdown. It
// closes the idle connections of its own client only: a client passed to
// New is its owner's to close.
func (e *Exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	if e.owned {
		e.client.CloseIdleConnections()
	}
	return nil
}
