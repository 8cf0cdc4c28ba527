// Package idemadmin is for operators: look up the record of one scope
// (operation, principal, key) in an idempotency table, and evict it so
// the key can run again. pkg/cmd/idemctl is its command line.
//
// Evict deletes a completed or expired record, or one whose holder's lease
// has ended, with one conditional DeleteItem: never check-then-write. A
// live IN_PROGRESS record is deleted only when forced, and forcing has a
// cost: the live holder keeps running. Its fenced completion then fails
// with idem.ErrLeaseLost, and the client's retry (or another caller,
// which may claim the key at once) runs the operation again. Execute,
// Transact and ExecuteBatch writes are fenced by the same completion, so
// the first holder's writes never land and the effect happens once; Run
// and Do's effect outside DynamoDB (an e-mail, a payment) has already
// happened by the time the completion fails, and happens twice.
package idemadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/record"
)

// API is the part of the DynamoDB client the package uses;
// *dynamodb.Client implements it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var (
	// ErrNotFound: the table has no record for the scope.
	ErrNotFound = errors.New("idemadmin: no record for this scope")
	// ErrLiveHolder: the record is IN_PROGRESS and its holder's lease has
	// not ended; Evict without force left it in place.
	ErrLiveHolder = errors.New("idemadmin: a live holder has the key (evict with force to delete it anyway)")
)

