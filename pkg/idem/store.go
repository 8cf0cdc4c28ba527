package idem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
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
	// it, to run each Execute scenario in both claim modes.
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
	trace            *idemtrace.Trace // WithTrace
	wait             time.Duration    // WithWait
	learned          *learned
	tbl              tableState // the table's kind: WithTableKind, Learn
	// region is WithRegion's (or Homes.Region); homes is the state
	// WithHomes gives the store (then db routes each call to its key's
	// home).
	region string
	homes  *homes
	// setups finish options that need the whole store (WithHomes), in
	// order, once the others are applied.
	setups []func(db API) error
}

// Option configures a Store.
type Option func(*Store)

// withClock replaces time.Now, for tests that move time.
func withClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithRetention sets how long a completed key replays before it expires.
func WithRetention(d time.Duration) Option { return func(s *Store) { s.retention = d } }

// WithMaxResponseBytes limits the response stored for replay (default 64
// KB, at most 300 KB), counted as DynamoDB counts it (the package
// documentation's "Limits").
func WithMaxResponseBytes(n int) Option { return func(s *Store) { s.maxResponseBytes = n } }

// WithReleaseTimeout bounds a release, which runs detached from the
// caller's (possibly cancelled) context, and the completion of an effect
// that already happened (default 3 s).
func WithReleaseTimeout(d time.Duration) Option { return func(s *Store) { s.releaseTimeout = d } }

// WithConflictAttempts bounds the attempts of a write that meets another
// caller's (default 5): a transaction cancelled by a conflict or
// throttling, and a claim whose winner vanished before it could be read.
func WithConflictAttempts(n int) Option {
	return func(s *Store) { s.maxAttempts, s.maxTxAttempts = n, n }
}

// WithLayout keeps the records where layout says (idemtable.Layout: key
// attributes, a prefix to the scope's ID, attribute names); the default is
// idemtable.Layout{}. Every store on one table must use the same layout,
// and a scope whose ID does not fit its key is ErrInvalidKey.
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
	if told := s.tbl.told; told != nil {
		if err := checkKind(told.Kind); err != nil {
			return nil, err
		}
		s.tbl.known.Store(told)
	}
	s.tbl.describe, _ = db.(idemtable.Describer)
	if s.cacheEntries > 0 {
		s.cache = newCache(s.cacheEntries, s.cacheBytes)
	}
	for _, setup := range s.setups {
		if err := setup(db); err != nil {
			return nil, err
		}
	}
	if told := s.tbl.told; told != nil {
		if err := s.fits(told.Kind); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// decodeRecord reads an item in the store's layout; a missing or
// mistyped required attribute is errCorruptRecord, never a panic.
func (s *Store) decodeRecord(item map[string]types.AttributeValue) (record, error) {
	return stored.Decode(s.layout, item)
}

// key is the primary key of the record of the scope whose ID is id, in
// the store's layout.
func (s *Store) key(id string) map[string]types.AttributeValue { return s.layout.Key(id) }

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
