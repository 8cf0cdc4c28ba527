package idem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
)

// claimCondition is the condition of every write that claims a key, in
// both claim modes: no record, an expired record, or a dead holder's
// record for the same payload. Its values come from claimValues.
const claimCondition = "attribute_not_exists(#id) OR #exp < :now_s OR " +
	"(#st = :in_progress AND #lease_exp < :now_ms AND #fp = :fp)"

// claimNames are claimCondition's attribute names in the store's layout.
func (s *Store) claimNames() map[string]string {
	return map[string]string{
		"#id": s.layout.PartitionKey, "#exp": s.attr.ExpiresAt, "#st": s.attr.Status,
		"#lease_exp": s.attr.LeaseExpiresAt, "#fp": s.attr.Fingerprint,
	}
}

// claimValues are claimCondition's values for a claim at now.
func claimValues(now time.Time, fingerprint string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":now_s":       num(now.Unix()),
		":now_ms":      num(now.UnixMilli()),
		":in_progress": str(statusInProgress),
		":fp":          str(fingerprint),
	}
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

// claim is one call's claim on one key, across its attempts.
type claim struct {
	s           *Store
	id          string
	fingerprint string
	// token is written by every attempt of the call: a record that
	// carries it is the call's own, landed on an attempt whose answer
	// was lost.
	token string
	// waits: a live holder is waited for (WithWait). follows: a running
	// transaction on the record is waited out and the record read,
	// rather than answered in flight at once.
	waits, follows bool
	// sentOnce: the SDK sent the attempts that decide once, so a refused
	// one did not land.
	sentOnce bool
	// retention is how long the record replays once completed.
	retention time.Duration
	// again counts the claims made again because the record was gone,
	// expired or a dead holder's by the time it was read.
	again int
}

// met is what an attempt of a claim met instead of winning its condition.
type met struct {
	rec   record
	found bool      // false: no record (it vanished since the attempt)
	at    time.Time // when the condition, or the read, was evaluated
	held  bool      // a running transaction holds the record; rec is unknown
	// read: the record is to be read whatever the call follows (writes
	// from another Region kept meeting it: a read settles what they did).
	read bool
}

// step is what a claim does after decide.
type step int

const (
	// stepAgain: the record no longer blocks the claim (gone, expired,
	// or its holder's lease ended): claim again, within retry.
	stepAgain step = iota
	// stepOwn: the record carries the call's own token.
	stepOwn
	// stepReplay: completed with the same payload: answer its response.
	stepReplay
	// stepRefuse: answer decide's error: ErrKeyReuse or *InFlightError.
	stepRefuse
	// stepAwait: a live holder, and the call waits for its response.
	stepAwait
	// stepRead: a running transaction holds the record: read it (after
	// about a transaction's time, if the call follows), then decide.
	stepRead
)

// decide is the claim state machine, for every claim mode (reserve's
// PutItem, Transact's and ExecuteBatch's transaction): what a claim that
// did not win its condition does with what it met. A running
// transaction is in flight at once, unless the call follows it or an
// attempt of the call may have landed (then read the record). A record
// that is gone, expired or a dead holder's: claim again. The call's own
// token: its own. Another payload: key reuse. Completed: replay. A live
// holder: await it if the call waits, else in flight until its lease
// ends.
func (c *claim) decide(m met) (step, error) {
	if m.held {
		if !c.follows && c.sentOnce && !m.read {
			return stepRefuse, &InFlightError{RetryAfter: c.s.learned.txTime()}
		}
		return stepRead, nil
	}
	if !m.found {
		return stepAgain, nil
	}
	switch judge(m.rec, c.fingerprint, c.token, m.at) {
	case verdictOwn:
		return stepOwn, nil
	case verdictKeyReuse:
		return stepRefuse, ErrKeyReuse
	case verdictReplay:
		return stepReplay, nil
	case verdictInFlight:
		if c.waits {
			return stepAwait, nil
		}
		return stepRefuse, &InFlightError{RetryAfter: untilFree(m.rec, m.at)}
	}
	return stepAgain, nil
}

// retry counts a claim made again (stepAgain); past the store's attempts
// the key keeps changing hands under the call: busy, in flight.
func (c *claim) retry() error {
	if c.again++; c.again >= c.s.maxAttempts {
		return busy()
	}
	return nil
}

