package idem

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
)

// record statuses.
const (
	statusInProgress = "IN_PROGRESS"
	statusCompleted  = "COMPLETED"
)

// record is an idempotency record as stored.
type record struct {
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
func (r record) expired(now time.Time) bool { return r.ExpiresAt.Unix() < now.Unix() }

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

func str(v string) types.AttributeValue { return ddbitem.S(v) }

func num(v int64) types.AttributeValue { return ddbitem.N(v) }

// decodeRecord reads an item in the store's layout; a missing or
// mistyped required attribute is errCorruptRecord, never a panic.
func (s *Store) decodeRecord(item map[string]types.AttributeValue) (record, error) {
	attr := s.attr
	in := ddbitem.Read(item)
	id, hasKey := s.layout.ID(item)
	r := record{
		ID:          id,
		Status:      in.S(attr.Status),
		Fingerprint: in.S(attr.Fingerprint),
		ExpiresAt:   time.Unix(in.Int(attr.ExpiresAt), 0),
	}
	r.LeaseToken, _ = in.OptS(attr.LeaseToken)
	if ms, ok := in.OptInt(attr.LeaseExpiresAt); ok {
		r.LeaseExpiresAt = time.UnixMilli(ms)
	}
	r.CreatedAt, _ = in.OptTime(attr.CreatedAt)
	r.CompletedAt, _ = in.OptTime(attr.CompletedAt)
	var bad error
	if !hasKey {
		bad = fmt.Errorf("%w: no key of the store's layout", errCorruptRecord)
	}
	switch r.Status {
	case statusInProgress:
		// Without both, no caller could ever take the key over.
		for _, a := range []string{attr.LeaseToken, attr.LeaseExpiresAt} {
			if !in.Has(a) && bad == nil {
				bad = fmt.Errorf("%w: in progress without %s", errCorruptRecord, a)
			}
		}
	case statusCompleted:
		r.Response.Status = int(in.Int(attr.ResponseStatus))
		r.Response.Body = in.Bytes(attr.ResponseBody)
		r.Response.Headers, _ = in.StringMap(attr.ResponseHeaders)
	default:
		if in.Err() == nil && bad == nil {
			bad = fmt.Errorf("%w: unknown status %q", errCorruptRecord, r.Status)
		}
	}
	if err := in.Err(); err != nil {
		return record{}, fmt.Errorf("%w: %w", errCorruptRecord, err)
	}
	if bad != nil {
		return record{}, bad
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
func judge(rec record, fingerprint, token string, now time.Time) verdict {
	switch {
	case rec.expired(now):
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
