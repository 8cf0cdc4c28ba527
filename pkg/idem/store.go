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

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
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
	defaultLease            = 60 * time.Second
	defaultLeaseMargin      = 2 * time.Second
	defaultRetention        = 24 * time.Hour
	defaultMaxResponseBytes = 64 << 10
	defaultReleaseTimeout   = 3 * time.Second
	defaultConflictAttempts = 5
	// defaultCacheBytes is the cache's budget for the responses it holds.
	defaultCacheBytes = 16 << 20
	// maxResponseBytesLimit caps WithMaxResponseBytes so a completed
	// record stays under DynamoDB's 400 KB item size.
	maxResponseBytesLimit = 300 << 10
)

// Store keeps idempotency records in one DynamoDB table whose partition key
// is the string attribute "id" (see idemtable.Create), or where WithLayout
// says. It is safe for concurrent use; make one per table and process, and
// share it.
type Store struct {
	db    API
	table string
	// layout is where the records live, with every name set; attr is its
	// attribute names.
	layout idemtable.Layout
	attr   idemtable.Attributes
	// executeTransacts makes Execute run as Transact: only the tests set
	// it, to run each Execute scenario in both ways of claiming.
	executeTransacts bool
	now              func() time.Time
	lease            time.Duration
	margin           time.Duration
	retention        time.Duration
	maxAttempts      int
	maxResponseBytes int
	releaseTimeout   time.Duration
	maxTxAttempts    int
	cacheEntries     int
	cacheBytes       int
	cache            *cache
	newToken         func() string
	outcomeHook      func(context.Context, Scope, Outcome, error)
	trace            *idemtrace.Trace // WithTrace
	wait             time.Duration    // WithWait
	learned          *learned
}

// Option configures a Store.
type Option func(*Store)

// WithCache keeps up to entries completed records in memory (an LRU), so a
// replay of a key this process completed or replayed costs no DynamoDB
// call. A completed record never changes before it expires, so the replay
// is exact; a cached entry dies at its record's expires_at. In-progress
// records are never cached. The responses held never total more than
// maxBytes (0 means 16 MB); least recently used entries go
// first. Without this option, or with 0 entries, there is no cache.
func WithCache(entries, maxBytes int) Option {
	return func(s *Store) {
		s.cacheEntries = entries
		if maxBytes != 0 {
			s.cacheBytes = maxBytes
		}
	}
}

// WithClock replaces time.Now, for tests that move time.
func withClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithLease sets the lease of a holder whose context has no deadline
// (default 60 s), and the margin a lease lasts past the deadline of one
// that has (default 2 s; it covers clock skew between hosts and the
// release after a timeout). With a deadline (every Lambda invocation has
// one), the lease ends at the deadline plus the margin, so a live holder
// is never taken over. Without one (a net/http server), Execute, Run and
// Do renew the lease every third of it with a fenced write while the
// operation runs, so an operation slower than the lease is not taken over
// either; if no renewal has landed by the lease's end less the margin,
// the operation's context is cancelled then with a cause wrapping
// ErrLeaseLost, whatever a renewal in flight is doing. A holder that
// dies stops renewing, and its key can be taken over one lease later.
func WithLease(lease, margin time.Duration) Option {
	return func(s *Store) { s.lease, s.margin = lease, margin }
}

// WithRetention sets how long a completed key replays before it expires.
func WithRetention(d time.Duration) Option { return func(s *Store) { s.retention = d } }

// WithMaxResponseBytes limits the response stored for replay.
func WithMaxResponseBytes(n int) Option { return func(s *Store) { s.maxResponseBytes = n } }

// WithReleaseTimeout bounds a release, which runs detached from the
// caller's (possibly cancelled) context, and the completion of an effect
// that already happened.
func WithReleaseTimeout(d time.Duration) Option { return func(s *Store) { s.releaseTimeout = d } }

// WithConflictAttempts bounds the attempts of a write that meets another
// caller's (default 5): a transaction cancelled by a conflict or
// throttling, retried with full jitter, and a claim whose winner vanished
// (released, or its lease ended) before it could be read.
func WithConflictAttempts(n int) Option {
	return func(s *Store) { s.maxAttempts, s.maxTxAttempts = n, n }
}

