package idemtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// refused asserts err is a ValidationException whose message contains msg.
func refused(t *testing.T, err error, msg string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, "ValidationException", errorCode(err), "%v", err)
	assert.Contains(t, err.Error(), msg)
}

// createRangeTable creates table with a string partition key pk, a string
// sort key sk, and a global secondary index gsi on g (string), projecting
// all attributes.
func createRangeTable(ctx context.Context, t *testing.T, db *dynamodb.Client, name string) {
	t.Helper()
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("gsi"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	require.NoError(t, err)
}

// Point 1 of issue 27: DynamoDB's size limits. "Service, account, and
// table quotas" (ServiceQuotas.html): an item is at most 400 KB, a
// partition key value 2048 bytes, a sort key value 1024 bytes; "Amazon
// DynamoDB Transactions: How it works" (transaction-apis.html): at most
// 100 actions and 4 MB of items in a transaction. An item's size is its
// attribute names and values ("DynamoDB item sizes and formats",
// CapacityUnitCalculations.html).
func TestSizeLimits(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	// id (2) + "a" (1) + v (1) + the string: 400 KB exactly.
	const room = 400*1024 - 4
	big := func(id string, size int) map[string]types.AttributeValue {
		return withAttr(id, "v", strings.Repeat("x", size))
	}
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: big("a", room)})
	require.NoError(t, err, "400 KB exactly is allowed")
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: big("a", room+1)})
	refused(t, err, "Item size has exceeded the maximum allowed size")
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(big("b", room+1), "")}})
	refused(t, err, "Item size has exceeded the maximum allowed size")

	// Attribute names count: a 2-byte name instead of v.
	it := big("a", room)
	delete(it, "v")
	it["vv"] = s(strings.Repeat("x", room))
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: it})
	refused(t, err, "Item size has exceeded the maximum allowed size")

	// An update that grows an item past 400 KB.
	grow := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("SET w = :w"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":w": s("yy")}}
	_, err = db.UpdateItem(ctx, grow)
	refused(t, err, "Item size to update has exceeded the maximum allowed size")
	// In a transaction DynamoDB cancels it with a ValidationError reason
	// (API Reference, TransactWriteItems, TransactionCanceledException).
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(key("c"), ""),
		{Update: &types.Update{TableName: grow.TableName, Key: grow.Key, UpdateExpression: grow.UpdateExpression, ExpressionAttributeValues: grow.ExpressionAttributeValues}},
	}})
	assert.Equal(t, []string{"None", "ValidationError"}, reasons(t, err))

	// 100 actions at most.
	var items []types.TransactWriteItem
	for i := range 101 {
		items = append(items, txPut(key(fmt.Sprint("k", i)), ""))
	}
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	refused(t, err, "Member must have length less than or equal to 100")
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items[:100]})
	require.NoError(t, err)

	// 4 MB of items at most: 11 items of 390 KB.
	items = nil
	for i := range 11 {
		items = append(items, txPut(big(fmt.Sprint("m", i), 390*1024), ""))
	}
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	refused(t, err, "4 MB")
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items[:10]})
	require.NoError(t, err)

	// Key values: 2048 bytes of partition key, 1024 of sort key.
	require.NoError(t, createRangeTableErr(ctx, db, "r"))
	rk := func(pk, sk int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(strings.Repeat("p", pk)), "sk": s(strings.Repeat("s", sk))}
	}
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("r"), Item: rk(2048, 1024)})
	require.NoError(t, err)
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("r"), Item: rk(2049, 1)})
	refused(t, err, "Size of hashkey has exceeded the maximum size limit of 2048 bytes")
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("r"), Item: rk(1, 1025)})
	refused(t, err, "Aggregated size of all range keys has exceeded the size limit of 1024 bytes")
	_, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("r"), Key: rk(2049, 1)})
	refused(t, err, "Size of hashkey")
}

func createRangeTableErr(ctx context.Context, db *dynamodb.Client, name string) error {
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
	})
	return err
}

