package access

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemlambda/idemlambda/internal/ids"
)

// DB is the part of the DynamoDB client Grant and Revoke use;
// *dynamodb.Client implements it.
type DB interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Grant lets the caller whose ID is caller act for sellers (seller ids,
// or AnySeller), adding them to every replica of its grant in one
// transaction: what cmd/grant does for operators, and the local runner
// and tests for themselves. The function's own role cannot write grants.
//
// A global table with multi-Region strong consistency refuses
// transactions: there the replicas are written one after another, each
// change idempotent (a set's ADD or DELETE), so a grant that fails part
// way leaves replicas that differ (Granted says ErrReplicasDiffer) until
// it is run again.
func Grant(ctx context.Context, db DB, table, caller string, sellers ...string) error {
	return changeGrant(ctx, db, table, caller, "ADD", sellers)
}

// Revoke takes sellers out of every replica of the caller's grant, in one
// transaction. From its commit on, no creation for them commits: a
// creation checks a replica in its own transaction, and one whose
// transaction holds a replica makes the revocation wait for it (DynamoDB
// cancels the revocation, which is tried again).
func Revoke(ctx context.Context, db DB, table, caller string, sellers ...string) error {
	return changeGrant(ctx, db, table, caller, "DELETE", sellers)
}

// grantAttempts bounds the attempts of a grant's transaction that meets
// creations holding its replicas.
const grantAttempts = 10

func changeGrant(ctx context.Context, db DB, table, caller, op string, sellers []string) error {
	if caller == "" || len(sellers) == 0 {
		return errors.New("access: a grant names a caller and at least one seller")
	}
	set := make([]string, 0, len(sellers))
	for _, s := range sellers {
		if s != AnySeller {
			id, err := ids.Parse(s)
			if err != nil {
				return fmt.Errorf("access: grant: %w", err)
			}
			s = id.String() // the spelling a creation's check compares with
		}
		if !slices.Contains(set, s) { // a set with a duplicate is refused
			set = append(set, s)
		}
	}
	items := make([]types.TransactWriteItem, GrantReplicas)
	for r := range items {
		items[r] = types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(table),
			Key:                       grantKey(caller, r),
			UpdateExpression:          aws.String(op + " #sellers :sellers"),
			ExpressionAttributeNames:  map[string]string{"#sellers": AttrSellerIDs},
			ExpressionAttributeValues: map[string]types.AttributeValue{":sellers": &types.AttributeValueMemberSS{Value: set}},
		}}
	}
	for attempt := 1; ; attempt++ {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		if strongRefusal(err) {
			return changeEachReplica(ctx, db, items, op, caller)
		}
		if !heldByCreation(err) || attempt >= grantAttempts {
			return fmt.Errorf("access: %s grant of %s: %w", op, caller, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("access: %s grant of %s: %w", op, caller, ctx.Err())
		case <-time.After(time.Duration(rand.Int64N(int64(10*time.Millisecond) << min(attempt, 5)))):
		}
	}
}

// changeEachReplica makes a grant's change on an MRSC table, one replica
// at a time.
func changeEachReplica(ctx context.Context, db DB, items []types.TransactWriteItem, op, caller string) error {
	for _, it := range items {
		u := it.Update
		if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
		}); err != nil {
			return fmt.Errorf("access: %s grant of %s: %w", op, caller, err)
		}
	}
	return nil
}

// strongRefusal reports whether err is DynamoDB's refusal of a
// transaction on a global table with multi-Region strong consistency.
func strongRefusal(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		return false
	}
	msg := strings.ToLower(apiErr.ErrorMessage())
	return strings.Contains(msg, "transaction") &&
		(strings.Contains(msg, "multiregionconsistency") || strings.Contains(msg, "strong consistency"))
}

// heldByCreation reports whether a transaction was cancelled because a
// running creation held one of its items.
func heldByCreation(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return true
		}
	}
	return false
}

// Reader is the part of the DynamoDB client Granted uses;
// *dynamodb.Client implements it.
type Reader interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// ErrReplicasDiffer reports a grant whose replicas do not list the same
// sellers: written by something other than Grant and Revoke. Granting or
// revoking the sellers in question again makes them alike.
var ErrReplicasDiffer = errors.New("access: the replicas of the grant differ")

// Granted returns the sellers the caller's grant lists, sorted, read
// consistently from every replica; none for a caller without one.
func Granted(ctx context.Context, db Reader, table, caller string) ([]string, error) {
	keys := make([]map[string]types.AttributeValue, GrantReplicas)
	for r := range keys {
		keys[r] = grantKey(caller, r)
	}
	req := map[string]types.KeysAndAttributes{table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	var items []map[string]types.AttributeValue
	for len(req) > 0 {
		out, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, fmt.Errorf("access: read the grant of %s: %w", caller, err)
		}
		items = append(items, out.Responses[table]...)
		req = out.UnprocessedKeys
	}
	var first []string
	for i := range GrantReplicas {
		var sellers []string
		if i < len(items) {
			if ss, ok := items[i][AttrSellerIDs].(*types.AttributeValueMemberSS); ok {
				sellers = slices.Sorted(slices.Values(ss.Value))
			}
		}
		if i == 0 {
			first = sellers
		} else if !slices.Equal(first, sellers) {
			return first, fmt.Errorf("%w: %s lists %v in one and %v in another", ErrReplicasDiffer, caller, first, sellers)
		}
	}
	return first, nil
}
