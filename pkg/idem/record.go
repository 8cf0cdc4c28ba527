package idem

import (
	"maps"
	"slices"
	"time"

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

// Response is what a key's first execution stored, and every later call
// gets back exactly as stored: opaque bytes and a few named strings of
// metadata. The way in gives them their meaning: idemhttp an HTTP
// response (status, headers and body), Do a value's JSON, idemsqs
// nothing at all. Metadata keys are non-empty and, like the values,
// UTF-8; keys that begin with ':' are reserved for the library.
type Response struct {
	Body []byte
	Meta map[string]string
}

// size is what the response costs to store, for the size limit.
func (r Response) size() int {
	n := len(r.Body)
	for k, v := range r.Meta {
		n += len(k) + len(v)
	}
	return n
}

// clone returns a copy that shares no memory with r, so a response kept in
// the cache cannot be changed by a caller.
func (r Response) clone() Response {
	return Response{Body: slices.Clone(r.Body), Meta: maps.Clone(r.Meta)}
}

// responseOf is a completed record's response.
func responseOf(r record) Response { return Response{Body: r.Body, Meta: r.Meta} }

func str(v string) types.AttributeValue { return ddbitem.S(v) }

func num(v int64) types.AttributeValue { return ddbitem.N(v) }

// decodeRecord reads an item in the store's layout; a missing or
// mistyped required attribute is errCorruptRecord, never a panic.
func (s *Store) decodeRecord(item map[string]types.AttributeValue) (record, error) {
	return stored.Decode(s.layout, item)
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
func judge(rec record, fingerprint, token string, now time.Time) verdict {
	switch {
	case rec.Expired(now):
		return verdictAbsent
	case rec.LeaseToken == token:
		return verdictOwn
	case rec.Fingerprint != fingerprint:
		return verdictKeyReuse
	case rec.Status == statusCompleted:
		return verdictReplay
	case rec.LeaseExpiresAt.UnixMilli() >= now.UnixMilli():
		return verdictInFlight
	default:
		return verdictAbsent // the lease ended since the write: take over
	}
}

// untilFree is how long until rec's lease has ended by the claim
// condition (lease_expires_at < now, in milliseconds): one millisecond
// past its end.
func untilFree(rec record, now time.Time) time.Duration {
	return max(rec.LeaseExpiresAt.Sub(now)+time.Millisecond, time.Millisecond)
}

// claimCondition is the condition of every write that claims a key, in
// both modes: no record, an expired record, or a dead holder's record for
// the same payload. Its values come from claimValues.
const claimCondition = "attribute_not_exists(#id) OR #exp < :now_s OR " +
	"(#st = :in_progress AND #lease_exp < :now_ms AND #fp = :fp)"

func (s *Store) claimNames() map[string]string {
	return map[string]string{
		"#id": s.layout.PartitionKey, "#exp": s.attr.ExpiresAt, "#st": s.attr.Status,
		"#lease_exp": s.attr.LeaseExpiresAt, "#fp": s.attr.Fingerprint,
	}
}

// key is the primary key of the record of the scope whose ID is id, in
// the store's layout.
func (s *Store) key(id string) map[string]types.AttributeValue { return s.layout.Key(id) }

func claimValues(now time.Time, fingerprint string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":now_s":       num(now.Unix()),
		":now_ms":      num(now.UnixMilli()),
		":in_progress": str(statusInProgress),
		":fp":          str(fingerprint),
	}
}

// withKey adds the key of the record of id to item, and returns it.
func (s *Store) withKey(id string, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	maps.Copy(item, s.key(id))
	return item
}

// isOwnKey reports whether key (a write's key, or a Put's item) is the key
// of the record of id.
func (s *Store) isOwnKey(key map[string]types.AttributeValue, id string) bool {
	for name, want := range s.key(id) {
		v, ok := key[name].(*types.AttributeValueMemberS)
		if !ok || v.Value != want.(*types.AttributeValueMemberS).Value {
			return false
		}
	}
	return true
}
