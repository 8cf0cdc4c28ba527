package idemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func setup(t *testing.T, opts ...idemtest.Option) (*idemtest.Server, *dynamodb.Client) {
	t.Helper()
	s := idemtest.New(t, opts...)
	db := s.Client()
	must.NoError(t, createTable(context.Background(), db, "t"))
	s.ResetCalls()
	return s, db
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func withAttr(id, name, v string) map[string]types.AttributeValue {
	it := key(id)
	it[name] = s(v)
	return it
}

func txPut(it map[string]types.AttributeValue, cond string) types.TransactWriteItem {
	p := &types.Put{TableName: aws.String("t"), Item: it, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
	}
	return types.TransactWriteItem{Put: p}
}

func reasons(t *testing.T, err error) []string {
	t.Helper()
	var tce *types.TransactionCanceledException
	must.ErrorAs(t, err, &tce)
	out := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		out[i] = aws.ToString(r.Code)
	}
	return out
}

// DynamoDB: while a TransactWriteItems runs, single-item writes on its
// items get TransactionConflictException (not retried by the SDK), a
// transaction on one of them is cancelled with TransactionConflict at its
// index and None elsewhere, and reads see the last committed value.
func TestRunningTransactionHoldsItsItems(t *testing.T) {
	srv, db := setup(t)
	ctx := context.Background()
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "committed")})
	must.NoError(t, err)

	hold := srv.Hold(idemtest.OpTransactWriteItems)
	done := make(chan error, 1)
	go func() {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			txPut(withAttr("a", "v", "running"), ""), txPut(key("b"), ""),
		}})
		done <- err
	}()
	<-hold.Arrived()
	srv.ResetCalls()

	var conflict *types.TransactionConflictException
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a")})
	check.ErrorAs(t, err, &conflict, "PutItem")
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("b"),
		UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("x")}})
	check.ErrorAs(t, err, &conflict, "UpdateItem")
	_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("a")})
	check.ErrorAs(t, err, &conflict, "DeleteItem")
	check.Equal(t, 1, srv.Calls(idemtest.OpPutItem), "the SDK does not retry TransactionConflictException")

	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(key("c"), ""), txPut(key("a"), ""),
	}})
	check.Equal(t, []string{"None", "TransactionConflict"}, reasons(t, err))
	_, err = db.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("t"), Key: key("a")}},
	}})
	check.Equal(t, []string{"TransactionConflict"}, reasons(t, err))

	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	check.Equal(t, s("committed"), got.Item["v"], "a read sees the last committed value")
	check.Equal(t, idemtest.Stats{ConflictExceptions: 3, ConflictCancellations: 2}, srv.Stats())

	hold.Release()
	must.NoError(t, <-done)
	got, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	check.Equal(t, s("running"), got.Item["v"])
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a")})
	check.NoError(t, err, "the item is free once the transaction commits")
}

// Racing transactions on one item: exactly one claim wins, the rest are
// cancelled (a failed condition or a conflict), and counters updated by
// transactions lose no update.
func TestConcurrentTransactionsAreIsolated(t *testing.T) {
	srv, db := setup(t, idemtest.WithTransactionLatency(5*time.Millisecond))
	ctx := context.Background()
	const n = 24
	var wins, failed, conflicts int
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				txPut(key("claim"), "attribute_not_exists(id)"),
			}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			default:
				switch reasons(t, err)[0] {
				case "ConditionalCheckFailed":
					failed++
				case "TransactionConflict":
					conflicts++
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	check.Equal(t, 1, wins)
	check.Equal(t, n, wins+failed+conflicts)
	check.Equal(t, conflicts, srv.Stats().ConflictCancellations)

	// Whether a racer meets the winner in flight depends on the timing;
	// with the winner parked in flight, every racer does, and once it has
	// committed, every racer fails its condition instead (a failed
	// condition holds nothing, so racers never meet each other).
	hold := srv.Hold(idemtest.OpTransactWriteItems)
	won := make(chan error, 1)
	go func() {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			txPut(key("claim2"), "attribute_not_exists(id)"),
		}})
		won <- err
	}()
	<-hold.Arrived()
	race := func() map[string]int {
		codes := map[string]int{}
		for range n - 1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					txPut(key("claim2"), "attribute_not_exists(id)"),
				}})
				mu.Lock()
				defer mu.Unlock()
				codes[reasons(t, err)[0]]++
			}()
		}
		wg.Wait()
		return codes
	}
	check.Equal(t, map[string]int{"TransactionConflict": n - 1}, race(), "racers meeting the winner in flight")
	hold.Release()
	must.NoError(t, <-won)
	check.Equal(t, map[string]int{"ConditionalCheckFailed": n - 1}, race(), "racers after the winner committed")

	// Counters: each increment retried until it lands; none is lost.
	const adds = 40
	var landed int
	for range adds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Update: &types.Update{
					TableName: aws.String("t"), Key: key("counter"),
					UpdateExpression:          aws.String("ADD n :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
				}}}})
				if err == nil {
					mu.Lock()
					landed++
					mu.Unlock()
					return
				}
				must.Equal(t, []string{"TransactionConflict"}, reasons(t, err))
			}
		}()
	}
	wg.Wait()
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("counter"), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	check.Equal(t, adds, landed)
	check.Equal(t, &types.AttributeValueMemberN{Value: "40"}, got.Item["n"])
}