// WithLayout keeps the records where layout says: its key attributes (a
// sort key for single-table designs, with a fixed partition value or a
// fixed sort value), a prefix to the scope's ID, its attribute names. The default is
// idemtable.Layout{}. Every store on one table must use the same layout.
// A scope whose ID does not fit the layout's key (idemtable.Layout's
// MaxIDLength) is ErrInvalidKey.
func WithLayout(layout idemtable.Layout) Option { return func(s *Store) { s.layout = layout } }

// NewStore returns a store on the named table.
func NewStore(db API, table string, opts ...Option) (*Store, error) {
	s := &Store{
		db: db, table: table, now: time.Now,
		lease: defaultLease, margin: defaultLeaseMargin, retention: defaultRetention,
		maxAttempts: defaultConflictAttempts, maxResponseBytes: defaultMaxResponseBytes,
		releaseTimeout: defaultReleaseTimeout, maxTxAttempts: defaultConflictAttempts,
		cacheBytes: defaultCacheBytes, newToken: uuid.NewString, learned: newLearned(),
	}
	for _, o := range opts {
		o(s)
	}
	if err := s.layout.Validate(); err != nil {
		return nil, fmt.Errorf("idem: %w", err)
	}
	s.layout = s.layout.WithDefaults()
	s.attr = s.layout.Attributes
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
	case s.maxResponseBytes > maxResponseBytesLimit:
		return nil, fmt.Errorf("idem: response limit %d over %d: a record must fit DynamoDB's 400 KB item", s.maxResponseBytes, maxResponseBytesLimit)
	case s.wait < 0:
		return nil, fmt.Errorf("idem: wait %v is negative", s.wait)
	case s.cacheEntries < 0 || (s.cacheEntries > 0 && s.cacheBytes < 1):
		return nil, fmt.Errorf("idem: cache of %d entries and %d bytes: entries must not be negative, bytes must be positive", s.cacheEntries, s.cacheBytes)
	}
	if s.cacheEntries > 0 {
		s.cache = newCache(s.cacheEntries, s.cacheBytes)
	}
	return s, nil
}

// claimed is a successful reserve: either a Lease (the caller executes) or a
// stored Response to replay.
type claimed struct {
	// Lease is set when this caller holds the key and must execute.
	Lease *hold
	// Replay is set when the key completed earlier with the same payload.
	Replay *Response
	// Outcome is OutcomeExecuted, OutcomeTakeover or OutcomeReplayed.
	Outcome Outcome

	expiresAt time.Time // the replayed record's, for the cache
	deadLease time.Time // a takeover's: when the dead holder's lease ended
}

// reserve claims the key of the record id for this caller with one conditional
// PutItem: the building block of Execute, Run and Do, for callers that
// need to hold a lease themselves. It returns a claimed with a Lease or a
// Replay, or an error that wraps ErrInFlight (an *InFlightError; with a
// wait, only once the wait for a live holder runs out or it dies),
// ErrKeyReuse, errCorruptRecord or the DynamoDB error. It does not use the
// cache.
func (s *Store) reserve(ctx context.Context, id, fingerprint string) (claimed, error) {
	// One token for every attempt of this call: finding it on the record
	// means an earlier attempt landed, whatever its answer said.
	token := s.newToken()
	wait := s.waitOf(ctx)
	for attempts := 0; attempts < s.maxAttempts; attempts++ {
		a, err := s.tryReserve(ctx, id, fingerprint, token)
		traceAttempt(ctx, attempts+1, a, err, fingerprint)
		var holder record // a live holder's record, to wait out
		if isConflict(err) {
			// The record is in another request's running transaction: its
			// holder is committing, or a transact-mode caller is claiming.
			claim, live, again, err := s.waitOut(ctx, id, fingerprint, a, wait)
			if again {
				continue
			}
			if live == nil {
				return claim, err
			}
			holder = *live
		} else {
			if err != nil || a.claim.Outcome != "" {
				return a.claim, err
			}
			if a.current == nil {
				continue // released between our write and our read: try again
			}
			if !wait.on() || judge(*a.current, fingerprint, token, a.now) != verdictInFlight {
				if claim, done, err := s.decide(*a.current, fingerprint, a); done {
					return claim, err
				}
				continue
			}
			holder = *a.current
		}
		// A live holder, and this call waits for its response.
		got, err := s.awaitHolder(ctx, id, fingerprint, token, wait, holder)
		if err != nil {
			return claimed{}, err
		}
		if !got.found {
			continue // released: claim again
		}
		a.now = got.at
		if claim, done, err := s.decide(got.rec, fingerprint, a); done {
			return claim, err
		}
	}
	// The key keeps changing hands under us: treat it as busy rather than
	// spin. The client's retry will find it settled.
	return claimed{}, &InFlightError{RetryAfter: time.Second}
}