// busy is the answer to a claim that cannot settle: the key keeps
// changing hands, or another request's transaction still holds its
// record after the call's attempts. The client's retry will find it
// settled.
func busy() error { return &InFlightError{RetryAfter: time.Second} }

// current decodes the record a failed condition returned, or reads it with
// one consistent GetItem where the backend returned none (minidyn does so
// for PutItem). found is false when there is no record at all.
func (s *Store) current(ctx context.Context, id string, item map[string]types.AttributeValue) (record, bool, error) {
	if len(item) == 0 {
		got, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(s.table),
			Key:            s.key(id),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return record{}, false, fmt.Errorf("idem: read after a lost claim: %w", err)
		}
		if len(got.Item) == 0 {
			return record{}, false, nil
		}
		item = got.Item
	}
	rec, err := s.decodeRecord(item)
	if err != nil {
		return record{}, false, err
	}
	return rec, true, nil
}

// completedPut is the claim c of a transaction (Transact, ExecuteBatch):
// a Put of the record, COMPLETED with resp and the number of writes that
// commit with it, and carrying the call's token (and, on a global table,
// its origin: stamp), under the claim condition; and the record's expiry.
func (s *Store) completedPut(ctx context.Context, c *claim, resp Response, writes int, now time.Time) (*types.Put, time.Time) {
	expires := time.Unix(now.Add(c.retention).Unix(), 0)
	item := s.withKey(c.id, map[string]types.AttributeValue{
		s.attr.Status:       str(statusCompleted),
		s.attr.Fingerprint:  str(c.fingerprint),
		s.attr.LeaseToken:   str(c.token),
		s.attr.CompletionID: str(c.token),
		s.attr.CreatedAt:    ddbitem.Time(now),
		s.attr.CompletedAt:  ddbitem.Time(now),
		s.attr.ExpiresAt:    num(expires.Unix()),
	})
	maps.Copy(item, stored.Item(s.attr, stored.Result(resp), writes))
	s.stamp(ctx, item)
	return &types.Put{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String(claimCondition),
		ExpressionAttributeNames:            s.claimNames(),
		ExpressionAttributeValues:           claimValues(now, c.fingerprint),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, expires
}

// claimResult is what a claim makes of a record judged v, for a trace.
func claimResult(v verdict) idemtrace.ClaimResult {
	switch v {
	case verdictOwn:
		return idemtrace.ClaimWon
	case verdictReplay:
		return idemtrace.ClaimReplayed
	case verdictKeyReuse:
		return idemtrace.ClaimKeyReuse
	case verdictInFlight:
		return idemtrace.ClaimInFlight
	}
	return idemtrace.ClaimExpired
}

// seenRecord is what a claim attempt or a poll that read rec (found
// false: none) at now makes of it, for a trace.
func seenRecord(rec record, found bool, fingerprint, token string, now time.Time) (idemtrace.ClaimResult, time.Time, time.Duration) {
	if !found {
		return idemtrace.ClaimGone, time.Time{}, 0
	}
	switch v := judge(rec, fingerprint, token, now); v {
	case verdictInFlight:
		return idemtrace.ClaimInFlight, rec.LeaseExpiresAt, untilFree(rec, now)
	case verdictAbsent:
		if rec.Status == statusInProgress {
			return idemtrace.ClaimExpired, rec.LeaseExpiresAt, 0 // a dead holder's
		}
		return idemtrace.ClaimExpired, time.Time{}, 0
	default:
		return claimResult(v), time.Time{}, 0
	}
}

// errResult is the claim result of a claim, wait or transaction that
// failed with err, for a trace.
func errResult(err error) (idemtrace.ClaimResult, time.Duration) {
	var inflight *InFlightError
	switch {
	case errors.As(err, &inflight):
		return idemtrace.ClaimInFlight, inflight.RetryAfter
	case errors.Is(err, ErrKeyReuse):
		return idemtrace.ClaimKeyReuse, 0
	case isConflict(err) || isReplicated(err):
		return idemtrace.ClaimConflict, 0
	}
	return idemtrace.ClaimError, 0
}
