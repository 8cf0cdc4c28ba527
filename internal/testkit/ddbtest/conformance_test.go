package ddbtest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
)

// The conformance suite pins the DynamoDB behaviour the project relies on. It
// runs unchanged on every backend (DYNAMODB_TEST_BACKEND).

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"id": s(id)}
}

func TestConformanceConditionalPutHasExactlyOneWinner(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	const writers = 64
	var wins, lost, other atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			<-start
			_, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
				TableName: aws.String(env.Tables.Idempotency),
				Item: map[string]types.AttributeValue{
					"id": s("contended"), "writer": s(fmt.Sprint(i)),
				},
				ConditionExpression: aws.String("attribute_not_exists(id)"),
			})
			var ccf *types.ConditionalCheckFailedException
			switch {
			case err == nil:
				wins.Add(1)
			case errors.As(err, &ccf):
				lost.Add(1)
			default:
				other.Add(1)
				t.Errorf("writer %d: unexpected error: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("backend=%s writers=%d winners=%d conditional_failures=%d other=%d",
		env.Kind, writers, wins.Load(), lost.Load(), other.Load())
	assert.EqualValues(t, 1, wins.Load(), "exactly one conditional PutItem may win")
	assert.EqualValues(t, writers-1, lost.Load())
	assert.Equal(t, writers, env.Counter.Get("PutItem"), "every writer sent one request")
}

func transactItems(env *ddbtest.Env, fence string) []types.TransactWriteItem {
	return []types.TransactWriteItem{
		{Put: &types.Put{
			TableName:           aws.String(env.Tables.Products),
			Item:                map[string]types.AttributeValue{"id": s("p1"), "name": s("Widget")},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		}},
		{Put: &types.Put{
			TableName: aws.String(env.Tables.Outbox),
			Item:      map[string]types.AttributeValue{"aggregate_id": s("p1"), "event_id": s("e1")},
		}},
		{Update: &types.Update{
			TableName:                           aws.String(env.Tables.Idempotency),
			Key:                                 key("k1"),
			UpdateExpression:                    aws.String("SET #st = :done"),
			ConditionExpression:                 aws.String("lease_token = :mine AND #st = :prog"),
			ExpressionAttributeNames:            map[string]string{"#st": "status"},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":done": s("COMPLETED"), ":prog": s("IN_PROGRESS"), ":mine": s(fence)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	}
}

func count(t *testing.T, env *ddbtest.Env, table string) int {
	t.Helper()
	out, err := env.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return len(out.Items)
}

func seedLease(t *testing.T, env *ddbtest.Env, token string) {
	t.Helper()
	_, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(env.Tables.Idempotency),
		Item:      map[string]types.AttributeValue{"id": s("k1"), "status": s("IN_PROGRESS"), "lease_token": s(token)},
	})
	require.NoError(t, err)
}

func TestConformanceTransactWriteIsAllOrNothing(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	seedLease(t, env, "holder-b")

	// A fenced-out holder: the last item's condition fails, so nothing lands.
	_, err := env.Client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
		TransactItems: transactItems(env, "holder-a"),
	})
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 3, "one reason per item, in item order")
	codes := make([]string, 3)
	for i, r := range tce.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	t.Logf("backend=%s cancellation codes=%v", env.Kind, codes)
	assert.Equal(t, []string{"None", "None", "ConditionalCheckFailed"}, codes)
	assert.Zero(t, count(t, env, env.Tables.Products), "cancelled transaction wrote a product")
	assert.Zero(t, count(t, env, env.Tables.Outbox), "cancelled transaction wrote an outbox item")

	// The holder of the lease commits all three.
	_, err = env.Client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
		TransactItems: transactItems(env, "holder-b"),
	})
	require.NoError(t, err)
	assert.Equal(t, 1, count(t, env, env.Tables.Products))
	assert.Equal(t, 1, count(t, env, env.Tables.Outbox))

	// Same transaction again: now the first item's condition fails.
	seedLease(t, env, "holder-c")
	_, err = env.Client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
		TransactItems: transactItems(env, "holder-c"),
	})
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 3)
	assert.Equal(t, "ConditionalCheckFailed", aws.ToString(tce.CancellationReasons[0].Code))
	got, err := env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(env.Tables.Idempotency), Key: key("k1"), ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	assert.Equal(t, s("IN_PROGRESS"), got.Item["status"], "the idempotency update rolled back with the failed put")
}