// ALL_OLD as DynamoDB answers it: the item that failed a condition, on
// every single-item write and in every cancellation reason that asked,
// every failed condition of a transaction reported, and PutItem's
// ReturnValues the replaced item.
func TestAllOld(t *testing.T) {
	_, db := setup(t)
	ctx := context.Background()
	out, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "1"), ReturnValues: types.ReturnValueAllOld})
	must.NoError(t, err)
	check.Empty(t, out.Attributes, "nothing replaced")
	out, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "2"), ReturnValues: types.ReturnValueAllOld})
	must.NoError(t, err)
	check.Equal(t, s("1"), out.Attributes["v"], "the replaced item, not the new one")

	notExists := aws.String("attribute_not_exists(id)")
	var ccf *types.ConditionalCheckFailedException
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a"), ConditionExpression: notExists,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	must.ErrorAs(t, err, &ccf)
	check.Equal(t, s("2"), ccf.Item["v"], "PutItem")
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), ConditionExpression: notExists,
		UpdateExpression: aws.String("SET w = :w"), ExpressionAttributeValues: map[string]types.AttributeValue{":w": s("x")},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	must.ErrorAs(t, err, &ccf)
	check.Equal(t, s("2"), ccf.Item["v"], "UpdateItem")
	_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("a"), ConditionExpression: notExists,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	must.ErrorAs(t, err, &ccf)
	check.Equal(t, s("2"), ccf.Item["v"], "DeleteItem")

	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("b", "v", "b")})
	must.NoError(t, err)
	noOld := txPut(key("b"), "attribute_not_exists(id)")
	noOld.Put.ReturnValuesOnConditionCheckFailure = ""
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(key("a"), "attribute_not_exists(id)"), txPut(key("c"), "attribute_not_exists(id)"), noOld,
	}})
	var tce *types.TransactionCanceledException
	must.ErrorAs(t, err, &tce)
	check.Equal(t, []string{"ConditionalCheckFailed", "None", "ConditionalCheckFailed"}, reasons(t, err))
	check.Equal(t, s("2"), tce.CancellationReasons[0].Item["v"], "a Put's reason carries the item")
	check.Empty(t, tce.CancellationReasons[2].Item, "no item where ALL_OLD was not asked for")
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("c"), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	check.Empty(t, got.Item, "a cancelled transaction writes nothing")
}

// Each injected fault answers as DynamoDB's failure does, and the SDK
// reacts to it as it would on AWS.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	put := func(db *dynamodb.Client, id string) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key(id), ConditionExpression: aws.String("attribute_not_exists(id)")})
		return err
	}
	t.Run("throttled and 5xx are retried by the SDK", func(t *testing.T) {
		srv, _ := setup(t)
		// The standard retryer, with backoffs short enough for a test.
		db := srv.Client(func(o *dynamodb.Options) {
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 5 * time.Millisecond })
		})
		srv.Inject(idemtest.OpPutItem, idemtest.Throttled, 1)
		srv.Inject(idemtest.OpPutItem, idemtest.ServerError, 1)
		must.NoError(t, put(db, "a"))
		check.Equal(t, 3, srv.Calls(idemtest.OpPutItem))
		srv.Inject(idemtest.OpPutItem, idemtest.Throttled, 10)
		err := put(db, "b")
		var throttled interface{ ErrorCode() string }
		must.ErrorAs(t, err, &throttled)
		check.Equal(t, "ThrottlingException", throttled.ErrorCode())
		srv.ClearFaults()
		must.NoError(t, put(db, "b"), "nothing was written by the throttled attempts")
	})
	t.Run("conflict", func(t *testing.T) {
		srv, db := setup(t)
		srv.Inject(idemtest.OpPutItem, idemtest.Conflict, 1)
		srv.Inject(idemtest.OpTransactWriteItems, idemtest.Conflict, 1)
		var conflict *types.TransactionConflictException
		check.ErrorAs(t, put(db, "a"), &conflict)
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(key("a"), ""), txPut(key("b"), "")}})
		check.Equal(t, []string{"TransactionConflict", "None"}, reasons(t, err))
		check.Equal(t, 1, srv.Calls(idemtest.OpTransactWriteItems), "the SDK does not retry a cancelled transaction")
		must.NoError(t, put(db, "a"))
	})
	t.Run("a lost answer hides a write that landed", func(t *testing.T) {
		srv, db := setup(t)
		srv.Inject(idemtest.OpPutItem, idemtest.LostAnswer, 1)
		var ccf *types.ConditionalCheckFailedException
		check.ErrorAs(t, put(db, "a"), &ccf, "the SDK's retry meets the first attempt's item")
		check.Equal(t, 2, srv.Calls(idemtest.OpPutItem))
	})
	t.Run("a lost transaction answer is repaired by its ClientRequestToken", func(t *testing.T) {
		srv, db := setup(t)
		srv.Inject(idemtest.OpTransactWriteItems, idemtest.LostAnswer, 1)
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			txPut(key("a"), "attribute_not_exists(id)"),
		}})
		must.NoError(t, err, "DynamoDB answers the retry from its token: success, no second write")
		check.Equal(t, 2, srv.Calls(idemtest.OpTransactWriteItems))

		in := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("tok"), TransactItems: []types.TransactWriteItem{txPut(key("b"), "")}}
		_, err = db.TransactWriteItems(ctx, in)
		must.NoError(t, err)
		in.TransactItems = []types.TransactWriteItem{txPut(key("c"), "")}
		_, err = db.TransactWriteItems(ctx, in)
		var mismatch *types.IdempotentParameterMismatchException
		check.ErrorAs(t, err, &mismatch)
	})
}

