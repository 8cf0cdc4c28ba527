package idem

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Record attribute names; the package documentation describes each.
const (
	attrID              = TableKey
	attrStatus          = "status"
	attrFingerprint     = "fingerprint"
	attrLeaseToken      = "lease_token"
	attrLeaseExpiresAt  = "lease_expires_at"
	attrResponseStatus  = "response_status"
	attrResponseHeaders = "response_headers"
	attrResponseBody    = "response_body"
	attrCreatedAt       = "created_at"
	attrCompletedAt     = "completed_at"
	attrExpiresAt       = TTLAttribute
)

// Record statuses.
const (
	StatusInProgress = "IN_PROGRESS"
	StatusCompleted  = "COMPLETED"
)

// Record is an idempotency record as stored.
type Record struct {
	ID             string
	Status         string
	Fingerprint    string
	LeaseToken     string
	LeaseExpiresAt time.Time // millisecond precision
	Response       Response  // set when Status is COMPLETED
	CreatedAt      time.Time
	CompletedAt    time.Time
	ExpiresAt      time.Time // second precision; DynamoDB TTL
}

// expired mirrors the reserve condition's "expires_at < :now_s".
func (r Record) expired(now time.Time) bool { return r.ExpiresAt.Unix() < now.Unix() }

// Response is what a completed key replays: status, headers and the body
// bytes exactly as first sent.
type Response struct {
	Status  int
	Headers map[string]string
	Body    []byte
}

// size is what the response costs to store, for the size limit.
func (r Response) size() int {
	n := len(r.Body) + 8
	for k, v := range r.Headers {
		n += len(k) + len(v)
	}
	return n
}

// clone returns a copy that shares no memory with r, so a response kept in
// the cache cannot be changed by a caller.
func (r Response) clone() Response {
	return Response{Status: r.Status, Headers: maps.Clone(r.Headers), Body: slices.Clone(r.Body)}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func timeAttr(t time.Time) types.AttributeValue {
	return str(t.UTC().Format(time.RFC3339Nano))
}

// headersAttr stores headers as a map of strings. Callers omit an empty
// map: some DynamoDB-compatible servers do not give one back as a map.
func headersAttr(h map[string]string) types.AttributeValue {
	m := make(map[string]types.AttributeValue, len(h))
	for k, v := range h {
		m[k] = str(v)
	}
	return &types.AttributeValueMemberM{Value: m}
}

// bodyAttr stores a body as a string when it is UTF-8 (readable in the
// console) and as binary otherwise, so any body replays byte for byte.
func bodyAttr(b []byte) types.AttributeValue {
	if utf8.Valid(b) {
		return str(string(b))
	}
	return &types.AttributeValueMemberB{Value: b}
}

// decodeRecord reads an item; a missing or mistyped required attribute is
// ErrCorruptRecord, never a panic.
func decodeRecord(item map[string]types.AttributeValue) (Record, error) {
	var r Record
	var err error
	fail := func(format string, args ...any) {
		if err == nil {
			err = fmt.Errorf("%w: "+format, append([]any{ErrCorruptRecord}, args...)...)
		}
	}
	getS := func(name string, required bool) string {
		av, ok := item[name]
		if !ok {
			if required {
				fail("missing %s", name)
			}
			return ""
		}
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			fail("%s is not a string", name)
			return ""
		}
		return s.Value
	}
	getN := func(name string, required bool) int64 {
		av, ok := item[name]
		if !ok {
			if required {
				fail("missing %s", name)
			}
			return 0
		}
		n, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			fail("%s is not a number", name)
			return 0
		}
		v, perr := strconv.ParseInt(n.Value, 10, 64)
		if perr != nil {
			fail("%s: %w", name, perr)
		}
		return v
	}
	getT := func(name string) time.Time {
		s := getS(name, false)
		if s == "" {
			return time.Time{}
		}
		t, perr := time.Parse(time.RFC3339Nano, s)
		if perr != nil {
			fail("%s: %w", name, perr)
		}
		return t
	}

	r.ID = getS(attrID, true)
	r.Status = getS(attrStatus, true)
	r.Fingerprint = getS(attrFingerprint, true)
	r.LeaseToken = getS(attrLeaseToken, false)
	r.LeaseExpiresAt = time.UnixMilli(getN(attrLeaseExpiresAt, false))
	r.ExpiresAt = time.Unix(getN(attrExpiresAt, true), 0)
	r.CreatedAt = getT(attrCreatedAt)
	r.CompletedAt = getT(attrCompletedAt)
	switch r.Status {
	case StatusInProgress:
		// Without both, no caller could ever take the key over.
		if _, ok := item[attrLeaseToken]; !ok {
			fail("in progress without %s", attrLeaseToken)
		}
		if _, ok := item[attrLeaseExpiresAt]; !ok {
			fail("in progress without %s", attrLeaseExpiresAt)
		}
	case StatusCompleted:
		r.Response.Status = int(getN(attrResponseStatus, true))
		switch b := item[attrResponseBody].(type) {
		case *types.AttributeValueMemberS:
			r.Response.Body = []byte(b.Value)
		case *types.AttributeValueMemberB:
			r.Response.Body = b.Value
		case nil:
			fail("missing %s", attrResponseBody)
		default:
			fail("%s is neither a string nor binary", attrResponseBody)
		}
		if av, ok := item[attrResponseHeaders]; ok {
			m, ok := av.(*types.AttributeValueMemberM)
			if !ok {
				fail("%s is not a map", attrResponseHeaders)
				break
			}
			r.Response.Headers = make(map[string]string, len(m.Value))
			for k, v := range m.Value {
				s, ok := v.(*types.AttributeValueMemberS)
				if !ok {
					fail("header %s is not a string", k)
					break
				}
				r.Response.Headers[k] = s.Value
			}
		}
	default:
		fail("unknown status %q", r.Status)
	}
	if err != nil {
		return Record{}, err
	}
	return r, nil
}

