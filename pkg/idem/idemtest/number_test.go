package idemtest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// Hole 4 of issue 36: "In DynamoDB, numbers are represented as variable
// length. Leading and trailing zeroes are trimmed." (Developer Guide,
// "Supported data types and naming rules", Number). Every number comes
// back in that form, however it was written: in an item, a key, a set,
// an update's value, ALL_OLD, Query and Scan.
func TestNumbersComeBackTrimmed(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	createNumberTable(ctx, t, db, "nums")
	written := map[string]string{
		"1.50": "1.5", "007": "7", "-0.10": "-0.1", "0.0": "0", "-0": "0", "100": "100",
		"1E2": "100", "1.0E-2": "0.01", "+3": "3", "0.000": "0", "120.00": "120",
	}
	it := key("a")
	i := 0
	want := map[string]string{}
	for in, out := range written {
		name := "n" + string(rune('a'+i))
		it[name] = n(in)
		want[name] = out
		i++
	}
	it["set"] = &types.AttributeValueMemberNS{Value: []string{"1.0", "02", "-3.50"}}
	it["list"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{n("4.00"), &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": n("0005.5")}}}}
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: it})
	must.NoError(t, err)

	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	for name, out := range want {
		check.Equal(t, n(out), got.Item[name], "%s", name)
	}
	check.Equal(t, []string{"1", "2", "-3.5"}, got.Item["set"].(*types.AttributeValueMemberNS).Value)
	list := got.Item["list"].(*types.AttributeValueMemberL).Value
	check.Equal(t, n("4"), list[0])
	check.Equal(t, n("5.5"), list[1].(*types.AttributeValueMemberM).Value["x"])

	// An update's value, and what ReturnValues and ALL_OLD return.
	upd, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"),
		UpdateExpression:          aws.String("SET price = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": n("19.90")},
		ReturnValues:              types.ReturnValueUpdatedNew})
	must.NoError(t, err)
	check.Equal(t, n("19.9"), upd.Attributes["price"])
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a"),
		ConditionExpression:                 aws.String("attribute_not_exists(id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	var ccf *types.ConditionalCheckFailedException
	if check.ErrorAs(t, err, &ccf) {
		check.Equal(t, n("19.9"), ccf.Item["price"])
	}

	// A number key comes back trimmed, from GetItem, Query and Scan; the
	// key written "007" is the key 7.
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("nums"), Item: vals("pk", s("x"), "sk", n("007.50"), "v", n("1.10"))})
	must.NoError(t, err)
	g, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("nums"), Key: vals("pk", s("x"), "sk", n("7.5")), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	check.Equal(t, n("7.5"), g.Item["sk"])
	check.Equal(t, n("1.1"), g.Item["v"])
	q, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("nums"), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("x")}})
	must.NoError(t, err)
	must.Len(t, q.Items, 1)
	check.Equal(t, n("7.5"), q.Items[0]["sk"])
	sc, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("nums")})
	must.NoError(t, err)
	must.Len(t, sc.Items, 1)
	check.Equal(t, n("1.1"), sc.Items[0]["v"])
}
