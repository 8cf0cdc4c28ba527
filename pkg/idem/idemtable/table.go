package idemtable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/scopeid"
)

// The default layout's schema: a string partition key and a TTL
// attribute. Any table with this key works; records carry nothing else in
// their key. A Layout names others.
const (
	// KeyAttribute is the default partition key attribute (S): the
	// scope's ID.
	KeyAttribute = "id"
	// TTLAttribute is the default name of the record's expiry in epoch
	// seconds (N). Turn
	// DynamoDB TTL on for it so expired records are deleted; the store
	// never depends on the deletion, which DynamoDB only promises within
	// days: it treats an expired record as absent.
	TTLAttribute = "expires_at"
)

// API is the part of the DynamoDB client Create uses;
// *dynamodb.Client implements it.
type API interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Input is the CreateTable request for an idempotency table named name in
// layout (Layout{} is the default): its partition key (S), its sort key
// (S) if it has one, on-demand billing. It does not validate layout;
// Create does.
func Input(name string, layout Layout) *dynamodb.CreateTableInput {
	layout = layout.WithDefaults()
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(layout.PartitionKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(layout.PartitionKey), KeyType: types.KeyTypeHash}},
	}
	if layout.SortKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(layout.SortKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(layout.SortKey), KeyType: types.KeyTypeRange})
	}
	return in
}

// Create creates an idempotency table in layout (Input; Layout{} is the
// default), waits until it is ACTIVE and turns TTL on for the layout's
// expiry attribute (TTLAttribute by default), unless the table is a
// global table with multi-Region strong consistency, which supports no
// TTL (a store's Sweep deletes its expired records). It is for tests,
// tools and first-time setup; production tables belong in infrastructure
// code (this project's template.yaml declares one). An invalid layout is
// an error and creates nothing; an existing table is an error wrapping
// *types.ResourceInUseException.
func Create(ctx context.Context, db API, name string, layout Layout) error {
	if err := layout.Validate(); err != nil {
		return err
	}
	if _, err := db.CreateTable(ctx, Input(name, layout)); err != nil {
		return fmt.Errorf("idemtable: create table %s: %w", name, err)
	}
	desc, err := waitActive(ctx, db, name)
	if err != nil {
		return err
	}
	if desc != nil && infoOf(desc).Kind == MRSC {
		return nil
	}
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(layout.WithDefaults().Attributes.ExpiresAt), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("idemtable: enable TTL on %s: %w", name, err)
	}
	return nil
}

// waitActive polls DescribeTable until the table is ACTIVE, or ctx ends,
// and returns its description. A table that reports no status counts as
// ready: some DynamoDB-compatible servers create tables synchronously and
// report none, and the SDK's waiter would wait for them forever.
func waitActive(ctx context.Context, db API, name string) (*types.TableDescription, error) {
	delay := 20 * time.Millisecond
	for {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		var notFound *types.ResourceNotFoundException
		switch {
		case err == nil && out.Table != nil && (out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == ""):
			return out.Table, nil
		case err != nil && !errors.As(err, &notFound):
			return nil, fmt.Errorf("idemtable: describe table %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("idemtable: wait for table %s to be ACTIVE: %w", name, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// LeadingKeyPrefix is what the partition key of every record of operation
// begins with, and the key of no record of another operation: the length
// prefix says where the operation ends. To confine a role to one
// operation's records, give its policy the condition
// ForAllValues:StringLike on dynamodb:LeadingKeys of
// LeadingKeyPrefix(operation)+"*". That is the default layout's; a
// Layout's own method accounts for its KeyPrefix and sort key.
func LeadingKeyPrefix(operation string) string { return scopeid.Prefix(operation) }
