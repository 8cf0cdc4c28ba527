package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table's schema: a string partition key and a TTL attribute. Any
// table with this key works; records carry nothing else in their key.
const (
	// TableKey is the partition key attribute (S): the scope's ID.
	TableKey = "id"
	// TTLAttribute is the record's expiry in epoch seconds (N). Turn
	// DynamoDB TTL on for it so expired records are deleted; the store
	// never depends on the deletion, which DynamoDB only promises within
	// days: it treats an expired record as absent.
	TTLAttribute = "expires_at"
)

// TableAPI is the part of the DynamoDB client CreateTable uses;
// *dynamodb.Client implements it.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTableInput is the CreateTable request for an idempotency table
// named name: partition key TableKey (S), on-demand billing.
func CreateTableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(TableKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(TableKey), KeyType: types.KeyTypeHash}},
	}
}

// CreateTable creates an idempotency table (CreateTableInput), waits until
// it is ACTIVE and turns TTL on for TTLAttribute. It is for tests, tools
// and first-time setup; production tables belong in infrastructure code
// (this project's template.yaml declares one). An existing table is an
// error wrapping *types.ResourceInUseException.
func CreateTable(ctx context.Context, db TableAPI, name string) error {
	if _, err := db.CreateTable(ctx, CreateTableInput(name)); err != nil {
		return fmt.Errorf("idem: create table %s: %w", name, err)
	}
	if err := waitActive(ctx, db, name); err != nil {
		return err
	}
	_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("idem: enable TTL on %s: %w", name, err)
	}
	return nil
}

// waitActive polls DescribeTable until the table is ACTIVE, or ctx ends.
// A table that reports no status counts as ready: some DynamoDB-compatible
// servers create tables synchronously and report none, and the SDK's
// waiter would wait for them forever.
func waitActive(ctx context.Context, db TableAPI, name string) error {
	delay := 20 * time.Millisecond
	for {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		var notFound *types.ResourceNotFoundException
		switch {
		case err == nil && out.Table != nil && (out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == ""):
			return nil
		case err != nil && !errors.As(err, &notFound):
			return fmt.Errorf("idem: describe table %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("idem: wait for table %s to be ACTIVE: %w", name, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}
