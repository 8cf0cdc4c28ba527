// Package tracing carries the AWS X-Ray trace header through the event
// path, so one product can be followed from its POST to the consumer: the
// header Lambda gives an invocation is stored on the outbox item, set on
// the PutEvents entry, and arrives as the SQS message's AWSTraceHeader.
package tracing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// lambdaContextKey is the context key under which aws-lambda-go puts each
// invocation's trace header (lambda/invoke_loop.go). It is a plain string
// there, so it must be one here too to be found.
const lambdaContextKey = "x-amzn-trace-id"

// SQSAttribute is the SQS message system attribute that carries the trace
// header EventBridge (or a sender) passed on.
const SQSAttribute = "AWSTraceHeader"

// HTTPHeader is the HTTP header a client may send a trace header in.
const HTTPHeader = "X-Amzn-Trace-Id"

// MaxHeaderBytes is the longest trace header PutEvents accepts in an
// entry's TraceHeader; a longer one would fail the entry, and with it the
// relay's batch, again and again.
const MaxHeaderBytes = 500

// FromContext returns the trace header of the Lambda invocation ctx
// belongs to, or "" when there is none (no tracing, or not in Lambda).
// The context value is per invocation; the _X_AMZN_TRACE_ID environment
// variable aws-lambda-go also sets is the process's latest one.
func FromContext(ctx context.Context) string {
	h, _ := ctx.Value(lambdaContextKey).(string)
	return h
}

// NewContext returns ctx carrying header exactly as aws-lambda-go passes
// it to a handler, for runners and tests that stand in for Lambda.
func NewContext(ctx context.Context, header string) context.Context {
	//lint:ignore SA1029 the key must be aws-lambda-go's own untyped string
	return context.WithValue(ctx, lambdaContextKey, header)
}

// TraceID returns the Root field of a trace header, the trace id X-Ray
// shows and searches by ("1-5759e988-bd862e3fe1be46a994272793"), or ""
// when the header has no well-formed one. Every hop adds its own Parent,
// so the Root is what stays the same from the POST to the consumer.
func TraceID(header string) string {
	for field := range strings.SplitSeq(header, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(field), "=")
		if ok && k == "Root" && validRoot(v) {
			return v
		}
	}
	return ""
}

// Valid reports whether header can travel with an event: it has a
// well-formed Root and fits in a PutEvents entry.
func Valid(header string) bool {
	return len(header) <= MaxHeaderBytes && TraceID(header) != ""
}

// validRoot checks the X-Ray trace id format: "1-", 8 hex digits (the
// epoch seconds), "-", 24 hex digits.
func validRoot(v string) bool {
	version, rest, ok1 := strings.Cut(v, "-")
	epoch, random, ok2 := strings.Cut(rest, "-")
	return ok1 && ok2 && version == "1" && len(epoch) == 8 && isHex(epoch) && len(random) == 24 && isHex(random)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// New returns a fresh, sampled trace header in X-Ray's format, as Lambda
// would begin a trace at now: "Root=1-<epoch>-<random>;Parent=<id>;Sampled=1".
func New(now time.Time) string {
	var b [20]byte // 12 for the trace id's random part, 8 for the parent
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=1",
		uint32(now.Unix()), hex.EncodeToString(b[:12]), hex.EncodeToString(b[12:]))
}
