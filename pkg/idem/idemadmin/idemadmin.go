// Package idemadmin is for operators: look up the record of one scope
// (operation, principal, key) in an idempotency table, find the record
// of a scope hash a span shows, and evict a record so its key can run
// again. pkg/cmd/idemctl is its command line.
//
// Evict deletes a completed or expired record, or one whose holder's lease
// has ended, with one conditional DeleteItem: never check-then-write.
// Two kinds of record go only when the operator says so, for what their
// eviction costs:
//
//   - A live IN_PROGRESS record (EvictOptions.Force): the live holder
//     keeps running. Its fenced completion then fails with
//     idem.ErrLeaseLost, and the client's retry (or another caller, which
//     may claim the key at once) runs the operation again. Execute,
//     Transact and ExecuteBatch writes are fenced by the same completion,
//     so the first holder's writes never land and the effect happens
//     once; Run and Do's effect outside DynamoDB (an e-mail, a payment)
//     has already happened by the time the completion fails, and happens
//     twice.
//   - A completed record whose first execution committed DynamoDB writes
//     with it (EvictOptions.RerunWrites; Record.Writes): the next request
//     runs the operation again, writes included, over the writes that
//     landed. A write with a condition (a product put only if absent)
//     fails the retry with idem.ErrConditionFailed ("business condition
//     failed"); one without (a counter's ADD) applies twice. Run and Do
//     record no writes: their eviction runs their effect again, which is
//     what an operator evicts them for.
package idemadmin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/record"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/scopeid"
)

// API is the part of the DynamoDB client the package uses;
// *dynamodb.Client implements it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Table is an idempotency table as an operator sees it.
type Table struct {
	// DB is the DynamoDB client.
	DB API
	// Name is the table's name.
	Name string
	// Layout is where the records live in it, as the application's
	// idem.WithLayout says (the zero Layout is the default).
	Layout idemtable.Layout
	// ScopeHasher is the hasher of the traces' scope hashes
	// (pkg/idem/idemotel's WithScopeHasher), with the key the functions
	// use: with it, each Record says its ScopeHash, and Find finds the
	// record of a hash. Nil: no scope hash.
	ScopeHasher *idemtrace.ScopeHasher
}

var (
	// ErrNotFound: the table has no record for the scope.
	ErrNotFound = errors.New("idemadmin: no record for this scope")
	// ErrLiveHolder: the record is IN_PROGRESS and its holder's lease has
	// not ended; Evict without Force left it in place.
	ErrLiveHolder = errors.New("idemadmin: a live holder has the key (evict with force to delete it anyway)")
	// ErrWritesLanded: the record is COMPLETED and its first execution
	// committed DynamoDB writes with it (or may have: a record completed
	// before records counted them); Evict without RerunWrites left it in
	// place, since the next request would run them again.
	ErrWritesLanded = errors.New("idemadmin: the key's first execution committed DynamoDB writes, which its next request would run again (evict with rerun-writes to delete it anyway)")
)

