package idemtest_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// createNumberTable creates table name with a string partition key pk, a
// number sort key sk, a global index byg on g (S) and n (N) projecting
// KEYS_ONLY, and a local index byn on pk and n (N) projecting INCLUDE v.
func createNumberTable(ctx context.Context, t *testing.T, db *dynamodb.Client, name string) {
	t.Helper()
	ks := func(h, r string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(h), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(r), KeyType: types.KeyTypeRange}}
	}
	def := func(n string, tp types.ScalarAttributeType) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: tp}
	}
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{def("pk", "S"), def("sk", "N"), def("g", "S"), def("n", "N")},
		KeySchema:            ks("pk", "sk"),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String("byg"), KeySchema: ks("g", "n"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName: aws.String("byn"), KeySchema: ks("pk", "n"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"v"}},
		}},
	})
	must.NoError(t, err)
}

func vals(kv ...any) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return m
}

// column is one attribute of every item, as text.
func column(items []map[string]types.AttributeValue, name string) []string {
	out := []string{}
	for _, it := range items {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberS:
			out = append(out, v.Value)
		case *types.AttributeValueMemberN:
			out = append(out, v.Value)
		case nil:
			out = append(out, "-")
		}
	}
	return out
}

// A Query reads one partition in sort key order, numbers by value and
// exactly (beyond float64's 16 digits), and limits the sort key as
// DynamoDB's key conditions do (API Reference, Query,
// KeyConditionExpression).
func TestQueryOrdersAndLimitsTheSortKey(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	createNumberTable(ctx, t, db, "nums")
	sks := []string{"10", "9", "-1.5", "100", "12345678901234567890", "12345678901234567891", "0.000000000000000000001", "2"}
	for i, sk := range sks {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("nums"),
			Item: vals("pk", s("p"), "sk", n(sk), "g", s("g"), "n", n(fmt.Sprint(i)), "v", s("v"+sk), "w", s("w"))})
		must.NoError(t, err)
	}
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("nums"), Item: vals("pk", s("other"), "sk", n("1"))})
	must.NoError(t, err)

	query := func(cond string, v map[string]types.AttributeValue, mod ...func(*dynamodb.QueryInput)) []string {
		t.Helper()
		in := &dynamodb.QueryInput{TableName: aws.String("nums"), KeyConditionExpression: aws.String(cond), ExpressionAttributeValues: v}
		for _, m := range mod {
			m(in)
		}
		out, err := db.Query(ctx, in)
		must.NoError(t, err, cond)
		check.Equal(t, len(out.Items), int(out.Count))
		return column(out.Items, "sk")
	}
	p := vals(":p", s("p"))
	with := func(kv ...any) map[string]types.AttributeValue { return vals(append([]any{":p", s("p")}, kv...)...) }
	all := []string{"-1.5", "0.000000000000000000001", "2", "9", "10", "100", "12345678901234567890", "12345678901234567891"}
	check.Equal(t, all, query("pk = :p", p))
	check.Equal(t, all, query(":p = pk", p), "the value may come first")
	check.Equal(t, []string{"12345678901234567891", "12345678901234567890", "100", "10", "9", "2", "0.000000000000000000001", "-1.5"},
		query("pk = :p", p, func(in *dynamodb.QueryInput) { in.ScanIndexForward = aws.Bool(false) }))
	check.Equal(t, []string{"10"}, query("pk = :p AND sk = :v", with(":v", n("10.0"))), "equal by value")
	check.Equal(t, []string{"-1.5", "0.000000000000000000001", "2", "9"}, query("pk = :p AND sk < :v", with(":v", n("10"))))
	check.Equal(t, []string{"-1.5", "0.000000000000000000001", "2", "9", "10"}, query("pk = :p AND sk <= :v", with(":v", n("1E1"))))
	check.Equal(t, []string{"12345678901234567891"}, query("pk = :p AND sk > :v", with(":v", n("12345678901234567890"))), "beyond float64")
	check.Equal(t, []string{"100", "12345678901234567890", "12345678901234567891"}, query("pk = :p AND sk >= :v", with(":v", n("100"))))
	check.Equal(t, []string{"0.000000000000000000001", "2", "9", "10"}, query("(pk = :p) AND (sk BETWEEN :a AND :b)", with(":a", n("0"), ":b", n("10"))))
	check.Equal(t, []string{"12345678901234567891"}, query("pk = :p AND :v < sk", with(":v", n("12345678901234567890"))), "a value first turns the comparison around")
	check.Equal(t, []string{}, query("pk = :p", vals(":p", s("nobody"))))

	// begins_with on a string sort key; strings by their UTF-8 bytes.
	createRangeTable(ctx, t, db, "strs")
	for _, sk := range []string{"b", "a#2", "a#10", "ä", "Z", "a"} {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("strs"), Item: vals("pk", s("p"), "sk", s(sk))})
		must.NoError(t, err)
	}
	out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("strs"), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: p})
	must.NoError(t, err)
	check.Equal(t, []string{"Z", "a", "a#10", "a#2", "b", "ä"}, column(out.Items, "sk"))
	out, err = db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("strs"), KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :a)"),
		ExpressionAttributeValues: with(":a", s("a#"))})
	must.NoError(t, err)
	check.Equal(t, []string{"a#10", "a#2"}, column(out.Items, "sk"))
}

