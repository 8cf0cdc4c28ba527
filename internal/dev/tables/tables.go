// Package tables is the single definition of the DynamoDB tables this
// project uses outside AWS: their keys, TTL attribute, stream settings and
// the environment variables that name them. Tests, the local runner and
// the template drift test (which holds template.yaml, the deployed
// definition, against it) all read it, so a schema change is made here
// once.
package tables

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// Key and TTL attributes, as the packages that own the items define them.
const (
	// AttrID is the hash key of the products and idempotency tables.
	AttrID = idemtable.KeyAttribute
	// AttrAggregateID is the hash key of the outbox table.
	AttrAggregateID = outbox.AttrAggregateID
	// AttrEventID is the range key of the outbox table (a UUIDv7).
	AttrEventID = outbox.AttrEventID
	// AttrExpiresAt is the TTL attribute (epoch seconds) of the idempotency
	// and outbox tables.
	AttrExpiresAt = outbox.AttrExpiresAt
)

// Table describes one table's schema. Every key attribute is a string but
// a range key of type RangeKeyType N.
type Table struct {
	// Logical is the table's short name ("products") and the prefix of the
	// names tests generate.
	Logical string
	// EnvVar names the environment variable that carries the physical name.
	EnvVar string
	// HashKey and RangeKey are the key attribute names; RangeKey may be empty.
	HashKey, RangeKey string
	// RangeKeyType is the range key's type: S when empty, or N.
	RangeKeyType types.ScalarAttributeType
	// TTLAttribute is the DynamoDB TTL attribute, or empty when none.
	TTLAttribute string
	// StreamView is the stream view type, or empty when the table has no stream.
	StreamView types.StreamViewType
}

// Products holds one item per product, keyed by the product id.
var Products = Table{Logical: "products", EnvVar: config.ProductsTable.Name, HashKey: AttrID}

// Idempotency holds one record per scoped idempotency key, in pkg/idem's
// schema.
var Idempotency = Table{Logical: "idempotency", EnvVar: config.IdempotencyTable.Name, HashKey: idemtable.KeyAttribute, TTLAttribute: idemtable.TTLAttribute}

// Outbox holds domain events until the stream relay has published them.
var Outbox = Table{
	Logical: "outbox", EnvVar: config.OutboxTable.Name,
	HashKey: AttrAggregateID, RangeKey: AttrEventID,
	TTLAttribute: AttrExpiresAt, StreamView: types.StreamViewTypeNewImage,
}

// Sellers holds a seller's statistics in up to sellers.Shards items, its
// shards (write sharding: a hot seller's batches update different items),
// written only by the sellerstats consumer and summed by the reader.
var Sellers = Table{
	Logical: "sellers", EnvVar: config.SellersTable.Name,
	HashKey: sellers.AttrSellerID, RangeKey: sellers.AttrShard, RangeKeyType: types.ScalarAttributeTypeN,
}

// Callers holds what the API knows of its callers (internal/access): the
// sellers each IAM caller may act for (grants, which operators write) and
// each caller's count of creations per window (expiring with the window).
var Callers = Table{Logical: "callers", EnvVar: config.CallersTable.Name, HashKey: access.AttrID, TTLAttribute: access.AttrExpiresAt}

// All lists every table in a stable order.
func All() []Table { return []Table{Products, Idempotency, Outbox, Sellers, Callers} }

// CreateTableInput returns the on-demand CreateTable request for the table
// under the physical name.
func (t Table) CreateTableInput(name string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(t.HashKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(t.HashKey), KeyType: types.KeyTypeHash},
		},
	}
	if t.RangeKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(t.RangeKey), AttributeType: t.RangeKeyAttributeType()})
		in.KeySchema = append(in.KeySchema,
			types.KeySchemaElement{AttributeName: aws.String(t.RangeKey), KeyType: types.KeyTypeRange})
	}
	if t.StreamView != "" {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: t.StreamView}
	}
	return in
}

// RangeKeyAttributeType is the range key's type: RangeKeyType, S by
// default.
func (t Table) RangeKeyAttributeType() types.ScalarAttributeType {
	if t.RangeKeyType == "" {
		return types.ScalarAttributeTypeS
	}
	return t.RangeKeyType
}

// CreateOptions tunes Create for backends that lack part of the API.
type CreateOptions struct {
	// SkipTTL leaves TTL off, for a server without the TTL API. Nothing in
	// this project depends on TTL deletion, which AWS itself delays by up
	// to two days: readers check expires_at themselves.
	SkipTTL bool
	// WaitTimeout bounds the wait for the table to become ACTIVE (default 2m).
	WaitTimeout time.Duration
}

// Create creates the table under the physical name, waits until it is
// ACTIVE and enables TTL. An existing table is an error wrapping
// *types.ResourceInUseException.
func (t Table) Create(ctx context.Context, client *dynamodb.Client, name string, opts CreateOptions) error {
	if _, err := client.CreateTable(ctx, t.CreateTableInput(name)); err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	wait := opts.WaitTimeout
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	if err := waitActive(ctx, client, name, wait); err != nil {
		return err
	}
	if t.TTLAttribute == "" || opts.SkipTTL {
		return nil
	}
	_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable ttl on %s: %w", name, err)
	}
	return nil
}

// Names holds the physical table names a process works with.
type Names struct {
	Products, Idempotency, Outbox, Sellers, Callers string
}

// Of returns the physical name configured for the table.
func (n Names) Of(t Table) string {
	switch t.Logical {
	case Products.Logical:
		return n.Products
	case Idempotency.Logical:
		return n.Idempotency
	case Outbox.Logical:
		return n.Outbox
	case Sellers.Logical:
		return n.Sellers
	case Callers.Logical:
		return n.Callers
	}
	return ""
}

// CreateAll creates every table under the names in n.
func CreateAll(ctx context.Context, client *dynamodb.Client, n Names, opts CreateOptions) error {
	for _, t := range All() {
		if err := t.Create(ctx, client, n.Of(t), opts); err != nil {
			return err
		}
	}
	return nil
}

// waitActive polls DescribeTable until the table is ACTIVE. A backend that
// reports no status at all (the embedded store creates tables synchronously)
// counts as ready; the SDK's waiter would wait forever for it.
func waitActive(ctx context.Context, client *dynamodb.Client, name string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	delay := 20 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err == nil && out.Table != nil {
			switch out.Table.TableStatus {
			case types.TableStatusActive, "":
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for table %s to be ACTIVE: %w (last error: %v)", name, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}