// WithPutHook reports every put in commit order per item, from each
// write operation.
func TestPutHook(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := idemtest.New(t, idemtest.WithPutHook(func(table string, raw json.RawMessage) {
		mu.Lock()
		got = append(got, table+" "+string(raw))
		mu.Unlock()
	}))
	db := srv.Client()
	ctx := context.Background()
	must.NoError(t, createTable(ctx, db, "t"))
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a")})
	must.NoError(t, err)
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(key("b"), "")}})
	must.NoError(t, err)
	_, err = db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"t": {{PutRequest: &types.PutRequest{Item: key("c")}}},
	}})
	must.NoError(t, err)
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(key("a"), "attribute_not_exists(id)")}})
	must.Error(t, err)
	check.Equal(t, []string{`t {"id":{"S":"a"}}`, `t {"id":{"S":"b"}}`, `t {"id":{"S":"c"}}`}, got)
}

// BatchWriteItem: a request DynamoDB refuses holds nothing, duplicate keys
// are refused, and batches over the same items in any order never wait
// on each other forever.
func TestBatchWriteNeverWedgesAnItem(t *testing.T) {
	_, db := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	put := func(it map[string]types.AttributeValue) types.WriteRequest {
		return types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	_, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"t": {put(key("a")), put(map[string]types.AttributeValue{"x": s("no key")})},
	}})
	must.Error(t, err, "a request without its key is refused")
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a")})
	must.NoError(t, err, "and holds nothing")

	_, err = db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"t": {put(key("b")), put(key("b"))},
	}})
	var validation interface{ ErrorCode() string }
	must.ErrorAs(t, err, &validation)
	check.Equal(t, "ValidationException", validation.ErrorCode(), "duplicate keys in one request")
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("b")})
	must.NoError(t, err)

	var wg sync.WaitGroup
	for i := range 40 {
		order := []string{"x", "y", "z"}
		if i%2 == 1 {
			order = []string{"z", "y", "x"}
		}
		wg.Go(func() {
			reqs := make([]types.WriteRequest, len(order))
			for j, id := range order {
				reqs[j] = put(key(id))
			}
			_, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": reqs}})
			check.NoError(t, err)
		})
	}
	wg.Wait()
	must.NoError(t, ctx.Err(), "batches over the same items in opposite orders all finished")
}

// A repeated ClientRequestToken with the same parameters succeeds however
// the SDK orders the attributes of its maps.
func TestClientRequestTokenComparesParameters(t *testing.T) {
	_, db := setup(t)
	ctx := context.Background()
	it := key("a")
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		it[n] = s(n)
	}
	in := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("same"), TransactItems: []types.TransactWriteItem{txPut(it, "")}}
	for range 20 {
		_, err := db.TransactWriteItems(ctx, in)
		must.NoError(t, err)
	}
}

// One server shared by many tests (the container and endpoint backends)
// creates tables while other tests' transactions run. The store once
// kept its items in minidyn, which read its table map in a transaction's
// condition checks without its lock, and a table created meanwhile
// crashed the store (a fatal concurrent map read and write; under -race,
// a reported race). Tables are created here while transactions with
// condition checks run, and every request must answer.
func TestTablesCreatedWhileTransactionsRun(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var txs, failed sync.Map
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: key("check-" + id), ConditionExpression: aws.String("attribute_not_exists(id)")}},
					txPut(key(id), "attribute_not_exists(id)"),
				}})
				txs.Store(id, true)
				if err != nil {
					failed.Store(id, err)
				}
			}
		})
	}
	for i := range 30 {
		must.NoError(t, createTable(ctx, db, fmt.Sprintf("created-%d", i)))
	}
	close(stop)
	wg.Wait()
	n := 0
	txs.Range(func(any, any) bool { n++; return true })
	failed.Range(func(k, v any) bool { t.Errorf("transaction %v: %v", k, v); return true })
	t.Logf("30 tables created while %d transactions ran", n)
	check.Positive(t, n)
}
