package otlp

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The protobuf wire types the OTLP messages use.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// Span flags (opentelemetry.proto.trace.v1.SpanFlags): the low 8 bits are
// the W3C trace flags; these two say whether the parent was remote.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// AppendRequest appends spans to b as the protobuf encoding of an
// ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1), the
// body of an OTLP/HTTP export: one ResourceSpans per resource, in the
// order the resources first appear, each with one ScopeSpans per
// instrumentation scope, in the order the scopes first appear.
func AppendRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	type scoped struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resourced struct {
		res    *resource.Resource
		scopes []*scoped
	}
	var order []*resourced
	byResource := map[attribute.Distinct]*resourced{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		key := s.Resource().Equivalent()
		r, ok := byResource[key]
		if !ok {
			r = &resourced{res: s.Resource()}
			byResource[key] = r
			order = append(order, r)
		}
		var sc *scoped
		for _, c := range r.scopes {
			if c.scope == s.InstrumentationScope() {
				sc = c
				break
			}
		}
		if sc == nil {
			sc = &scoped{scope: s.InstrumentationScope()}
			r.scopes = append(r.scopes, sc)
		}
		sc.spans = append(sc.spans, s)
	}
	for _, r := range order {
		// ExportTraceServiceRequest.resource_spans = 1
		b = appendMessage(b, 1, func(b []byte) []byte {
			if r.res != nil {
				// ResourceSpans.resource = 1: Resource.attributes = 1
				b = appendMessage(b, 1, func(b []byte) []byte {
					return appendAttributes(b, 1, r.res.Attributes())
				})
			}
			for _, sc := range r.scopes {
				// ResourceSpans.scope_spans = 2
				b = appendMessage(b, 2, func(b []byte) []byte {
					return appendScopeSpans(b, sc.scope, sc.spans)
				})
			}
			if r.res != nil {
				// ResourceSpans.schema_url = 3
				b = appendString(b, 3, r.res.SchemaURL())
			}
			return b
		})
	}
	return b
}

// appendScopeSpans appends the fields of a ScopeSpans.
func appendScopeSpans(b []byte, scope instrumentation.Scope, spans []sdktrace.ReadOnlySpan) []byte {
	if scope != (instrumentation.Scope{}) {
		// ScopeSpans.scope = 1: InstrumentationScope
		b = appendMessage(b, 1, func(b []byte) []byte {
			b = appendString(b, 1, scope.Name)
			b = appendString(b, 2, scope.Version)
			return appendAttributes(b, 3, scope.Attributes.ToSlice())
		})
	}
	for _, s := range spans {
		// ScopeSpans.spans = 2
		b = appendMessage(b, 2, func(b []byte) []byte { return appendSpan(b, s) })
	}
	// ScopeSpans.schema_url = 3
	return appendString(b, 3, scope.SchemaURL)
}

