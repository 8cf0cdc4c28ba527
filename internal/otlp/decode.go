package otlp

import (
	"encoding/binary"
)

// PartialSuccess reads a collector's ExportTraceServiceResponse: the
// spans it rejected and why (0 and "": all accepted, or a body that is
// not such a response, which the export's 2xx status vouches for).
func PartialSuccess(body []byte) (rejected int64, msg string) {
	// ExportTraceServiceResponse.partial_success = 1; a message that
	// occurs twice is merged, as protobuf decoders do.
	ok := walk(body, func(num uint64, wire int, v []byte) bool {
		if num != 1 || wire != wireBytes {
			return true
		}
		return walk(v, func(num uint64, wire int, v []byte) bool {
			switch {
			case num == 1 && wire == wireVarint: // rejected_spans
				n, _ := binary.Uvarint(v)
				rejected = int64(n)
			case num == 2 && wire == wireBytes: // error_message
				msg = string(v)
			}
			return true
		})
	})
	if !ok {
		return 0, ""
	}
	return rejected, msg
}

// StatusMessage reads the message of a google.rpc.Status, the body of an
// OTLP/HTTP error answer ("" if there is none, or the body is something
// else).
func StatusMessage(body []byte) string {
	var msg string
	ok := walk(body, func(num uint64, wire int, v []byte) bool {
		if num == 2 && wire == wireBytes { // Status.message
			msg = string(v)
		}
		return true
	})
	if !ok {
		return ""
	}
	return msg
}

// walk calls f with each field of the protobuf message b in order: its
// number, wire type and value (a varint as its encoded bytes, a
// length-delimited field as its contents). It reports false when b is
// malformed or f returned false.
func walk(b []byte, f func(num uint64, wire int, v []byte) bool) bool {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return false
		}
		b = b[n:]
		num, wire := tag>>3, int(tag&7)
		var v []byte
		switch wire {
		case wireVarint:
			_, n = binary.Uvarint(b)
			if n <= 0 {
				return false
			}
			v, b = b[:n], b[n:]
		case wireFixed64, wireFixed32:
			size := 8
			if wire == wireFixed32 {
				size = 4
			}
			if len(b) < size {
				return false
			}
			v, b = b[:size], b[size:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return false
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return false
		}
		if num == 0 || !f(num, wire, v) {
			return false
		}
	}
	return true
}