// Filter, projection, Select COUNT, Limit and pagination, on a table and
// on its indexes (API Reference, Query: Limit counts the items read
// before the filter; LastEvaluatedKey; Select).
func TestQueryPagesFiltersAndProjects(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	createNumberTable(ctx, t, db, "nums")
	for i := range 10 {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("nums"),
			Item: vals("pk", s("p"), "sk", n(fmt.Sprint(i)), "g", s(fmt.Sprint("g", i%2)), "n", n(fmt.Sprint(100-i)), "v", s(fmt.Sprint("v", i)), "w", n(fmt.Sprint(i%3)))})
		must.NoError(t, err)
	}
	p := vals(":p", s("p"))

	// Limit 3 with a filter that keeps one item in three: every page reads
	// 3 items, LastEvaluatedKey is the third, the pages cover all 10.
	var got []string
	var start map[string]types.AttributeValue
	pages := 0
	for {
		out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), KeyConditionExpression: aws.String("pk = :p"),
			FilterExpression: aws.String("w = :zero"), ExpressionAttributeValues: vals(":p", s("p"), ":zero", n("0")),
			Limit: aws.Int32(3), ExclusiveStartKey: start})
		must.NoError(t, err)
		pages++
		got = append(got, column(out.Items, "sk")...)
		check.LessOrEqual(t, out.ScannedCount, int32(3))
		if start = out.LastEvaluatedKey; start == nil {
			break
		}
		check.Equal(t, vals("pk", s("p"), "sk", out.LastEvaluatedKey["sk"]), start, "the table's key")
	}
	check.Equal(t, []string{"0", "3", "6", "9"}, got)
	check.Equal(t, 4, pages, "3 full pages, and a page after the last: a full last page still has a LastEvaluatedKey")

	out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), KeyConditionExpression: aws.String("pk = :p"),
		FilterExpression: aws.String("w = :zero"), ExpressionAttributeValues: vals(":p", s("p"), ":zero", n("0")), Select: types.SelectCount})
	must.NoError(t, err)
	check.Nil(t, out.Items)
	check.Equal(t, int32(4), out.Count)
	check.Equal(t, int32(10), out.ScannedCount)

	out, err = db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), KeyConditionExpression: aws.String("pk = :p AND sk < :three"),
		ProjectionExpression: aws.String("v, nope"), ExpressionAttributeValues: vals(":p", s("p"), ":three", n("3"))})
	must.NoError(t, err)
	check.Equal(t, []map[string]types.AttributeValue{{"v": s("v0")}, {"v": s("v1")}, {"v": s("v2")}}, out.Items)

	// The global index, KEYS_ONLY: the table's and the index's keys, in the
	// index's sort key order.
	out, err = db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), IndexName: aws.String("byg"),
		KeyConditionExpression: aws.String("g = :g AND n > :n"), ExpressionAttributeValues: vals(":g", s("g1"), ":n", n("94"))})
	must.NoError(t, err)
	check.Equal(t, []map[string]types.AttributeValue{
		vals("pk", s("p"), "sk", n("5"), "g", s("g1"), "n", n("95")),
		vals("pk", s("p"), "sk", n("3"), "g", s("g1"), "n", n("97")),
		vals("pk", s("p"), "sk", n("1"), "g", s("g1"), "n", n("99")),
	}, out.Items)
	// A page of an index stops with the index's key and the table's.
	out, err = db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), IndexName: aws.String("byg"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: vals(":g", s("g1")), Limit: aws.Int32(1)})
	must.NoError(t, err)
	check.Equal(t, vals("pk", s("p"), "sk", n("9"), "g", s("g1"), "n", n("91")), out.LastEvaluatedKey)
	next, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), IndexName: aws.String("byg"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: vals(":g", s("g1")), ExclusiveStartKey: out.LastEvaluatedKey})
	must.NoError(t, err)
	check.Equal(t, []string{"7", "5", "3", "1"}, column(next.Items, "sk"))

	// The local index projects v; ALL_ATTRIBUTES reads the rest from the
	// table, and so does a filter on an attribute it does not project.
	out, err = db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), IndexName: aws.String("byn"),
		KeyConditionExpression: aws.String("pk = :p AND n <= :n"), ExpressionAttributeValues: vals(":p", s("p"), ":n", n("92"))})
	must.NoError(t, err)
	check.Equal(t, []map[string]types.AttributeValue{
		vals("pk", s("p"), "sk", n("9"), "n", n("91"), "v", s("v9")),
		vals("pk", s("p"), "sk", n("8"), "n", n("92"), "v", s("v8")),
	}, out.Items)
	out, err = db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), IndexName: aws.String("byn"), Select: types.SelectAllAttributes,
		KeyConditionExpression: aws.String("pk = :p AND n = :n"), FilterExpression: aws.String("w = :w"), ExpressionAttributeValues: vals(":p", s("p"), ":n", n("91"), ":w", n("0"))})
	must.NoError(t, err)
	check.Equal(t, []string{"g1"}, column(out.Items, "g"))
	check.Equal(t, p[":p"], out.Items[0]["pk"])
}