// TestConformanceReturnValuesOnConditionCheckFailure records, per backend,
// where ALL_OLD comes back. pkg/idem reads Env.ReturnsOldItemOnConditionFailure
// to know where it needs a fallback GetItem; if a backend changes, this test
// fails and says which way.
func TestConformanceReturnValuesOnConditionCheckFailure(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	ctx := context.Background()
	seedLease(t, env, "holder-b")

	_, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(env.Tables.Idempotency),
		Item:                                map[string]types.AttributeValue{"id": s("k1"), "status": s("IN_PROGRESS"), "lease_token": s("holder-a")},
		ConditionExpression:                 aws.String("attribute_not_exists(id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
	putItem := ccf.Item

	_, err = env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(env.Tables.Idempotency),
		Key:                                 key("k1"),
		UpdateExpression:                    aws.String("SET #st = :done"),
		ConditionExpression:                 aws.String("lease_token = :mine"),
		ExpressionAttributeNames:            map[string]string{"#st": "status"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":done": s("COMPLETED"), ":mine": s("holder-a")},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	require.ErrorAs(t, err, &ccf)
	updateItem := ccf.Item

	_, err = env.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: transactItems(env, "holder-a")})
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 3)
	txItem := tce.CancellationReasons[2].Item

	t.Logf("backend=%s ALL_OLD returned: PutItem=%t UpdateItem=%t TransactWriteItems=%t",
		env.Kind, putItem != nil, updateItem != nil, txItem != nil)

	// UpdateItem and transactions return the old item on every backend we support.
	require.NotNil(t, txItem, "TransactWriteItems must return ALL_OLD in CancellationReasons")
	assert.Equal(t, s("holder-b"), txItem["lease_token"])
	require.NotNil(t, updateItem, "UpdateItem must return ALL_OLD")
	assert.Equal(t, s("holder-b"), updateItem["lease_token"])

	if env.PutItemReturnsOldItem {
		require.NotNil(t, putItem, "PutItem should return ALL_OLD on this backend")
		assert.Equal(t, s("holder-b"), putItem["lease_token"])
	} else {
		assert.Nil(t, putItem, "this backend now returns ALL_OLD on PutItem: set PutItemReturnsOldItem")
	}

	// A Put inside a transaction, as pkg/idem's transact mode claims a key.
	_, err = env.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
		TableName:                           aws.String(env.Tables.Idempotency),
		Item:                                map[string]types.AttributeValue{"id": s("k1"), "status": s("COMPLETED"), "lease_token": s("holder-a")},
		ConditionExpression:                 aws.String("attribute_not_exists(id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}})
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 1)
	assert.Equal(t, "ConditionalCheckFailed", aws.ToString(tce.CancellationReasons[0].Code))
	txPutItem := tce.CancellationReasons[0].Item
	t.Logf("backend=%s ALL_OLD returned by a Put in TransactWriteItems: %t", env.Kind, txPutItem != nil)
	if env.TransactPutReturnsOldItem {
		require.NotNil(t, txPutItem, "a transaction Put should return ALL_OLD on this backend")
		assert.Equal(t, s("holder-b"), txPutItem["lease_token"])
	} else {
		assert.Nil(t, txPutItem, "this backend now returns ALL_OLD for a transaction Put: set TransactPutReturnsOldItem")
	}
}

func TestConformanceConditionalUpdateAndDelete(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	ctx := context.Background()
	seedLease(t, env, "holder-b")
	tbl := aws.String(env.Tables.Idempotency)
	fenced := func(token string) (*string, map[string]string, map[string]types.AttributeValue) {
		return aws.String("lease_token = :mine AND #st = :prog"),
			map[string]string{"#st": "status"},
			map[string]types.AttributeValue{":mine": s(token), ":prog": s("IN_PROGRESS")}
	}

	// Wrong token: the delete is refused and the record stays.
	cond, names, values := fenced("holder-a")
	_, err := env.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: tbl, Key: key("k1"), ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)

	// Wrong token: the update is refused.
	values[":done"] = s("COMPLETED")
	_, err = env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key("k1"), UpdateExpression: aws.String("SET #st = :done"),
		ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	require.ErrorAs(t, err, &ccf)

	// Right token: the update lands...
	cond, names, values = fenced("holder-b")
	values[":done"] = s("COMPLETED")
	_, err = env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key("k1"), UpdateExpression: aws.String("SET #st = :done"),
		ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	require.NoError(t, err)

	// ...and now even the holder cannot delete the completed record.
	delete(values, ":done")
	_, err = env.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: tbl, Key: key("k1"), ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	require.ErrorAs(t, err, &ccf)
	assert.Equal(t, 1, count(t, env, env.Tables.Idempotency))

	// A delete of an absent item with a condition fails too (no upsert surprise).
	_, err = env.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: tbl, Key: key("absent"), ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	require.ErrorAs(t, err, &ccf)

	// Numeric comparison in a condition, as the lease takeover uses.
	_, err = env.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: tbl,
		Item:      map[string]types.AttributeValue{"id": s("k2"), "lease_expires_at": &types.AttributeValueMemberN{Value: "1000"}},
	})
	require.NoError(t, err)
	takeover := func(now string) error {
		_, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 tbl,
			Item:                      map[string]types.AttributeValue{"id": s("k2"), "lease_expires_at": &types.AttributeValueMemberN{Value: "5000"}},
			ConditionExpression:       aws.String("attribute_not_exists(id) OR lease_expires_at < :now"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: now}},
		})
		return err
	}
	require.ErrorAs(t, takeover("999"), &ccf, "999 < 1000: lease still live")
	require.NoError(t, takeover("1001"), "lease ended: takeover in one write")
}

