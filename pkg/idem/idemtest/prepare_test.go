package idemtest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// Hole 4 of issue 36. A TransactWriteItems prepares each item in parallel
// ("Distributed Transactions at Scale in Amazon DynamoDB", USENIX ATC '23,
// the prepare listing): an item is marked as held by the transaction only
// when its condition passes; one whose condition fails is refused without
// being held. So while a doomed transaction is in flight, the item whose
// condition failed stays free: two retries of a long-completed key each
// fail their condition (and read the completed record with ALL_OLD)
// instead of meeting each other as a conflict.
func TestFailedConditionHoldsNothing(t *testing.T) {
	t.Parallel()
	srv, db := setup(t)
	ctx := context.Background()
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("done", "v", "completed")})
	must.NoError(t, err)

	// A retry of the completed key, parked in flight: its condition on
	// "done" fails, its put of "other" passes and is held.
	hold := srv.Hold(idemtest.OpTransactWriteItems)
	first := make(chan error, 1)
	go func() {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			txPut(key("done"), "attribute_not_exists(id)"), txPut(key("other"), ""),
		}})
		first <- err
	}()
	<-hold.Arrived()

	// A second retry of the same key meets a failed condition, not the
	// first retry: the record was never held.
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(key("done"), "attribute_not_exists(id)"),
	}})
	check.Equal(t, []string{"ConditionalCheckFailed"}, reasons(t, err), "a second retry of a completed key")
	var tce *types.TransactionCanceledException
	if check.ErrorAs(t, err, &tce) {
		check.Equal(t, s("completed"), tce.CancellationReasons[0].Item["v"], "the failed condition returns the completed record")
	}

	// Both kinds of reason are reported at once: the failed condition and
	// the item the first transaction holds.
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(key("done"), "attribute_not_exists(id)"), txPut(key("other"), ""),
	}})
	check.Equal(t, []string{"ConditionalCheckFailed", "TransactionConflict"}, reasons(t, err))

	// The item whose condition failed is free for single-item writes and
	// transactional reads; the one that passed is held.
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("done"),
		UpdateExpression: aws.String("SET seen = :t"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": s("yes")}})
	check.NoError(t, err, "an UpdateItem on the item whose condition failed")
	_, err = db.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("t"), Key: key("done")}},
	}})
	check.NoError(t, err, "a TransactGetItems of the item whose condition failed")
	var conflict *types.TransactionConflictException
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("other")})
	check.ErrorAs(t, err, &conflict, "a PutItem on the item whose condition passed")

	hold.Release()
	check.Equal(t, []string{"ConditionalCheckFailed", "None"}, reasons(t, <-first))
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("other")})
	check.NoError(t, err, "the cancelled transaction released what it held")
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("done"), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	check.Equal(t, s("yes"), got.Item["seen"])
}