// waitOut answers a claim that DynamoDB refused with
// TransactionConflictException (which the SDK does not retry): another
// request's running transaction holds the record, a holder committing
// this key or a transact-mode caller claiming it. That is a concurrent
// duplicate of a request still running, so without a wait the claim is
// in flight (409, Retry-After about a transaction's time) at once, with
// no other call; unless the SDK sent the claim more than once (an
// earlier attempt may have landed: one consistent read says whether it
// did). With a wait, or for a way in whose in-flight answer would cost
// a redelivery (an event, a queue message: callopt.WithFollow), it
// follows the commit: it waits about what a transaction takes (the
// store's average), then reads the record once, consistently (the read
// never conflicts, and costs a read unit where another claim would cost
// a write unit and only stand in the commit's way). A commit that landed
// is replayed (or is key reuse); a live holder's record is returned as
// live, for a wait to follow, or is in flight. again is true when the
// record is gone or dead: claim again.
func (s *Store) waitOut(ctx context.Context, id, fingerprint string, a attempt, wait *waiting) (claim claimed, live *record, again bool, err error) {
	retryAfter := s.txTime()
	if !wait.follows() && a.sentOnce {
		return claimed{}, nil, false, &InFlightError{RetryAfter: retryAfter}
	}
	ctx, wt := startWait(ctx, idemtrace.WaitStartInfo{Reason: idemtrace.WaitTransaction})
	defer func() { wt.done(err) }()
	// Unless this claim was sent once, it may have landed on an earlier
	// attempt whose answer was lost: unless the record says otherwise,
	// remove it (fenced by the call's token) before giving up.
	giveUp := func(err error) (claimed, *record, bool, error) {
		if !a.sentOnce {
			_ = (&hold{store: s, id: id, token: a.token}).free(ctx)
		}
		return claimed{}, nil, false, err
	}
	if wait.follows() {
		if werr := wait.pause(ctx, retryAfter, retryAfter); werr != nil {
			return giveUp(werr)
		}
	}
	rec, found, err := s.current(ctx, id, nil)
	wt.poll(rec, found, err, fingerprint, a.token, s.now)
	if err != nil {
		return giveUp(err)
	}
	if !found {
		return claimed{}, nil, true, nil
	}
	a.now = s.now()
	if wait.on() && judge(rec, fingerprint, a.token, a.now) == verdictInFlight {
		return claimed{}, &rec, false, nil
	}
	claim, done, err := s.decide(rec, fingerprint, a)
	if !done {
		return claimed{}, nil, true, nil
	}
	if wait.follows() {
		s.learnExec(ctx, rec) // a commit this call watched land
	}
	return claim, nil, false, err
}

// decide answers a claim that lost its condition to rec. done is false
// when rec no longer stands in the way (expired, or its holder died since
// the write): then claim again.
func (s *Store) decide(rec record, fingerprint string, a attempt) (claim claimed, done bool, err error) {
	switch judge(rec, fingerprint, a.token, a.now) {
	case verdictOwn:
		// Our own write: an attempt whose answer was lost had landed.
		a.leaseEnd = rec.LeaseExpiresAt
		return s.leased(rec.ID, a, false), true, nil
	case verdictKeyReuse:
		return claimed{}, true, ErrKeyReuse
	case verdictReplay:
		resp := responseOf(rec)
		return claimed{Replay: &resp, Outcome: OutcomeReplayed, expiresAt: rec.ExpiresAt}, true, nil
	case verdictInFlight:
		return claimed{}, true, &InFlightError{RetryAfter: untilFree(rec, a.now)}
	}
	return claimed{}, false, nil
}

// isConflict reports whether DynamoDB refused a single-item write because
// the item is in a running transaction.
func isConflict(err error) bool {
	var c *types.TransactionConflictException
	return errors.As(err, &c)
}

