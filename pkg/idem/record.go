package idem

import (
	"fmt"
	"maps"
	"slices"
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

// metaOmitted marks a stored response whose body (or metadata) could not
// be stored; its value ("too large" or "not storable") says why, and
// idemhttp replays it as the Idempotent-Body-Omitted header.
const metaOmitted = stored.MetaOmitted

// maxResponseBytesLimit caps WithMaxResponseBytes so that a completed
// record fits DynamoDB's 400 KB item whatever else it holds: its key (a
// scope ID of at most 2048 bytes, and a fixed partition or sort value),
// a fingerprint of at most maxFingerprintLength, tokens, times and
// numbers (the count of the writes committed with it among them), and at
// most 14 attribute names of at most 255 bytes each take under 12 KB.
const maxResponseBytesLimit = 300 << 10

// Response is what a key's first execution stored, and every later call
// gets back exactly as stored: opaque bytes and a few named strings of
// metadata, which the way in gives their meaning. Metadata keys are
// non-empty and, like the values, UTF-8; keys that begin with ':' are
// reserved for the library.
type Response struct {
	Body []byte
	Meta map[string]string
}

// size is what the response costs in its record, as DynamoDB counts
// item sizes: the body's bytes, and for metadata a map's 3 bytes and,
// per entry, 1 byte besides its key's and value's.
func (r Response) size() int {
	n := len(r.Body)
	if len(r.Meta) > 0 {
		n += 3 // as valueSize counts a map
		for k, v := range r.Meta {
			n += 1 + len(k) + len(v)
		}
	}
	return n
}

// check applies the store's limit to a response before it is stored.
func (r Response) check(limit int) error {
	if n := r.size(); n > limit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResponseTooLarge, n, limit)
	}
	// Metadata keys and values are DynamoDB strings, which must be UTF-8;
	// the body is stored as binary when it is not.
	for k, v := range r.Meta {
		if !utf8.ValidString(k) || !utf8.ValidString(v) || k == "" {
			return fmt.Errorf("%w: metadata %q", errInvalidResponse, k)
		}
	}
	return nil
}

// clone returns a copy that shares no memory with r, so a response kept in
// the cache cannot be changed by a caller.
func (r Response) clone() Response {
	return Response{Body: slices.Clone(r.Body), Meta: maps.Clone(r.Meta)}
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
func responseOf(r record) Response { return Response{Body: r.Body, Meta: r.Meta} }

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
