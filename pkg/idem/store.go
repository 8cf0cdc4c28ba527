package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
)

// API is the part of the DynamoDB client the store uses; *dynamodb.Client
// implements it.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Defaults for a Store; each has an Option.
const (
	DefaultLease            = 60 * time.Second
	DefaultLeaseMargin      = 2 * time.Second
	DefaultRetention        = 24 * time.Hour
	DefaultMaxAttempts      = 3
	DefaultMaxResponseBytes = 64 << 10
	DefaultReleaseTimeout   = 3 * time.Second
	DefaultMaxTxAttempts    = 3
	// MaxResponseBytesLimit caps WithMaxResponseBytes so a completed
	// record stays under DynamoDB's 400 KB item size.
	MaxResponseBytesLimit = 300 << 10
)

// Store keeps idempotency records in one DynamoDB table whose partition key
// is the string attribute "id". It is safe for concurrent use.
type Store struct {
	db               API
	table            string
	now              func() time.Time
	lease            time.Duration
	margin           time.Duration
	retention        time.Duration
	maxAttempts      int
	maxResponseBytes int
	releaseTimeout   time.Duration
	maxTxAttempts    int
	newToken         func() string
}

// Option configures a Store.
type Option func(*Store)

// WithClock replaces time.Now, for tests that move time.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithDefaultLease sets the lease used when the context has no deadline.
// With a deadline (every Lambda invocation has one), the lease ends at the
// deadline plus the margin, so a live holder is never taken over.
func WithDefaultLease(d time.Duration) Option { return func(s *Store) { s.lease = d } }

// WithLeaseMargin sets how long past the deadline a lease lasts, covering
// clock skew between hosts and the release after a timeout.
func WithLeaseMargin(d time.Duration) Option { return func(s *Store) { s.margin = d } }

// WithRetention sets how long a completed key replays before it expires.
func WithRetention(d time.Duration) Option { return func(s *Store) { s.retention = d } }

// WithMaxAttempts bounds the reserve attempts when a record vanishes
// between a failed reserve and the read of it (a release in between).
func WithMaxAttempts(n int) Option { return func(s *Store) { s.maxAttempts = n } }

// WithMaxResponseBytes limits the response stored for replay.
func WithMaxResponseBytes(n int) Option { return func(s *Store) { s.maxResponseBytes = n } }

// WithReleaseTimeout bounds a release, which runs detached from the
// caller's (possibly cancelled) context.
func WithReleaseTimeout(d time.Duration) Option { return func(s *Store) { s.releaseTimeout = d } }

// WithMaxTxAttempts bounds Commit's retries on TransactionConflict.
func WithMaxTxAttempts(n int) Option { return func(s *Store) { s.maxTxAttempts = n } }

// NewStore returns a store on the named table.
func NewStore(db API, table string, opts ...Option) (*Store, error) {
	s := &Store{
		db: db, table: table, now: time.Now,
		lease: DefaultLease, margin: DefaultLeaseMargin, retention: DefaultRetention,
		maxAttempts: DefaultMaxAttempts, maxResponseBytes: DefaultMaxResponseBytes,
		releaseTimeout: DefaultReleaseTimeout, maxTxAttempts: DefaultMaxTxAttempts,
		newToken: uuid.NewString,
	}
	for _, o := range opts {
		o(s)
	}
	switch {
	case db == nil:
		return nil, errors.New("idem: nil DynamoDB client")
	case table == "":
		return nil, errors.New("idem: empty table name")
	case s.lease <= 0 || s.margin < 0 || s.releaseTimeout <= 0:
		return nil, errors.New("idem: lease and release timeout must be positive, margin not negative")
	case s.retention < s.lease+s.margin:
		return nil, fmt.Errorf("idem: retention %v shorter than a lease (%v)", s.retention, s.lease+s.margin)
	case s.maxAttempts < 1 || s.maxTxAttempts < 1 || s.maxResponseBytes < 1:
		return nil, errors.New("idem: attempts and response limit must be at least 1")
	case s.maxResponseBytes > MaxResponseBytesLimit:
		return nil, fmt.Errorf("idem: response limit %d over %d: a record must fit DynamoDB's 400 KB item", s.maxResponseBytes, MaxResponseBytesLimit)
	}
	return s, nil
}

// Claim is a successful Reserve: either a Lease (the caller executes) or a
// stored Response to replay.
type Claim struct {
	// Lease is set when this caller holds the key and must execute.
	Lease *Lease
	// Replay is set when the key completed earlier with the same payload.
	Replay *Response
	// Outcome is OutcomeExecuted, OutcomeTakeover or OutcomeReplayed.
	Outcome Outcome
}

// Reserve claims the scope's key for this caller with one conditional
// PutItem. It returns a Claim with a Lease or a Replay, or an error that
// wraps ErrInFlight (an *InFlightError), ErrKeyReuse, ErrCorruptRecord or
// the DynamoDB error.
func (s *Store) Reserve(ctx context.Context, scope Scope, fingerprint string) (Claim, error) {
	id := scope.ID()
	for range s.maxAttempts {
		a, err := s.tryReserve(ctx, id, fingerprint)
		if err != nil || a.claim.Outcome != "" {
			return a.claim, err
		}
		if a.current == nil {
			continue // released between our write and our read: try again
		}
		claim, again, err := s.judge(*a.current, fingerprint, a)
		if !again {
			return claim, err
		}
	}
	// The key keeps changing hands under us: treat it as busy rather than
	// spin. The client's retry will find it settled.
	return Claim{}, &InFlightError{RetryAfter: time.Second}
}