// What DynamoDB refuses in a Query or Scan, with its words.
func TestQueryAndScanRefuse(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	createNumberTable(ctx, t, db, "nums")
	query := func(in *dynamodb.QueryInput) error {
		if in.TableName == nil {
			in.TableName = aws.String("nums")
		}
		_, err := db.Query(ctx, in)
		return err
	}
	kc := func(cond string, kv ...any) *dynamodb.QueryInput {
		return &dynamodb.QueryInput{KeyConditionExpression: aws.String(cond), ExpressionAttributeValues: vals(kv...)}
	}
	refused(t, query(kc("sk = :v", ":v", n("1"))), "Query condition missed key schema element: pk")
	refused(t, query(kc("pk < :v", ":v", s("1"))), "Query key condition not supported")
	refused(t, query(kc("pk = :p OR sk = :v", ":p", s("p"), ":v", n("1"))), "Invalid operator used in KeyConditionExpression: OR")
	refused(t, query(kc("pk = :p AND sk <> :v", ":p", s("p"), ":v", n("1"))), "Invalid operator used in KeyConditionExpression: <>")
	refused(t, query(kc("pk = :p AND attribute_exists(sk)", ":p", s("p"))), "Invalid operator used in KeyConditionExpression: attribute_exists")
	refused(t, query(kc("pk = :p AND sk > :v AND sk < :v", ":p", s("p"), ":v", n("1"))), "Conditions can be of length 1 or 2 only")
	refused(t, query(kc("pk = :p AND pk = :p", ":p", s("p"))), "KeyConditionExpressions must only contain one condition per key")
	refused(t, query(kc("pk = :p AND w = :v", ":p", s("p"), ":v", n("1"))), "Query condition missed key schema element: sk")
	refused(t, query(kc("pk = :p AND sk = :v", ":p", s("p"), ":v", s("1"))), "Condition parameter type does not match schema type")
	refused(t, query(kc("pk = :p AND begins_with(sk, :v)", ":p", s("p"), ":v", s("1"))), "Condition parameter type does not match schema type")
	in := kc("pk = :p", ":p", s("p"), ":v", n("1"))
	in.FilterExpression = aws.String("sk > :v")
	refused(t, query(in), "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk")
	in = kc("pk = :p", ":p", s("p"))
	in.Limit = aws.Int32(0)
	refused(t, query(in), "Member must have value greater than or equal to 1")
	in = kc("pk = :p", ":p", s("p"))
	in.Select, in.ProjectionExpression = types.SelectCount, aws.String("v")
	refused(t, query(in), "Cannot specify the ProjectionExpression when choosing to get only the Count")
	in = kc("pk = :p", ":p", s("p"))
	in.Select = types.SelectAllProjectedAttributes
	refused(t, query(in), "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName")
	in = kc("g = :g", ":g", s("g"))
	in.IndexName, in.Select = aws.String("byg"), types.SelectAllAttributes
	refused(t, query(in), "Select type ALL_ATTRIBUTES is not supported for global secondary index byg because its projection type is not ALL")
	in = kc("pk = :p", ":p", s("p"))
	in.IndexName = aws.String("nope")
	refused(t, query(in), "The table does not have the specified index: nope")
	in = kc("pk = :p", ":p", s("p"))
	in.ExclusiveStartKey = vals("pk", s("p"))
	refused(t, query(in), "The provided starting key is invalid")
	in = kc("pk = :p", ":p", s("p"))
	in.ExclusiveStartKey = vals("pk", s("q"), "sk", n("1"))
	refused(t, query(in), "The provided starting key is invalid")
	in = kc("pk = :p", ":p", s("p"))
	in.TableName = aws.String("missing")
	err := query(in)
	var notFound *types.ResourceNotFoundException
	must.ErrorAs(t, err, &notFound)
	check.Equal(t, "Requested resource not found", aws.ToString(notFound.Message))

	scan := func(in *dynamodb.ScanInput) error {
		in.TableName = aws.String("nums")
		_, err := db.Scan(ctx, in)
		return err
	}
	refused(t, scan(&dynamodb.ScanInput{Segment: aws.Int32(1)}), "The TotalSegments parameter is required")
	refused(t, scan(&dynamodb.ScanInput{Segment: aws.Int32(2), TotalSegments: aws.Int32(2)}), "Segment: 2 is not less than TotalSegments: 2")
	refused(t, scan(&dynamodb.ScanInput{Select: types.SelectSpecificAttributes}), "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES")
}