// verdict is what a caller that lost the claim condition makes of the
// record that beat it.
type verdict int

const (
	// verdictAbsent: expired, or gone, or its lease ended: claim again.
	verdictAbsent verdict = iota
	// verdictOwn: the record carries this caller's own token: an earlier
	// attempt of this same call landed and its answer was lost.
	verdictOwn
	// verdictReplay: completed with the same payload.
	verdictReplay
	// verdictKeyReuse: another payload.
	verdictKeyReuse
	// verdictInFlight: another holder's lease is live.
	verdictInFlight
)

// judge reads rec at the time and with the token of the claim that lost to
// it, so the answer agrees with the condition the store evaluated: a lease
// ends when lease_expires_at < now in milliseconds, a record expires when
// expires_at < now in seconds.
func judge(rec Record, fingerprint, token string, now time.Time) verdict {
	switch {
	case rec.expired(now):
		return verdictAbsent
	case rec.LeaseToken == token:
		return verdictOwn
	case rec.Fingerprint != fingerprint:
		return verdictKeyReuse
	case rec.Status == StatusCompleted:
		return verdictReplay
	case rec.LeaseExpiresAt.UnixMilli() >= now.UnixMilli():
		return verdictInFlight
	default:
		return verdictAbsent // the lease ended since the write: take over
	}
}

// claimCondition is the condition of every write that claims a key, in
// both modes: no record, an expired record, or a dead holder's record for
// the same payload. Its values come from claimValues.
const claimCondition = "attribute_not_exists(#id) OR #exp < :now_s OR " +
	"(#st = :in_progress AND #lease_exp < :now_ms AND #fp = :fp)"

func claimNames() map[string]string {
	return map[string]string{
		"#id": attrID, "#exp": attrExpiresAt, "#st": attrStatus,
		"#lease_exp": attrLeaseExpiresAt, "#fp": attrFingerprint,
	}
}

func claimValues(now time.Time, fingerprint string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":now_s":       num(now.Unix()),
		":now_ms":      num(now.UnixMilli()),
		":in_progress": str(StatusInProgress),
		":fp":          str(fingerprint),
	}
}