// Point 2 of issue 27: a request DynamoDB refuses is refused, never
// answered as a failed condition. Developer Guide, "Using expression
// attribute names" and "Using expression attribute values"
// (Expressions.ExpressionAttributeNames.html,
// Expressions.ExpressionAttributeValues.html): every placeholder used must
// be defined and every one defined must be used; "Reserved words in
// DynamoDB" (ReservedWords.html); "Supported data types and naming
// rules" (HowItWorks.NamingRulesDataTypes.html): key attributes may not
// be empty strings, sets may not be empty; API Reference, PutItem:
// ReturnValues is NONE or ALL_OLD; Query: ConsistentRead is not
// supported on a global secondary index.
func TestRequestsDynamoDBRefuses(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "1")})
	require.NoError(t, err)
	put := func(in *dynamodb.PutItemInput) error {
		in.TableName = aws.String("t")
		if in.Item == nil {
			in.Item = key("a")
		}
		_, err := db.PutItem(ctx, in)
		return err
	}
	vals := func(kv ...string) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = s(kv[i+1])
		}
		return m
	}

	refused(t, put(&dynamodb.PutItemInput{ConditionExpression: aws.String("v = :nope"), ExpressionAttributeValues: vals(":v", "1")}),
		"An expression attribute value used in expression is not defined; attribute value: :nope")
	refused(t, put(&dynamodb.PutItemInput{ConditionExpression: aws.String("#nope = :v"), ExpressionAttributeValues: vals(":v", "1")}),
		"An expression attribute name used in the document path is not defined; attribute name: #nope")
	refused(t, put(&dynamodb.PutItemInput{ConditionExpression: aws.String("v = :v"), ExpressionAttributeValues: vals(":v", "1", ":x", "2")}),
		"Value provided in ExpressionAttributeValues unused in expressions: keys: {:x}")
	refused(t, put(&dynamodb.PutItemInput{ConditionExpression: aws.String("attribute_exists(#data)"),
		ExpressionAttributeNames: map[string]string{"#data": "data", "#d": "d"}}),
		"Value provided in ExpressionAttributeNames unused in expressions: keys: {#d}")
	refused(t, put(&dynamodb.PutItemInput{ConditionExpression: aws.String("attribute_exists(data)")}),
		"Attribute name is a reserved keyword; reserved keyword: data")
	refused(t, put(&dynamodb.PutItemInput{ConditionExpression: aws.String("v = = :v"), ExpressionAttributeValues: vals(":v", "1")}),
		"Invalid ConditionExpression: Syntax error")
	refused(t, put(&dynamodb.PutItemInput{ConditionExpression: aws.String("attribute_exits(v)")}), "Invalid function name")
	refused(t, put(&dynamodb.PutItemInput{Item: key("")}), "An AttributeValue may not contain an empty string")
	require.NoError(t, put(&dynamodb.PutItemInput{Item: withAttr("a", "v", "")}), "a non-key attribute may be empty (since 2020)")
	refused(t, put(&dynamodb.PutItemInput{Item: map[string]types.AttributeValue{"id": s("a"), "set": &types.AttributeValueMemberSS{Value: []string{}}}}),
		"may not be empty")
	refused(t, put(&dynamodb.PutItemInput{Item: map[string]types.AttributeValue{"id": s("a"), "set": &types.AttributeValueMemberSS{Value: []string{"x", "x"}}}}),
		"contains duplicates")
	refused(t, put(&dynamodb.PutItemInput{ReturnValues: types.ReturnValueAllNew}), "ReturnValues can only be ALL_OLD or NONE")

	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("SET id = :v"),
		ExpressionAttributeValues: vals(":v", "b")})
	refused(t, err, "This attribute is part of the key")
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("SET a = :v, a.b = :v"),
		ExpressionAttributeValues: vals(":v", "b")})
	refused(t, err, "Two document paths overlap with each other")
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("ADD v :v"),
		ExpressionAttributeValues: vals(":v", "b")})
	refused(t, err, "Incorrect operand type for operator or function; operator: ADD, operand type: STRING")

	// In a transaction: the whole request is refused, no reason given.
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(key("b"), ""), txPut(key("c"), "v = :nope"),
	}})
	refused(t, err, "attribute value: :nope")

	require.NoError(t, createRangeTableErr(ctx, db, "plain"))
	createRangeTable(ctx, t, db, "r")
	_, err = db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("r"), IndexName: aws.String("gsi"), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: vals(":g", "x")})
	refused(t, err, "Consistent reads are not supported on global secondary indexes")
	_, err = db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("r"), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: vals(":p", "x", ":q", "y")})
	refused(t, err, "unused in expressions: keys: {:q}")
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("r"), Item: map[string]types.AttributeValue{"pk": s("p"), "sk": s("s"), "g": n("1")}})
	refused(t, err, "Type mismatch for Index Key g")
}