// A Scan reads every item once however it is paged or split into
// segments, not in the order of the keys (DynamoDB's is the partition
// key's hash), and filters and counts as a Query does.
func TestScanPagesAndSegments(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	const items = 60
	var want []string
	for i := range items {
		id := fmt.Sprintf("%03d", i)
		want = append(want, id)
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr(id, "v", fmt.Sprint(i%2))})
		must.NoError(t, err)
	}
	scanAll := func(in dynamodb.ScanInput) (ids []string, pages int) {
		t.Helper()
		in.TableName = aws.String("t")
		for {
			out, err := db.Scan(ctx, &in)
			must.NoError(t, err)
			pages++
			ids = append(ids, column(out.Items, "id")...)
			if out.LastEvaluatedKey == nil {
				return ids, pages
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	one, pages := scanAll(dynamodb.ScanInput{})
	check.Equal(t, 1, pages)
	check.False(t, sort.StringsAreSorted(one), "a Scan is in hash order, not key order")
	paged, pages := scanAll(dynamodb.ScanInput{Limit: aws.Int32(7)})
	check.Equal(t, one, paged, "pages read on where the last stopped")
	check.Equal(t, 9, pages)
	var segmented []string
	for seg := range 4 {
		ids, _ := scanAll(dynamodb.ScanInput{Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(4), Limit: aws.Int32(5)})
		check.NotEmpty(t, ids, "segment %d", seg)
		segmented = append(segmented, ids...)
	}
	sort.Strings(segmented)
	check.Equal(t, want, segmented, "the segments share the items, each once")

	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), FilterExpression: aws.String("v = :one"),
		ExpressionAttributeValues: vals(":one", s("1")), Limit: aws.Int32(10)})
	must.NoError(t, err)
	check.Equal(t, int32(10), out.ScannedCount)
	check.Equal(t, int(out.Count), len(out.Items))
	for _, it := range out.Items {
		check.Equal(t, s("1"), it["v"])
	}
}