// attempt is one conditional put: what it wrote and what it found.
type attempt struct {
	claim    Claim     // set when the put succeeded
	current  *Record   // the record that beat the condition, nil if none
	token    string    // the lease token this attempt wrote
	now      time.Time // the time the condition compared against
	leaseEnd time.Time
}

// tryReserve sends the conditional put. On a lost condition it returns the
// current record (nil when there is none) and an empty claim.
func (s *Store) tryReserve(ctx context.Context, id, fingerprint string) (attempt, error) {
	now := s.now()
	leaseEnd := now.Add(s.lease)
	if dl, ok := ctx.Deadline(); ok {
		leaseEnd = dl
	}
	leaseEnd = leaseEnd.Add(s.margin)
	a := attempt{token: s.newToken(), now: now, leaseEnd: leaseEnd}
	out, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrID:             str(id),
			attrStatus:         str(StatusInProgress),
			attrFingerprint:    str(fingerprint),
			attrLeaseToken:     str(a.token),
			attrLeaseExpiresAt: num(leaseEnd.UnixMilli()),
			attrCreatedAt:      timeAttr(now),
			attrExpiresAt:      num(now.Add(max(s.retention, leaseEnd.Sub(now))).Unix()),
		},
		ConditionExpression: aws.String("attribute_not_exists(#id) OR #exp < :now_s OR " +
			"(#st = :in_progress AND #lease_exp < :now_ms AND #fp = :fp)"),
		ExpressionAttributeNames: map[string]string{
			"#id": attrID, "#exp": attrExpiresAt, "#st": attrStatus,
			"#lease_exp": attrLeaseExpiresAt, "#fp": attrFingerprint,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now_s":       num(now.Unix()),
			":now_ms":      num(now.UnixMilli()),
			":in_progress": str(StatusInProgress),
			":fp":          str(fingerprint),
		},
		// On success: the item we replaced, if any, tells a takeover apart.
		ReturnValues: types.ReturnValueAllOld,
		// On failure: the item that beat us, so no second read is needed.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		a.claim = s.leased(id, a, wasHeldByAnother(out.Attributes, a.token))
		return a, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		// The write may have landed with its answer lost: remove it, so
		// the client's retry is not told its own request is in flight.
		lost := &Lease{store: s, id: id, Token: a.token}
		_ = lost.Release(ctx)
		return a, fmt.Errorf("idem: reserve: %w", err)
	}
	item := ccf.Item
	if len(item) == 0 {
		// Some backends (minidyn) return no ALL_OLD item on PutItem.
		got, gerr := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(s.table),
			Key:            map[string]types.AttributeValue{attrID: str(id)},
			ConsistentRead: aws.Bool(true),
		})
		if gerr != nil {
			return a, fmt.Errorf("idem: read after lost reserve: %w", gerr)
		}
		if len(got.Item) == 0 {
			return a, nil
		}
		item = got.Item
	}
	rec, err := decodeRecord(item)
	if err != nil {
		return a, err
	}
	a.current = &rec
	return a, nil
}

// leased is the claim of the caller that holds the key after attempt a.
func (s *Store) leased(id string, a attempt, takeover bool) Claim {
	outcome := OutcomeExecuted
	if takeover {
		outcome = OutcomeTakeover
	}
	return Claim{
		Lease:   &Lease{store: s, id: id, Token: a.token, ExpiresAt: a.leaseEnd, Takeover: takeover},
		Outcome: outcome,
	}
}

// wasHeldByAnother reads PutItem's ALL_OLD attributes. A backend that
// echoes the new item instead (minidyn) shows our own token: no takeover
// can be seen there, and the outcome stays "executed"; the fencing, not
// this label, is what keeps the takeover safe.
func wasHeldByAnother(old map[string]types.AttributeValue, token string) bool {
	st, ok := old[attrStatus].(*types.AttributeValueMemberS)
	if !ok || st.Value != StatusInProgress {
		return false
	}
	lt, ok := old[attrLeaseToken].(*types.AttributeValueMemberS)
	return ok && lt.Value != token
}

// judge answers a caller that lost the reserve condition to rec, at the
// time and with the token of its attempt a, so it agrees with the
// condition the store evaluated. again is true when the record changed
// under us and a new attempt is needed.
func (s *Store) judge(rec Record, fingerprint string, a attempt) (claim Claim, again bool, err error) {
	if rec.expired(a.now) {
		return Claim{}, true, nil // expired: counts as absent, reserve again
	}
	if rec.Fingerprint != fingerprint {
		return Claim{}, false, ErrKeyReuse
	}
	switch rec.Status {
	case StatusCompleted:
		resp := rec.Response
		return Claim{Replay: &resp, Outcome: OutcomeReplayed}, false, nil
	default:
		if rec.LeaseToken == a.token {
			// Our own write: the SDK retried a put that had landed.
			return s.leased(rec.ID, a, false), false, nil
		}
		if rec.LeaseExpiresAt.UnixMilli() >= a.now.UnixMilli() {
			return Claim{}, false, &InFlightError{RetryAfter: max(rec.LeaseExpiresAt.Sub(a.now), 0)}
		}
		return Claim{}, true, nil // lease ended since our write: take over
	}
}

// Get returns the record for a scope, treating an expired record as absent
// (TTL deletes lag by up to two days). ok is false when there is none.
func (s *Store) Get(ctx context.Context, scope Scope) (rec Record, ok bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{attrID: str(scope.ID())},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, false, fmt.Errorf("idem: get: %w", err)
	}
	if len(out.Item) == 0 {
		return Record{}, false, nil
	}
	rec, err = decodeRecord(out.Item)
	if err != nil {
		return Record{}, false, err
	}
	if rec.expired(s.now()) {
		return Record{}, false, nil
	}
	return rec, true, nil
}