// Condition expressions evaluate as DynamoDB's do ("Condition and filter
// expressions, operators, and functions",
// Expressions.OperatorsAndFunctions.html).
func TestConditionsEvaluate(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	it := map[string]types.AttributeValue{
		"id":   s("a"),
		"n":    n("10"),
		"name": s("alpha"),
		"tags": &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
		"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1"), s("two")}}}},
	}
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: it})
	require.NoError(t, err)
	for cond, want := range map[string]bool{
		"n = :ten":                                true,
		"n <> :ten":                               false,
		"absent <> :ten":                          true,
		"absent = :ten":                           false,
		"n < :eleven AND n > :nine":               true,
		"n BETWEEN :nine AND :eleven":             true,
		"n IN (:nine, :ten)":                      true,
		"NOT n IN (:nine, :eleven)":               true,
		"begins_with(#name, :al)":                 true,
		"contains(#name, :ph)":                    true,
		"contains(tags, :x)":                      true,
		"contains(tags, :ph)":                     false,
		"size(tags) = :two":                       true,
		"size(#name) > :nine":                     false,
		"attribute_type(n, :N)":                   true,
		"m.l[1] = :twoS":                          true,
		"attribute_exists(m.l[0])":                true,
		"attribute_not_exists(m.l[2])":            true,
		"n = :ten OR n = :nine AND n = :eleven":   true,
		"(n = :ten OR n = :nine) AND n = :eleven": false,
		"n > :al":                                 false, // different types never compare
	} {
		vals := map[string]types.AttributeValue{}
		all := map[string]types.AttributeValue{":ten": n("10.0"), ":nine": n("9"), ":eleven": n("11"), ":al": s("al"), ":ph": s("ph"),
			":x": s("x"), ":two": n("2"), ":N": s("N"), ":twoS": s("two")}
		for k, v := range all {
			if strings.Contains(cond+" ", k+" ") || strings.Contains(cond, k+")") || strings.Contains(cond, k+",") {
				vals[k] = v
			}
		}
		in := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("SET touched = :t"),
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: map[string]string{}}
		vals[":t"] = s("t")
		in.ExpressionAttributeValues = vals
		if strings.Contains(cond, "#name") {
			in.ExpressionAttributeNames["#name"] = "name"
		} else {
			in.ExpressionAttributeNames = nil
		}
		_, err := db.UpdateItem(ctx, in)
		if want {
			assert.NoError(t, err, cond)
		} else {
			var ccf *types.ConditionalCheckFailedException
			assert.ErrorAs(t, err, &ccf, cond)
		}
	}
}

// Point 3 of issue 27 beyond the injected reasons (faults_test.go): the
// store produces ValidationError itself where DynamoDB does, for an
// update that cannot apply to the item it meets (API Reference,
// TransactWriteItems, "ValidationError": an operand of the wrong type, an
// attribute that does not exist in the item).
func TestUpdatesThatCannotApply(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "text")})
	require.NoError(t, err)
	up := func(expr string, vals map[string]types.AttributeValue) *types.Update {
		return &types.Update{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals}
	}
	one := map[string]types.AttributeValue{":one": n("1")}
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("SET v = v + :one"), ExpressionAttributeValues: one})
	refused(t, err, "An operand in the update expression has an incorrect data type")
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("SET w = nothing + :one"), ExpressionAttributeValues: one})
	refused(t, err, "The provided expression refers to an attribute that does not exist in the item")
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(key("b"), ""), {Update: up("ADD v :one", one)},
	}})
	assert.Equal(t, []string{"None", "ValidationError"}, reasons(t, err))
}

// Point 4 of issue 27: TransactGetItems never returns half a transaction
// ("Amazon DynamoDB Transactions: How it works", Isolation levels:
// TransactGetItems is serializable with TransactWriteItems). A writer moves
// units between two items in transactions; every read of both sees them
// add up, or is cancelled.
func TestTransactGetItemsIsNeverTorn(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	for _, id := range []string{"x", "y"} {
		it := key(id)
		it["n"] = n("50")
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: it})
		require.NoError(t, err)
	}
	move := func(from, to string) []types.TransactWriteItem {
		minus := map[string]types.AttributeValue{":d": n("-1")}
		plus := map[string]types.AttributeValue{":d": n("1")}
		return []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String("t"), Key: key(from), UpdateExpression: aws.String("ADD n :d"), ExpressionAttributeValues: minus}},
			{Update: &types.Update{TableName: aws.String("t"), Key: key(to), UpdateExpression: aws.String("ADD n :d"), ExpressionAttributeValues: plus}},
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var moved atomic.Int64
	for w := range 2 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				from, to := "x", "y"
				if (i+w)%2 == 1 {
					from, to = to, from
				}
				if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: move(from, to)}); err == nil {
					moved.Add(1)
				}
			}
		})
	}
	var reads, cancelled int
	for reads < 1000 {
		out, err := db.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
			{Get: &types.Get{TableName: aws.String("t"), Key: key("x")}},
			{Get: &types.Get{TableName: aws.String("t"), Key: key("y")}},
		}})
		if err != nil {
			assert.Contains(t, reasons(t, err), "TransactionConflict")
			cancelled++
			continue
		}
		reads++
		x := out.Responses[0].Item["n"].(*types.AttributeValueMemberN).Value
		y := out.Responses[1].Item["n"].(*types.AttributeValueMemberN).Value
		var a, b int
		fmt.Sscan(x, &a)
		fmt.Sscan(y, &b)
		require.Equal(t, 100, a+b, "a torn read: x=%s y=%s", x, y)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d consistent reads, %d cancelled, %d transactions committed meanwhile", reads, cancelled, moved.Load())
	assert.Positive(t, moved.Load())
}

