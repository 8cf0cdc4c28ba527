package idemtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// sized is an item of exactly size bytes (id "a"... plus v).
func sized(id string, size int) map[string]types.AttributeValue {
	return withAttr(id, "v", strings.Repeat("x", size-3-len(id)))
}

func units(cc *types.ConsumedCapacity) float64 {
	if cc == nil {
		return -1
	}
	return aws.ToFloat64(cc.CapacityUnits)
}

// Capacity as DynamoDB counts it on an on-demand table (Developer Guide,
// "DynamoDB read and write operations", read-write-operations.html; and
// "Amazon DynamoDB Transactions: How it works", transaction-apis.html,
// Capacity management for transactions): a write unit per KB of item,
// rounded up per item (the larger of before and after), doubled in a
// transaction; a read unit per 4 KB, half for an eventually consistent
// read, two for a transactional one; ConsumedCapacity only when asked.
func TestConsumedCapacity(t *testing.T) {
	t.Parallel()
	srv, db := setup(t)
	ctx := context.Background()
	total := types.ReturnConsumedCapacityTotal

	out, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: sized("a", 1024)})
	require.NoError(t, err)
	assert.Nil(t, out.ConsumedCapacity, "NONE is the default")
	out, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: sized("a", 1025), ReturnConsumedCapacity: total})
	require.NoError(t, err)
	assert.Equal(t, 2.0, units(out.ConsumedCapacity), "1025 bytes are 2 KB")
	assert.Equal(t, "t", aws.ToString(out.ConsumedCapacity.TableName))
	assert.Equal(t, 2.0, aws.ToFloat64(out.ConsumedCapacity.WriteCapacityUnits))

	// An update counts the larger of the item before and after.
	up, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("REMOVE v"), ReturnConsumedCapacity: total})
	require.NoError(t, err)
	assert.Equal(t, 2.0, units(up.ConsumedCapacity))
	// A failed condition still consumes (at least 1).
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a"), ConditionExpression: aws.String("attribute_not_exists(id)")})
	require.Error(t, err)

	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: sized("r", 4097)})
	require.NoError(t, err)
	for _, tc := range []struct {
		consistent bool
		want       float64
	}{{false, 1}, {true, 2}} {
		got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("r"), ConsistentRead: aws.Bool(tc.consistent), ReturnConsumedCapacity: total})
		require.NoError(t, err)
		assert.Equal(t, tc.want, units(got.ConsumedCapacity), "4097 bytes are 8 KB; consistent %v", tc.consistent)
		assert.Equal(t, tc.want, aws.ToFloat64(got.ConsumedCapacity.ReadCapacityUnits))
	}
	missing, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("nothing"), ReturnConsumedCapacity: total})
	require.NoError(t, err)
	assert.Equal(t, 0.5, units(missing.ConsumedCapacity), "a read of no item consumes the minimum")

	tx, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ReturnConsumedCapacity: total, TransactItems: []types.TransactWriteItem{
		txPut(sized("b", 1500), ""),
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: key("r"), ConditionExpression: aws.String("attribute_exists(id)")}},
	}})
	require.NoError(t, err)
	require.Len(t, tx.ConsumedCapacity, 1)
	assert.Equal(t, 2*2.0+2*5.0, units(&tx.ConsumedCapacity[0]), "a transaction doubles each item's units: 2 KB and the 5 KB checked item")
	tg, err := db.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{ReturnConsumedCapacity: total, TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("t"), Key: key("r")}}, {Get: &types.Get{TableName: aws.String("t"), Key: key("b")}},
	}})
	require.NoError(t, err)
	assert.Equal(t, 2*2.0+2*1.0, units(&tg.ConsumedCapacity[0]), "transactional reads: two units per 4 KB")

	// A Scan adds the item sizes up, then rounds once: 1025+? bytes.
	sc, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: total})
	require.NoError(t, err)
	assert.Equal(t, 2.0, units(sc.ConsumedCapacity), "a (4+), r (4097) and b (1500) bytes: 2 units of 4 KB")

	c := srv.Consumed()
	assert.Equal(t, idemtest.Units{Write: 1 + 2 + 2 + 1 + 5, Requests: 5}, c["t"][idemtest.OpPutItem].Plus(c["t"][idemtest.OpUpdateItem]),
		"puts of 1, 2 and 5 KB, the failed condition (1), the update (2)")
	assert.Equal(t, 14.0, c.Op(idemtest.OpTransactWriteItems).Write)
	assert.Equal(t, 1+2+0.5, c.Op(idemtest.OpGetItem).Read)
	assert.Equal(t, 3, c.Op(idemtest.OpGetItem).Requests)
	srv.ResetConsumed()
	assert.Zero(t, srv.Consumed().Total())
}

// ReturnConsumedCapacity INDEXES breaks the units down by table and
// index; a write to an item an index projects writes the index too
// (read-write-operations.html; "Provisioned throughput considerations for
// global secondary indexes", GSI.ThroughputConsiderations.html).
func TestConsumedCapacityIndexes(t *testing.T) {
	t.Parallel()
	srv := idemtest.New(t)
	db := srv.Client()
	ctx := context.Background()
	createRangeTable(ctx, t, db, "r")
	item := func(g string) map[string]types.AttributeValue {
		it := map[string]types.AttributeValue{"pk": s("p"), "sk": s("s"), "v": s(strings.Repeat("x", 2000))}
		if g != "" {
			it["g"] = s(g)
		}
		return it
	}
	put := func(it map[string]types.AttributeValue) *types.ConsumedCapacity {
		out, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("r"), Item: it, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
		require.NoError(t, err)
		return out.ConsumedCapacity
	}
	cc := put(item(""))
	assert.Equal(t, 2.0, units(cc), "not in the index")
	assert.Equal(t, 2.0, units(ptr(*cc.Table)))
	assert.Empty(t, cc.GlobalSecondaryIndexes)
	cc = put(item("x"))
	assert.Equal(t, 4.0, units(cc), "the table and the new index entry")
	assert.Equal(t, 2.0, units(ptr(*cc.Table)))
	assert.Equal(t, 2.0, units(ptr(cc.GlobalSecondaryIndexes["gsi"])))
	cc = put(item("y"))
	assert.Equal(t, 2.0+4.0, units(cc), "the index key changed: an entry deleted and one written")

	q, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("r"), IndexName: aws.String("gsi"), KeyConditionExpression: aws.String("g = :g"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("y")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	require.NoError(t, err)
	assert.Equal(t, 0.5, units(q.ConsumedCapacity), "an index read is eventually consistent")
	assert.Equal(t, 0.5, units(ptr(q.ConsumedCapacity.GlobalSecondaryIndexes["gsi"])))
	assert.Equal(t, 6.0+4.0+2.0, srv.Consumed().Table("r").Write)
}

func ptr(c types.Capacity) *types.ConsumedCapacity {
	return &types.ConsumedCapacity{CapacityUnits: c.CapacityUnits}
}