// attempt is one conditional put: what it wrote and what it found.
type attempt struct {
	claim    claimed   // set when the put succeeded
	current  *record   // the record that beat the condition, nil if none
	token    string    // the lease token this attempt wrote
	now      time.Time // the time the condition compared against
	leaseEnd time.Time
	// sentOnce is true when the SDK sent the put once: a refusal then
	// means that it did not land.
	sentOnce bool
}

// tryReserve sends the conditional put. On a lost condition it returns the
// current record (nil when there is none) and an empty claim.
func (s *Store) tryReserve(ctx context.Context, id, fingerprint, token string) (attempt, error) {
	now := s.now()
	leaseEnd := now.Add(s.lease)
	if dl, ok := ctx.Deadline(); ok {
		leaseEnd = dl
	}
	leaseEnd = leaseEnd.Add(s.margin)
	a := attempt{token: token, now: now, leaseEnd: leaseEnd}
	var sent sends
	out, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: s.withKey(id, map[string]types.AttributeValue{
			s.attr.Status:         str(statusInProgress),
			s.attr.Fingerprint:    str(fingerprint),
			s.attr.LeaseToken:     str(a.token),
			s.attr.LeaseExpiresAt: num(leaseEnd.UnixMilli()),
			s.attr.CreatedAt:      ddbitem.Time(now),
			s.attr.ExpiresAt:      num(now.Add(max(s.retention, leaseEnd.Sub(now))).Unix()),
		}),
		ConditionExpression:       aws.String(claimCondition),
		ExpressionAttributeNames:  s.claimNames(),
		ExpressionAttributeValues: claimValues(now, fingerprint),
		// On success: the item we replaced, if any, tells a takeover apart.
		ReturnValues: types.ReturnValueAllOld,
		// On failure: the item that beat us, so no second read is needed.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, sent.option)
	a.sentOnce = sent.once()
	if err == nil {
		a.claim = s.leased(id, a, s.wasHeldByAnother(out.Attributes, a.token))
		if a.claim.Outcome == OutcomeTakeover {
			if old, err := s.decodeRecord(out.Attributes); err == nil {
				a.claim.deadLease = old.LeaseExpiresAt
			}
		}
		return a, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if isConflict(err) {
		return a, fmt.Errorf("idem: reserve: %w", err)
	}
	if !errors.As(err, &ccf) {
		// Whatever the last answer, an earlier attempt of the SDK's may
		// have landed with its answer lost (a 5xx, then throttling):
		// remove it, fenced by this call's token, so the client's retry
		// is not told its own request is in flight.
		lost := &hold{store: s, id: id, token: a.token}
		_ = lost.free(ctx)
		return a, fmt.Errorf("idem: reserve: %w", err)
	}
	rec, found, err := s.current(ctx, id, ccf.Item)
	if err != nil || !found {
		return a, err
	}
	a.current = &rec
	return a, nil
}

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

// leased is the claim of the caller that holds the key after attempt a.
func (s *Store) leased(id string, a attempt, takeover bool) claimed {
	outcome := OutcomeExecuted
	if takeover {
		outcome = OutcomeTakeover
	}
	return claimed{
		Lease:   &hold{store: s, id: id, token: a.token, expiresAt: a.leaseEnd, claimedAt: a.now},
		Outcome: outcome,
	}
}

// wasHeldByAnother reads PutItem's ALL_OLD attributes. A backend that
// echoes the new item instead (minidyn) shows our own token: no takeover
// can be seen there, and the outcome stays "executed"; the fencing, not
// this label, is what keeps the takeover safe.
func (s *Store) wasHeldByAnother(old map[string]types.AttributeValue, token string) bool {
	st, ok := old[s.attr.Status].(*types.AttributeValueMemberS)
	if !ok || st.Value != statusInProgress {
		return false
	}
	lt, ok := old[s.attr.LeaseToken].(*types.AttributeValueMemberS)
	return ok && lt.Value != token
}

// Get returns the record for a scope, treating an expired record as absent
// (TTL deletes lag by up to two days). ok is false when there is none.
func (s *Store) get(ctx context.Context, scope Scope) (rec record, ok bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.key(scope.ID()),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return record{}, false, fmt.Errorf("idem: get: %w", err)
	}
	if len(out.Item) == 0 {
		return record{}, false, nil
	}
	rec, err = s.decodeRecord(out.Item)
	if err != nil {
		return record{}, false, err
	}
	if rec.Expired(s.now()) {
		return record{}, false, nil
	}
	return rec, true, nil
}