// Record is what an operator sees of one record.
type Record struct {
	// ID is the scope's ID (idem.Scope.ID), without the layout's prefix.
	ID string `json:"id"`
	// ScopeHash is what a trace records in place of the scope
	// (idemtrace.ScopeHash; pkg/idem/idemotel's idem.scope_hash): the
	// spans of this key are found by it.
	ScopeHash   string `json:"scope_hash"`
	Operation   string `json:"operation"`
	Principal   string `json:"principal"`
	Key         string `json:"key"`
	Status      string `json:"status"` // IN_PROGRESS or COMPLETED
	Fingerprint string `json:"fingerprint"`
	// LeaseExpiresAt is when the holder's lease ends; LeaseLive says it
	// had not when the record was read.
	LeaseExpiresAt time.Time `json:"lease_expires_at,omitzero"`
	LeaseLive      bool      `json:"lease_live"`
	// ResponseStatus is the stored response's HTTP status, once COMPLETED,
	// for a response idemhttp stored (or any record of format 1).
	ResponseStatus int `json:"response_status,omitempty"`
	// Format is the format of the stored response, once COMPLETED: 1 for
	// records written before format 2 (pkg/idem's documentation).
	Format      int       `json:"format,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	CompletedAt time.Time `json:"completed_at,omitzero"`
	// ExpiresAt is the record's expiry (DynamoDB TTL); Expired says it had
	// passed when the record was read: the store counts it as absent.
	ExpiresAt time.Time `json:"expires_at"`
	Expired   bool      `json:"expired"`
}

// Lookup reads the record of scope in table, laid out as layout
// (idemtable.Layout{} is the default), with a consistent read. No record
// is an error wrapping ErrNotFound; an expired one that TTL has not
// deleted yet is returned with Expired set.
func Lookup(ctx context.Context, db API, table string, layout idemtable.Layout, scope idem.Scope) (Record, error) {
	l, err := prepare(layout, scope)
	if err != nil {
		return Record{}, err
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: l.Key(scope.ID()), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, fmt.Errorf("idemadmin: lookup: %w", err)
	}
	if len(out.Item) == 0 {
		return Record{}, fmt.Errorf("%w: %s in %s", ErrNotFound, scope.ID(), table)
	}
	return decode(l, scope, out.Item, time.Now())
}

// ClockSkew is how far this machine's clock may run ahead of the clocks of
// the hosts that hold leases, as far as Evict without force trusts it.
const ClockSkew = 5 * time.Second

// Evict deletes the record of scope with one conditional DeleteItem, so
// the key runs again on its next request, and returns the record it
// deleted. Without force, the condition admits a COMPLETED record, an
// expired one, or an IN_PROGRESS one whose lease has ended; a live holder's
// record stays, and the error wraps ErrLiveHolder. The lease and the
// expiry count as ended only ClockSkew after they passed on this
// machine's clock: an operator's laptop may run ahead of the hosts that
// hold leases, and a live holder must never be evicted by a fast clock.
// With force, any record
// goes: see the package documentation for what that risks. No record is
// an error wrapping ErrNotFound.
func Evict(ctx context.Context, db API, table string, layout idemtable.Layout, scope idem.Scope, force bool) (Record, error) {
	l, err := prepare(layout, scope)
	if err != nil {
		return Record{}, err
	}
	a := l.Attributes
	now := time.Now().Add(-ClockSkew)
	cond := "attribute_exists(#pk)"
	names := map[string]string{"#pk": l.PartitionKey}
	var values map[string]types.AttributeValue
	if !force {
		cond += " AND (#st = :completed OR #exp < :now_s OR #lexp < :now_ms)"
		names["#st"], names["#exp"], names["#lexp"] = a.Status, a.ExpiresAt, a.LeaseExpiresAt
		values = map[string]types.AttributeValue{
			":completed": ddbitem.S(record.StatusCompleted), ":now_s": ddbitem.N(now.Unix()), ":now_ms": ddbitem.N(now.UnixMilli()),
		}
	}
	key := l.Key(scope.ID())
	out, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: key,
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// The delete was refused as one atomic step; this only says why.
		item := ccf.Item
		if len(item) == 0 { // backends that return none
			if got, gerr := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)}); gerr == nil {
				item = got.Item
			}
		}
		if len(item) == 0 {
			return Record{}, fmt.Errorf("%w: %s in %s", ErrNotFound, scope.ID(), table)
		}
		rec, derr := decode(l, scope, item, now)
		if derr != nil {
			return Record{}, fmt.Errorf("%w: %w", ErrLiveHolder, derr)
		}
		return rec, fmt.Errorf("%w: lease ends %s", ErrLiveHolder, rec.LeaseExpiresAt.Format(time.RFC3339Nano))
	}
	if err != nil {
		return Record{}, fmt.Errorf("idemadmin: evict: %w", err)
	}
	if len(out.Attributes) == 0 { // a backend that does not return ALL_OLD
		return base(scope), nil
	}
	rec, derr := decode(l, scope, out.Attributes, now)
	if derr != nil { // deleted all the same: a corrupt record goes too
		return base(scope), nil
	}
	return rec, nil
}

// prepare validates the layout and the scope, and returns the layout
// with its defaults.
func prepare(layout idemtable.Layout, scope idem.Scope) (idemtable.Layout, error) {
	if err := layout.Validate(); err != nil {
		return idemtable.Layout{}, err
	}
	again, err := idem.NewScope(scope.Operation, scope.Principal, scope.Key)
	if scope.Anonymous() {
		again, err = idem.NewAnonymousScope(scope.Operation, scope.Key)
	}
	if err != nil || again != scope {
		return idemtable.Layout{}, fmt.Errorf("%w: build the scope with idem.NewScope or idem.NewAnonymousScope", errors.Join(idem.ErrInvalidKey, err))
	}
	return layout.WithDefaults(), nil
}

// base is what a Record says of its scope.
func base(scope idem.Scope) Record {
	id := scope.ID()
	return Record{ID: id, ScopeHash: idemtrace.ScopeHash(id), Operation: scope.Operation, Principal: scope.Principal, Key: scope.Key}
}

// decode reads a record item in layout l, at now, with pkg/idem's own
// reader: a record of any format the library reads.
func decode(l idemtable.Layout, scope idem.Scope, item map[string]types.AttributeValue, now time.Time) (Record, error) {
	rec, err := record.Decode(l, item)
	if err != nil {
		return Record{}, fmt.Errorf("idemadmin: %s: %w", scope.ID(), err)
	}
	r := base(scope)
	r.Status, r.Fingerprint, r.Format = rec.Status, rec.Fingerprint, rec.Format
	r.ExpiresAt, r.CreatedAt, r.CompletedAt = rec.ExpiresAt.UTC(), rec.CreatedAt, rec.CompletedAt
	if !rec.LeaseExpiresAt.IsZero() {
		r.LeaseExpiresAt = rec.LeaseExpiresAt.UTC()
	}
	if status, err := strconv.Atoi(rec.Meta[record.MetaStatus]); err == nil {
		r.ResponseStatus = status
	}
	r.Expired = rec.Expired(now)
	r.LeaseLive = r.Status == record.StatusInProgress && !r.Expired && r.LeaseExpiresAt.UnixMilli() >= now.UnixMilli()
	return r, nil
}
