package idem

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
)

// record statuses.
const (
	statusInProgress = stored.StatusInProgress
	statusCompleted  = stored.StatusCompleted
)

// record is an idempotency record as stored (internal/record reads it,
// for this package and idemadmin alike).
type record = stored.Record

// maxResponseBytesLimit caps WithMaxResponseBytes so that a completed
// record fits DynamoDB's 400 KB item whatever else it holds: its key (a
// scope ID of at most 2048 bytes, and a fixed partition or sort value),
// a fingerprint of at most maxFingerprintLength, tokens, times and
// numbers (the count of the writes committed with it among them), and at
// most 14 attribute names of at most 255 bytes each take under 12 KB.
const maxResponseBytesLimit = 300 << 10

// Response is what a key's first execution stored, and every later call
// gets back exactly as stored: a status, a few named strings of
// metadata and opaque bytes, which the way in gives their meaning
// (idemhttp: the HTTP status, headers and body).
type Response struct {
	// Status is the way in's status code, or 0 for none.
	Status int
	// Meta holds named strings: keys non-empty, UTF-8 and not beginning
	// with ':' (the library's), values UTF-8.
	Meta map[string]string
	// Body is stored as a string when it is UTF-8, else as bytes.
	Body []byte
	// Omitted is set by the store on a response it recorded without its
	// body (and, when they were what could not be stored, without its
	// metadata) rather than leave the key to run again: "too large" or
	// "not storable". idemhttp replays it as Idempotent-Body-Omitted.
	Omitted string
}

// size is what the response costs in its record, as DynamoDB counts
// item sizes (the Status and Omitted as metadata entries of their own).
func (r Response) size() int { return stored.Result(r).Size() }

// check applies the store's limit to a response before it is stored.
func (r Response) check(limit int) error {
	if n := r.size(); n > limit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResponseTooLarge, n, limit)
	}
	// Metadata keys and values are DynamoDB strings, which must be UTF-8;
	// the body is stored as binary when it is not.
	for k, v := range r.Meta {
		if !utf8.ValidString(k) || !utf8.ValidString(v) || k == "" || strings.HasPrefix(k, ":") {
			return fmt.Errorf("%w: metadata %q", errInvalidResponse, k)
		}
	}
	if !utf8.ValidString(r.Omitted) {
		return fmt.Errorf("%w: Omitted is not UTF-8", errInvalidResponse)
	}
	return nil
}

// clone returns a copy that shares no memory with r, so a response kept in
// the cache cannot be changed by a caller.
func (r Response) clone() Response {
	r.Body, r.Meta = slices.Clone(r.Body), maps.Clone(r.Meta)
	return r
}

// Result is the answer to one call.
type Result struct {
	// Response is the response to send: fresh, or replayed byte for byte.
	// It is empty when the call failed, except for Run and Do on
	// ErrNotRecorded, where it is the response of the effect that ran.
	Response Response
	// Outcome is what happened, set on failure too.
	Outcome Outcome
}

// responseOf is a completed record's response.
func responseOf(r record) Response { return Response(r.Result) }

func str(v string) types.AttributeValue { return ddbitem.S(v) }

func num(v int64) types.AttributeValue { return ddbitem.N(v) }

// itemSize is an item's size as DynamoDB counts it against its limits:
// each attribute's name and value.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

// valueSize is a value's size as DynamoDB counts it, without a name.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberM:
		// 3 bytes for the map, and 1 per element besides its name and value.
		return 3 + len(v.Value) + itemSize(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		return setSize(v.Value)
	case *types.AttributeValueMemberNS:
		n := 0
		for _, e := range v.Value {
			n += numberSize(e)
		}
		return n
	case *types.AttributeValueMemberBS:
		return setSize(v.Value)
	}
	return 1 // BOOL, NULL
}

// numberSize bounds a number's size as DynamoDB counts it, 1 byte per two
// significant digits and 1 more, by counting every character written as
// a digit.
func numberSize(n string) int { return (len(n)+1)/2 + 1 }

// setSize is the size of a set's elements.
func setSize[E ~string | ~[]byte](set []E) int {
	n := 0
	for _, e := range set {
		n += len(e)
	}
	return n
}