// appendSpan appends the fields of a Span.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if psid := s.Parent().SpanID(); psid.IsValid() {
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	if k := spanKind(s.SpanKind()); k != 0 {
		b = appendVarint(b, 6, uint64(k))
	}
	b = appendFixed64(b, 7, unixNano(s.StartTime().UnixNano()))
	b = appendFixed64(b, 8, unixNano(s.EndTime().UnixNano()))
	b = appendAttributes(b, 9, s.Attributes())
	b = appendVarint(b, 10, count(s.DroppedAttributes()))
	for _, e := range s.Events() {
		b = appendMessage(b, 11, func(b []byte) []byte {
			b = appendFixed64(b, 1, unixNano(e.Time.UnixNano()))
			b = appendString(b, 2, e.Name)
			b = appendAttributes(b, 3, e.Attributes)
			return appendVarint(b, 4, count(e.DroppedAttributeCount))
		})
	}
	b = appendVarint(b, 12, count(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = appendMessage(b, 13, func(b []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, 1, ltid[:])
			b = appendBytes(b, 2, lsid[:])
			b = appendString(b, 3, l.SpanContext.TraceState().String())
			b = appendAttributes(b, 4, l.Attributes)
			b = appendVarint(b, 5, count(l.DroppedAttributeCount))
			return appendFixed32(b, 6, flags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b = appendVarint(b, 14, count(s.DroppedLinks()))
	// Span.status = 15, always present (an unset status is an empty one).
	st := s.Status()
	b = appendMessage(b, 15, func(b []byte) []byte {
		b = appendString(b, 2, st.Description)
		return appendVarint(b, 3, statusCode(st.Code))
	})
	return appendFixed32(b, 16, flags(sc.TraceFlags(), s.Parent()))
}

// flags is a span's or a link's flags: its trace flags, and whether its
// parent (a link's: the linked context) is remote.
func flags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// spanKind is OTLP's Span.SpanKind for k.
func spanKind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

// statusCode is OTLP's Status.StatusCode for c.
func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

// appendAttributes appends each attribute as a KeyValue in field.
func appendAttributes(b []byte, field int, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		b = appendMessage(b, field, func(b []byte) []byte {
			b = appendString(b, 1, string(kv.Key))
			// KeyValue.value = 2, present even when it holds no value.
			return appendMessage(b, 2, func(b []byte) []byte { return appendValue(b, kv.Value) })
		})
	}
	return b
}

// appendValue appends the fields of an AnyValue. Its value is a oneof:
// the field is written even when it holds its type's zero value.
func appendValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.STRING:
		return appendField(appendTag(b, 1, wireBytes), []byte(v.AsString()))
	case attribute.BOOL:
		var x uint64
		if v.AsBool() {
			x = 1
		}
		return binary.AppendUvarint(appendTag(b, 2, wireVarint), x)
	case attribute.INT64:
		return binary.AppendUvarint(appendTag(b, 3, wireVarint), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return binary.LittleEndian.AppendUint64(appendTag(b, 4, wireFixed64), math.Float64bits(v.AsFloat64()))
	case attribute.BYTESLICE:
		return appendField(appendTag(b, 7, wireBytes), v.AsByteSlice())
	case attribute.MAP:
		// AnyValue.kvlist_value = 6: KeyValueList.values = 1
		return appendMessage(b, 6, func(b []byte) []byte { return appendAttributes(b, 1, v.AsMap()) })
	case attribute.EMPTY:
		return b
	}
	var elems []attribute.Value
	switch v.Type() {
	case attribute.BOOLSLICE:
		elems = values(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		elems = values(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		elems = values(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		elems = values(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		elems = v.AsSlice()
	default:
		// A type this encoder does not know: named, not dropped silently.
		return appendValue(b, attribute.StringValue("INVALID"))
	}
	// AnyValue.array_value = 5: ArrayValue.values = 1
	return appendMessage(b, 5, func(b []byte) []byte {
		for _, e := range elems {
			b = appendMessage(b, 1, func(b []byte) []byte { return appendValue(b, e) })
		}
		return b
	})
}

// values is a typed slice attribute's elements as values.
func values[T any](xs []T, value func(T) attribute.Value) []attribute.Value {
	out := make([]attribute.Value, len(xs))
	for i, x := range xs {
		out[i] = value(x)
	}
	return out
}

// unixNano is a time as OTLP's fixed64 nanoseconds, before 1970 as 0.
func unixNano(ns int64) uint64 {
	return uint64(max(0, ns))
}

// count is a dropped count as OTLP's uint32, clamped.
func count(n int) uint64 {
	return uint64(min(max(0, int64(n)), math.MaxUint32))
}

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

// appendField appends a length-delimited field's length and bytes.
func appendField(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// appendString appends a string field, left out when empty (proto3).
func appendString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	return append(binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(s))), s...)
}

// appendBytes appends a bytes field, left out when empty (proto3).
func appendBytes(b []byte, field int, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return appendField(appendTag(b, field, wireBytes), v)
}

// appendVarint appends a varint field, left out when 0 (proto3).
func appendVarint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

// appendFixed64 appends a fixed64 field, left out when 0 (proto3).
func appendFixed64(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), v)
}

// appendFixed32 appends a fixed32 field, left out when 0 (proto3).
func appendFixed32(b []byte, field int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(appendTag(b, field, wireFixed32), v)
}

// appendMessage appends an embedded message field whose fields body
// appends, always (an empty message is present, not absent). The body is
// written in place, then moved up by the length's own size once that
// length is known.
func appendMessage(b []byte, field int, body func([]byte) []byte) []byte {
	b = appendTag(b, field, wireBytes)
	start := len(b)
	b = body(b)
	n := len(b) - start
	var l [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(l[:], uint64(n))
	b = append(b, l[:ln]...)
	copy(b[start+ln:], b[start:start+n])
	copy(b[start:], l[:ln])
	return b
}