// TestConformancePutItemReturnValuesAllOld records what a successful PutItem
// returns with ReturnValues=ALL_OLD: the replaced item on DynamoDB, the
// strict store and DynamoDB Local; the new item on a backend that echoes it
// (PutItemReturnsOldItem false; pkg/idem tells the two apart by lease token).
func TestConformancePutItemReturnValuesAllOld(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	put := func(token string) map[string]types.AttributeValue {
		out, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName:    aws.String(env.Tables.Idempotency),
			Item:         map[string]types.AttributeValue{"id": s("k1"), "lease_token": s(token)},
			ReturnValues: types.ReturnValueAllOld,
		})
		require.NoError(t, err)
		return out.Attributes
	}
	first, second := put("first"), put("second")
	token := func(m map[string]types.AttributeValue) string {
		if v, ok := m["lease_token"].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return "<none>"
	}
	t.Logf("backend=%s PutItem ALL_OLD on success returns lease_token: first put=%s, second put=%s (DynamoDB: <none>, first)",
		env.Kind, token(first), token(second))
	if env.PutItemReturnsOldItem {
		assert.Empty(t, first, "no item was replaced")
		assert.Equal(t, s("first"), second["lease_token"], "the replaced item")
	} else {
		assert.Equal(t, s("first"), first["lease_token"], "this backend echoes the new item")
		assert.Equal(t, s("second"), second["lease_token"], "this backend echoes the new item")
	}
}

// TestConformanceNumbersAreExact records whether the backend keeps an
// integer near math.MaxInt64 exactly through ADD and a comparison, as
// DynamoDB's 38-digit numbers do; the seller statistics' overflow guard
// relies on it (Env.ExactNumbers).
func TestConformanceNumbersAreExact(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	ctx := context.Background()
	tbl := aws.String(env.Tables.Sellers)
	k := map[string]types.AttributeValue{"seller_id": s("x"), "shard": &types.AttributeValueMemberN{Value: "0"}}
	const start = "9223372036854775000" // math.MaxInt64 - 807
	_, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: map[string]types.AttributeValue{
		"seller_id": s("x"), "shard": &types.AttributeValueMemberN{Value: "0"}, "n": &types.AttributeValueMemberN{Value: start},
	}})
	require.NoError(t, err)
	_, err = env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: k, UpdateExpression: aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	require.NoError(t, err)
	out, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: k, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	got := out.Item["n"].(*types.AttributeValueMemberN).Value
	exact := got == "9223372036854775001"
	t.Logf("backend=%s %s + 1 = %s (exact: %t)", env.Kind, start, got, exact)
	if env.ExactNumbers {
		assert.True(t, exact, "this backend should keep integers exactly")
	} else {
		assert.False(t, exact, "this backend now keeps integers exactly: set ExactNumbers")
	}
}

// TestConformanceQueryReadsAPartitionInNumberOrder pins what the seller
// statistics' reader relies on (internal/sellers, Reader.Get): one Query on
// the partition key reads every shard of a seller and no other seller's,
// page after page until LastEvaluatedKey is absent, the numeric sort key in
// the order of its values (2 before 10), exactly where numbers are exact:
// a key condition tells 2^53 from 2^53+1, which float64 cannot.
func TestConformanceQueryReadsAPartitionInNumberOrder(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	ctx := context.Background()
	tbl := aws.String(env.Tables.Sellers)
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	for _, it := range []struct{ seller, shard string }{
		{"x", "10"}, {"x", "2"}, {"y", "1"}, {"x", "9007199254740993"}, {"x", "9007199254740992"}, {"x", "0"},
	} {
		_, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: map[string]types.AttributeValue{"seller_id": s(it.seller), "shard": n(it.shard)}})
		require.NoError(t, err)
	}
	shards := func(in *dynamodb.QueryInput) []string {
		t.Helper()
		var out []string
		for pages := 0; ; pages++ {
			require.Less(t, pages, 10, "a Query that never ends")
			page, err := env.Client.Query(ctx, in)
			require.NoError(t, err)
			for _, it := range page.Items {
				require.Equal(t, s("x"), it["seller_id"])
				out = append(out, it["shard"].(*types.AttributeValueMemberN).Value)
			}
			if len(page.LastEvaluatedKey) == 0 {
				return out
			}
			in.ExclusiveStartKey = page.LastEvaluatedKey
		}
	}
	got := shards(&dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("seller_id = :s"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": s("x")}, Limit: aws.Int32(2)})
	assert.Equal(t, []string{"0", "2", "10", "9007199254740992", "9007199254740993"}, got)
	above := shards(&dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("seller_id = :s AND #shard > :n"),
		ExpressionAttributeNames: map[string]string{"#shard": "shard"}, ExpressionAttributeValues: map[string]types.AttributeValue{":s": s("x"), ":n": n("9007199254740992")}})
	t.Logf("backend=%s shard > 2^53: %v", env.Kind, above)
	if env.ExactNumbers {
		assert.Equal(t, []string{"9007199254740993"}, above, "this backend should compare key conditions exactly")
	}
}