// Point 5 of issue 27: numbers are exact ("Supported data types and
// naming rules", Number: 38 digits of precision, magnitudes from 1E-130
// to 9.9999999999999999999999999999999999999E+125; outside them DynamoDB
// refuses the number).
func TestNumbersAreExact(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	add := func(id, v string) error {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key(id), UpdateExpression: aws.String("ADD n :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(v)}})
		return err
	}
	get := func(id string) string {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key(id), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		return out.Item["n"].(*types.AttributeValueMemberN).Value
	}
	require.NoError(t, add("money", "0.2"))
	require.NoError(t, add("money", "0.1"))
	assert.Equal(t, "0.3", get("money"))
	require.NoError(t, add("big", "9007199254740993"))
	require.NoError(t, add("big", "1"))
	assert.Equal(t, "9007199254740994", get("big"))
	_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("big"), UpdateExpression: aws.String("SET n = n - :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": n("0.000000000000000000001")}})
	require.NoError(t, err)
	assert.Equal(t, "9007199254740993.999999999999999999999", get("big"))

	it := key("c")
	it["n"] = n("9007199254740993")
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: it})
	require.NoError(t, err)
	cond := func(v string) error {
		_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("c"), ConditionExpression: aws.String("n = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(v)}})
		return err
	}
	var ccf *types.ConditionalCheckFailedException
	assert.ErrorAs(t, cond("9007199254740992"), &ccf, "2^53 is not 2^53+1")

	refused(t, add("x", "1"+strings.Repeat("0", 37)+"1"), "Attempting to store more than 38 significant digits in a Number")
	require.NoError(t, add("x", "1"+strings.Repeat("0", 36)+"1"), "38 digits")
	refused(t, add("y", "1E+126"), "Number overflow")
	refused(t, add("y", "1E-131"), "Number underflow")
	require.NoError(t, add("y", "9.9999999999999999999999999999999999999E+125"))
	refused(t, add("y", "9.9999999999999999999999999999999999999E+125"), "Number overflow")
	refused(t, add("y", "abc"), "cannot be converted into a number")
}

// Point 6 of issue 27: with WithStaleReads a read without ConsistentRead
// may return an older committed version ("Read consistency",
// HowItWorks.ReadConsistency.html: an eventually consistent read might not
// reflect a recently completed write).
func TestStaleReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := idemtest.NewServer(idemtest.WithStaleReads(time.Second))
		db := srv.HandlerClient()
		ctx := context.Background()
		require.NoError(t, createTable(ctx, db, "t"))
		read := func(consistent bool) types.AttributeValue {
			out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ConsistentRead: aws.Bool(consistent)})
			require.NoError(t, err)
			return out.Item["v"]
		}
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "1")})
		require.NoError(t, err)
		assert.Nil(t, read(false), "the write is not seen yet")
		assert.Equal(t, s("1"), read(true))
		time.Sleep(time.Second)
		assert.Equal(t, s("1"), read(false))
		_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "2")})
		require.NoError(t, err)
		assert.Equal(t, s("1"), read(false), "the older version")
		assert.Equal(t, s("2"), read(true))
		time.Sleep(time.Second)
		assert.Equal(t, s("2"), read(false))
	})
	// Off by default: every read sees the last committed value.
	_, db := setup(t)
	ctx := context.Background()
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "1")})
	require.NoError(t, err)
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a")})
	require.NoError(t, err)
	assert.Equal(t, s("1"), out.Item["v"])
}
