package idem

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/scopeid"
)

// CacheLen exposes the number of cached records to the external tests.
func CacheLen(s *Store) int {
	if s.cache == nil {
		return 0
	}
	return s.cache.len()
}

// The low-level pieces, unexported for adopters, that the external tests
// drive directly.
type (
	TxError = txError
	Lease   = hold
	Claim   = claimed
	Record  = record
)

const (
	StatusCompleted    = statusCompleted
	StatusInProgress   = statusInProgress
	DefaultRetention   = defaultRetention
	DefaultLease       = defaultLease
	DefaultLeaseMargin = defaultLeaseMargin
	DefaultCacheBytes  = defaultCacheBytes
	MaxWrites          = maxWrites
)

var (
	ExplainTx          = explainTx
	Outcomes           = allOutcomes
	WithClock          = withClock
	ValidateKey        = scopeid.ValidateKey
	ErrInvalidResponse = errInvalidResponse
	ErrConflict        = errConflict
	ErrThrottled       = errThrottled
	ErrTxRefused       = errTxRefused
	ErrCorruptRecord   = errCorruptRecord
)

// ParseID inverts Scope.ID.
func ParseID(id string) (Scope, error) {
	p, err := scopeid.Parse(id)
	return Scope{Operation: p.Operation, Principal: p.Principal, Key: p.Key, anonymous: p.Anonymous}, err
}

// Reserve is the claim Execute, Run and Do begin with.
func (s *Store) Reserve(ctx context.Context, scope Scope, fingerprint string) (Claim, error) {
	if err := s.check(scope); err != nil {
		return Claim{}, err
	}
	return s.reserve(ctx, scope.ID(), fingerprint)
}

// Get reads a scope's record, consistently, treating an expired one as
// absent (TTL deletes lag by up to two days). ok is false when there is
// none.
func (s *Store) Get(ctx context.Context, scope Scope) (rec Record, ok bool, err error) {
	rec, ok, err = s.current(ctx, scope.ID(), nil)
	if err != nil || !ok || rec.Expired(s.now()) {
		return Record{}, false, err
	}
	return rec, true, nil
}

const MaxKeyLength = scopeid.MaxKeyLength

// MaxFingerprintLength is the longest fingerprint admitted.
const MaxFingerprintLength = maxFingerprintLength

// Mode is how the tests have Execute claim a key: ModeTransact makes a
// store's Execute run as Transact, so each Execute scenario runs in both claim modes.
type Mode string

// The two claim modes.
const (
	ModeReserve  Mode = "reserve"
	ModeTransact Mode = "transact"
)

// WithMode makes Execute run as Transact for ModeTransact.
func WithMode(m Mode) Option {
	return func(s *Store) { s.executeTransacts = m == ModeTransact }
}

// WithClaimAttempts and WithDefaultLease, WithLeaseMargin set one bound each.
func WithClaimAttempts(n int) Option          { return func(s *Store) { s.maxAttempts = n } }
func WithDefaultLease(d time.Duration) Option { return func(s *Store) { s.lease = d } }
func WithLeaseMargin(d time.Duration) Option  { return func(s *Store) { s.margin = d } }

// The lease's steps, which Execute, Run and Do take in turn, for the
// tests that drive a holder step by step.

// Token returns this holder's fencing token, unique per reservation.
func (l *hold) Token() string { return l.token }

// ExpiresAt returns when others may take the key over.
func (l *hold) ExpiresAt() time.Time { return l.expiresAt }

// Commit writes items and the fenced completion in one transaction.
func (l *hold) Commit(ctx context.Context, resp Response, items ...types.TransactWriteItem) error {
	_, _, err := l.commit(ctx, resp, items)
	return err
}

// Complete completes the key with its own fenced UpdateItem.
func (l *hold) Complete(ctx context.Context, resp Response) error {
	_, err := l.complete(ctx, resp)
	return err
}

// Release deletes the holder's reservation, fenced.
func (l *hold) Release(ctx context.Context) error { return l.free(ctx) }