// Record is what an operator sees of one record.
type Record struct {
	// ID is the scope's ID (idem.Scope.ID), without the layout's prefix.
	ID string `json:"id"`
	// ScopeHash is what a trace records in place of the scope
	// (pkg/idem/idemotel's idem.scope_hash, Table.ScopeHasher's hash):
	// the spans of this key are found by it. Empty without a ScopeHasher.
	ScopeHash string `json:"scope_hash,omitempty"`
	Operation string `json:"operation"`
	// Principal is the caller as the way in spelled it; empty, and
	// Anonymous set, for the anonymous scope.
	Principal   string `json:"principal"`
	Anonymous   bool   `json:"anonymous,omitempty"`
	Key         string `json:"key"`
	Status      string `json:"status"` // IN_PROGRESS or COMPLETED
	Fingerprint string `json:"fingerprint"`
	// LeaseExpiresAt is when the holder's lease ends; LeaseLive says it
	// had not when the record was read.
	LeaseExpiresAt time.Time `json:"lease_expires_at,omitzero"`
	LeaseLive      bool      `json:"lease_live"`
	// ResponseStatus is the stored response's status (idem.Response's: an
	// HTTP status for a response idemhttp stored, else the caller's own
	// code), once COMPLETED; 0, and left out of the JSON, when it has none.
	ResponseStatus int `json:"response_status,omitempty"`
	// Format is the format of the stored response, once COMPLETED: 1 for
	// records written before format 2 (pkg/idem's documentation).
	Format int `json:"format,omitempty"`
	// Writes is the number of DynamoDB writes the key's first execution
	// committed with the record, once COMPLETED (Execute, Transact,
	// ExecuteBatch; 0 for Run and Do): evicting the key runs them again.
	// WritesUnknown for a record completed before records counted them.
	Writes int `json:"writes"`
	// Pending is, on a table with multi-Region strong consistency, how
	// many of those writes were recorded with the completion and are not
	// applied yet: the key's next request (or a sweep) applies them, and
	// evicting the key (RerunWrites) drops them.
	Pending     int       `json:"pending,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	CompletedAt time.Time `json:"completed_at,omitzero"`
	// ExpiresAt is the record's expiry (DynamoDB TTL); Expired says it had
	// passed when the record was read: the store counts it as absent.
	ExpiresAt time.Time `json:"expires_at"`
	Expired   bool      `json:"expired"`
}

// WritesUnknown is Record.Writes of a record completed before records
// counted their writes.
const WritesUnknown = record.WritesUnknown

// Lookup reads the record of scope with a consistent read. No record is
// an error wrapping ErrNotFound; an expired one that TTL has not deleted
// yet is returned with Expired set.
func (t Table) Lookup(ctx context.Context, scope idem.Scope) (Record, error) {
	l, err := prepare(t.Layout, scope)
	if err != nil {
		return Record{}, err
	}
	out, err := t.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(t.Name), Key: l.Key(scope.ID()), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, fmt.Errorf("idemadmin: lookup: %w", err)
	}
	if len(out.Item) == 0 {
		return Record{}, fmt.Errorf("%w: %s in %s", ErrNotFound, scope.ID(), t.Name)
	}
	return t.decode(l, scope, out.Item, time.Now())
}

// ClockSkew is how far this machine's clock may run ahead of the clocks of
// the hosts that hold leases, as far as Evict without force trusts it.
const ClockSkew = 5 * time.Second

// EvictOptions say which records Evict may delete besides completed
// records without DynamoDB writes, expired ones and dead holders'.
type EvictOptions struct {
	// Force deletes a live holder's record too.
	Force bool
	// RerunWrites deletes a completed record whose first execution
	// committed DynamoDB writes with it, or may have (Record.Writes other
	// than 0): its next request runs them again.
	RerunWrites bool
}

// Evict deletes the record of scope with one conditional DeleteItem, so
// the key runs again on its next request, and returns the record it
// deleted. It deletes a completed record without DynamoDB writes, an
// expired one, or an in-progress one whose lease has ended; a live
// holder's record only with opts.Force (else the error wraps
// ErrLiveHolder), and a completed record whose writes its next request
// would run again only with opts.RerunWrites (else ErrWritesLanded): see
// the package documentation for what each risks. Refused, it returns the
// record it left. The lease and the expiry count as ended only ClockSkew
// after they passed on this machine's clock: an operator's laptop may
// run ahead of the hosts that hold leases, and a live holder must never
// be evicted by a fast clock. No record is an error wrapping ErrNotFound.
func (t Table) Evict(ctx context.Context, scope idem.Scope, opts EvictOptions) (Record, error) {
	l, err := prepare(t.Layout, scope)
	if err != nil {
		return Record{}, err
	}
	now := time.Now().Add(-ClockSkew)
	cond, names, values := evictCondition(l, opts, now)
	key := l.Key(scope.ID())
	out, err := t.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(t.Name), Key: key,
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return t.refused(ctx, l, scope, key, ccf.Item, now)
	}
	if err != nil {
		return Record{}, fmt.Errorf("idemadmin: evict: %w", err)
	}
	if len(out.Attributes) == 0 { // a backend that does not return ALL_OLD
		return t.base(scope), nil
	}
	rec, derr := t.decode(l, scope, out.Attributes, now)
	if derr != nil { // deleted all the same: a corrupt record goes too
		return t.base(scope), nil
	}
	return rec, nil
}

// evictCondition is Evict's condition at now (less the skew): the record
// exists; unless forced, it is completed, expired, or its lease has
// ended; unless writes may run again, it is not a live completed record
// whose writes were not counted as none.
func evictCondition(l idemtable.Layout, opts EvictOptions, now time.Time) (string, map[string]string, map[string]types.AttributeValue) {
	a := l.Attributes
	cond := "attribute_exists(#pk)"
	names := map[string]string{"#pk": l.PartitionKey}
	values := map[string]types.AttributeValue{}
	if !opts.Force || !opts.RerunWrites {
		names["#st"], names["#exp"] = a.Status, a.ExpiresAt
		values[":completed"], values[":now_s"] = ddbitem.S(record.StatusCompleted), ddbitem.N(now.Unix())
	}
	if !opts.Force {
		cond += " AND (#st = :completed OR #exp < :now_s OR #lexp < :now_ms)"
		names["#lexp"], values[":now_ms"] = a.LeaseExpiresAt, ddbitem.N(now.UnixMilli())
	}
	if !opts.RerunWrites {
		// A record without the count (completed before records counted
		// their writes) may have some: it stays too.
		cond += " AND (#st <> :completed OR #exp < :now_s OR #writes = :none)"
		names["#writes"], values[":none"] = a.Writes, ddbitem.N(0)
	}
	if len(values) == 0 {
		values = nil
	}
	return cond, names, values
}

// refused says why Evict's delete was refused, as one atomic step, from
// the record it found (item; read again where a backend returns none).
func (t Table) refused(ctx context.Context, l idemtable.Layout, scope idem.Scope, key, item map[string]types.AttributeValue, now time.Time) (Record, error) {
	if len(item) == 0 {
		if got, err := t.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.Name), Key: key, ConsistentRead: aws.Bool(true)}); err == nil {
			item = got.Item
		}
	}
	if len(item) == 0 {
		return Record{}, fmt.Errorf("%w: %s in %s", ErrNotFound, scope.ID(), t.Name)
	}
	rec, err := t.decode(l, scope, item, now)
	switch {
	case err != nil:
		return Record{}, fmt.Errorf("%w: %w", ErrLiveHolder, err)
	case rec.Status == record.StatusCompleted && rec.Writes == WritesUnknown:
		return rec, fmt.Errorf("%w: completed by a library that did not count its writes: if its way in was Execute, Transact or ExecuteBatch, they landed", ErrWritesLanded)
	case rec.Status == record.StatusCompleted && rec.Pending > 0:
		return rec, fmt.Errorf("%w: %d writes committed at %s, %d of them recorded and not applied yet (its next request applies them; evicting drops them)", ErrWritesLanded, rec.Writes, rec.CompletedAt.Format(time.RFC3339), rec.Pending)
	case rec.Status == record.StatusCompleted:
		return rec, fmt.Errorf("%w: %d writes committed at %s", ErrWritesLanded, rec.Writes, rec.CompletedAt.Format(time.RFC3339))
	}
	return rec, fmt.Errorf("%w: lease ends %s", ErrLiveHolder, rec.LeaseExpiresAt.Format(time.RFC3339Nano))
}

// prepare validates the layout and the scope, and returns the layout
// with its defaults.
func prepare(layout idemtable.Layout, scope idem.Scope) (idemtable.Layout, error) {
	if err := layout.Validate(); err != nil {
		return idemtable.Layout{}, err
	}
	again, err := rebuild(scope.Operation, scope.Principal, scope.Key, scope.Anonymous())
	if err != nil || again != scope {
		return idemtable.Layout{}, fmt.Errorf("%w: build the scope with idem.NewScope or idem.NewAnonymousScope", errors.Join(idem.ErrInvalidKey, err))
	}
	return layout.WithDefaults(), nil
}

// rebuild is the scope of those parts, as the way in built it.
func rebuild(operation, principal, key string, anonymous bool) (idem.Scope, error) {
	if anonymous {
		return idem.NewAnonymousScope(operation, key)
	}
	return idem.NewScope(operation, principal, key)
}

// base is what a Record says of its scope.
func (t Table) base(scope idem.Scope) Record {
	id := scope.ID()
	return Record{
		ID: id, ScopeHash: t.ScopeHasher.Hash(id), Operation: scope.Operation,
		Principal: scope.Principal, Anonymous: scope.Anonymous(), Key: scope.Key,
	}
}

// decode reads a record item in layout l, at now, with pkg/idem's own
// reader: a record of any format the library reads.
func (t Table) decode(l idemtable.Layout, scope idem.Scope, item map[string]types.AttributeValue, now time.Time) (Record, error) {
	rec, err := record.Decode(l, item)
	if err != nil {
		return Record{}, fmt.Errorf("idemadmin: %s: %w", scope.ID(), err)
	}
	r := t.base(scope)
	r.Status, r.Fingerprint, r.Format, r.Writes = rec.Status, rec.Fingerprint, rec.Format, rec.Writes
	r.Pending = len(rec.Intents)
	r.ExpiresAt, r.CreatedAt, r.CompletedAt = rec.ExpiresAt.UTC(), rec.CreatedAt, rec.CompletedAt
	if !rec.LeaseExpiresAt.IsZero() {
		r.LeaseExpiresAt = rec.LeaseExpiresAt.UTC()
	}
	r.ResponseStatus = rec.Result.Status
	r.Expired = rec.Expired(now)
	r.LeaseLive = r.Status == record.StatusInProgress && !r.Expired && r.LeaseExpiresAt.UnixMilli() >= now.UnixMilli()
	return r, nil
}

// ErrNoScopeHasher: Find was asked for a scope hash on a Table without
// the ScopeHasher that made it.
var ErrNoScopeHasher = errors.New("idemadmin: no ScopeHasher: a scope hash is found only with the key the traces hash with")

// Find returns the records whose scope hash (a span's idem.scope_hash)
// is scopeHash, as Lookup reads them: usually one; none when the record
// has gone (expired and deleted, evicted) or the hash was made with
// another key. operation, the span's idem.operation, narrows the search
// to that operation's records; empty searches them all. The table has no
// index of hashes: Find reads the key of every record it searches, with
// a Query of the one partition in a layout with a PartitionValue, else a
// Scan of the table (its read capacity is the table's size: keep it for
// the odd investigation, not a dashboard).
func (t Table) Find(ctx context.Context, operation, scopeHash string) ([]Record, error) {
	if t.ScopeHasher == nil {
		return nil, ErrNoScopeHasher
	}
	if _, err := hex.DecodeString(scopeHash); err != nil || len(scopeHash) != 16 {
		return nil, fmt.Errorf("idemadmin: scope hash %q: want 16 hex digits, as a span's idem.scope_hash", scopeHash)
	}
	if err := t.Layout.Validate(); err != nil {
		return nil, err
	}
	l := t.Layout.WithDefaults()
	prefix := "v1|"
	if operation != "" {
		prefix = idemtable.LeadingKeyPrefix(operation)
	}
	var found []Record
	err := t.eachID(ctx, l, l.KeyPrefix+prefix, func(id string) error {
		if t.ScopeHasher.Hash(id) != scopeHash {
			return nil
		}
		p, err := scopeid.Parse(id)
		if err != nil {
			return nil // not a scope's ID: another item of a shared table
		}
		scope, err := rebuild(p.Operation, p.Principal, p.Key, p.Anonymous)
		if err != nil {
			return nil
		}
		rec, err := t.Lookup(ctx, scope)
		switch {
		case errors.Is(err, ErrNotFound): // gone since
		case err != nil:
			return err
		default:
			found = append(found, rec)
		}
		return nil
	})
	return found, err
}

// eachID calls f with the scope ID of every item of the table whose key
// attribute holding the ID begins with prefix (the layout's KeyPrefix
// included), reading the keys alone: a Query of the one partition in a
// layout with a PartitionValue, else a Scan of the table.
func (t Table) eachID(ctx context.Context, l idemtable.Layout, prefix string, f func(id string) error) error {
	names := map[string]string{"#pk": l.PartitionKey}
	values := map[string]types.AttributeValue{":prefix": ddbitem.S(prefix)}
	projection := aws.String("#pk")
	if l.SortKey != "" {
		names["#sk"], projection = l.SortKey, aws.String("#pk, #sk")
	}
	query := l.SortKey != "" && l.PartitionValue != ""
	filter := "begins_with(#pk, :prefix)"
	switch {
	case query:
		values[":pv"] = ddbitem.S(l.PartitionValue)
	case l.SortKey != "":
		filter += " AND #sk = :sv"
		values[":sv"] = ddbitem.S(l.SortValue)
	}
	var start map[string]types.AttributeValue
	for {
		var items []map[string]types.AttributeValue
		if query {
			out, err := t.DB.Query(ctx, &dynamodb.QueryInput{
				TableName: aws.String(t.Name), KeyConditionExpression: aws.String("#pk = :pv AND begins_with(#sk, :prefix)"),
				ProjectionExpression: projection, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
				ExclusiveStartKey: start,
			})
			if err != nil {
				return fmt.Errorf("idemadmin: find: %w", err)
			}
			items, start = out.Items, out.LastEvaluatedKey
		} else {
			out, err := t.DB.Scan(ctx, &dynamodb.ScanInput{
				TableName: aws.String(t.Name), FilterExpression: aws.String(filter),
				ProjectionExpression: projection, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
				ExclusiveStartKey: start,
			})
			if err != nil {
				return fmt.Errorf("idemadmin: find: %w", err)
			}
			items, start = out.Items, out.LastEvaluatedKey
		}
		for _, item := range items {
			if id, ok := l.ID(item); ok {
				if err := f(id); err != nil {
					return err
				}
			}
		}
		if len(start) == 0 {
			return nil
		}
	}
}