// The table API: an existing table is ResourceInUseException, a missing
// one ResourceNotFoundException; DescribeTable counts the items;
// ListTables pages; an index UpdateTable creates is filled from the
// table's items; a deleted table is gone with its items.
func TestTables(t *testing.T) {
	t.Parallel()
	srv, db := setup(t)
	ctx := context.Background()
	err := createTable(ctx, db, "t")
	var inUse *types.ResourceInUseException
	must.ErrorAs(t, err, &inUse)
	check.Equal(t, "Table already exists: t", aws.ToString(inUse.Message))

	_, err = db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("missing")})
	var notFound *types.ResourceNotFoundException
	must.ErrorAs(t, err, &notFound)
	check.Equal(t, "Requested resource not found: Table: missing not found", aws.ToString(notFound.Message))
	_, err = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("missing")})
	must.ErrorAs(t, err, &notFound)

	for _, id := range []string{"a", "b", "c"} {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr(id, "g", "x"+id)})
		must.NoError(t, err)
	}
	d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	must.NoError(t, err)
	check.Equal(t, types.TableStatusActive, d.Table.TableStatus)
	check.Equal(t, int64(3), aws.ToInt64(d.Table.ItemCount))
	check.Equal(t, types.BillingModePayPerRequest, d.Table.BillingModeSummary.BillingMode)
	check.Equal(t, "id", aws.ToString(d.Table.KeySchema[0].AttributeName))

	_, err = db.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("t"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("byg"), KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}}}})
	must.NoError(t, err)
	q, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("t"), IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"),
		ExpressionAttributeValues: vals(":g", s("xb"))})
	must.NoError(t, err)
	check.Equal(t, []string{"b"}, column(q.Items, "id"))

	for i := range 3 {
		must.NoError(t, createTable(ctx, db, fmt.Sprint("list-", i)))
	}
	l, err := db.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(2)})
	must.NoError(t, err)
	check.Equal(t, []string{"list-0", "list-1"}, l.TableNames)
	l, err = db.ListTables(ctx, &dynamodb.ListTablesInput{ExclusiveStartTableName: l.LastEvaluatedTableName})
	must.NoError(t, err)
	check.Equal(t, []string{"list-2", "t"}, l.TableNames)
	check.Nil(t, l.LastEvaluatedTableName)

	_, err = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("t")})
	must.NoError(t, err)
	_, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a")})
	must.ErrorAs(t, err, &notFound)
	must.NoError(t, createTable(ctx, db, "t"))
	sc, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t")})
	must.NoError(t, err)
	check.Empty(t, sc.Items, "a table created again starts empty")
	check.Equal(t, 0, srv.Stats().ConflictExceptions)

	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("bad"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("x"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}})
	refused(t, err, "Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions")
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("bad"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}})
	refused(t, err, "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(""), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}})
	must.Error(t, err, "a table needs a name")
}

// Query and Scan see a transaction whole or not at all: they read under
// the lock commits take.
func TestScanNeverSeesHalfATransaction(t *testing.T) {
	t.Parallel()
	srv, db := setup(t)
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				txPut(withAttr("a", "v", fmt.Sprint(i)), ""), txPut(withAttr("b", "v", fmt.Sprint(i)), ""),
			}})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	scans := 0
	for running := true; running; scans++ {
		select {
		case <-done:
			running = false
		default:
		}
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), ConsistentRead: aws.Bool(true)})
		must.NoError(t, err)
		if len(out.Items) == 0 {
			continue
		}
		must.Len(t, out.Items, 2)
		check.Equal(t, out.Items[0]["v"], out.Items[1]["v"], "scan %d", scans)
	}
	check.Equal(t, scans, srv.Calls(idemtest.OpScan))
}

// A page holds at most 1 MB of items read: a Scan of four items of
// 400 KB stops after the third, which takes it past 1 MB.
func TestScanPageStopsAtOneMegabyte(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c", "d"} {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: sized(id, 400*1024)})
		must.NoError(t, err)
	}
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t")})
	must.NoError(t, err)
	check.Len(t, out.Items, 3)
	must.NotNil(t, out.LastEvaluatedKey)
	rest, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), ExclusiveStartKey: out.LastEvaluatedKey})
	must.NoError(t, err)
	check.Len(t, rest.Items, 1)
	check.Nil(t, rest.LastEvaluatedKey)
}
