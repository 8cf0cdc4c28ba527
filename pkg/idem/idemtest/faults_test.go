package idemtest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// fastRetries is the SDK's standard retryer (3 attempts) with backoffs
// short enough for a test.
func fastRetries(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
}

func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// DynamoDB cancels a transaction with one reason per item, the failing
// item's code and None elsewhere (API Reference, TransactWriteItems:
// "TransactionCanceledException"; the reasons ThrottlingError,
// ProvisionedThroughputExceeded, ValidationError, TransactionConflict,
// ItemCollectionSizeLimitExceeded). The SDK does not retry it.
func TestInjectCancellation(t *testing.T) {
	srv, db := setup(t)
	ctx := context.Background()
	three := []types.TransactWriteItem{txPut(key("a"), ""), txPut(key("b"), ""), txPut(key("c"), "")}
	for _, code := range []string{"ThrottlingError", "ProvisionedThroughputExceeded", "ValidationError", "TransactionConflict", "ItemCollectionSizeLimitExceeded"} {
		srv.InjectCancellation(code, 1, 1)
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: three})
		check.Equal(t, []string{"None", code, "None"}, reasons(t, err), code)
		var tce *types.TransactionCanceledException
		must.ErrorAs(t, err, &tce)
		check.Equal(t, "Transaction cancelled, please refer cancellation reasons for specific reasons [None, "+code+", None]", tce.ErrorMessage())
		check.NotEmpty(t, aws.ToString(tce.CancellationReasons[1].Message))
	}
	check.Equal(t, 5, srv.Calls(idemtest.OpTransactWriteItems), "the SDK does not retry a cancelled transaction")

	srv.InjectCancellation("ThrottlingError", 7, 2)
	for range 2 {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: three})
		check.Equal(t, []string{"None", "None", "ThrottlingError"}, reasons(t, err), "an index past the items falls on the last")
	}
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	check.Empty(t, got.Item, "a cancelled transaction writes nothing")
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: three})
	must.NoError(t, err, "spent after times transactions")

	check.PanicsWithValue(t,
		`idemtest: InjectCancellation("ConditionalCheckFailed"): want ThrottlingError, ProvisionedThroughputExceeded, ValidationError, TransactionConflict or ItemCollectionSizeLimitExceeded (a ConditionalCheckFailed needs a real condition)`,
		func() { srv.InjectCancellation("ConditionalCheckFailed", 0, 1) })
}

// ThrottledPastRetries refuses every attempt of an SDK call: the
// standard retryer makes 3 attempts and gives up with the throttling
// error; the next call goes through. A transaction is cancelled with
// ThrottlingError reasons, as DynamoDB cancels a throttled transaction,
// and the SDK does not retry that.
func TestThrottledPastRetries(t *testing.T) {
	srv, _ := setup(t)
	db := srv.Client(fastRetries)
	ctx := context.Background()
	put := func(id string) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key(id)})
		return err
	}

	srv.Inject(idemtest.OpPutItem, idemtest.ThrottledPastRetries, 2)
	for range 2 {
		err := put("a")
		check.Equal(t, "ThrottlingException", errorCode(err))
		var exhausted *retry.MaxAttemptsError
		check.ErrorAs(t, err, &exhausted, "the SDK gave up")
	}
	check.Equal(t, 6, srv.Calls(idemtest.OpPutItem), "2 calls of 3 attempts each")
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ConsistentRead: aws.Bool(true)})
	must.NoError(t, err)
	check.Empty(t, got.Item, "nothing was written")
	must.NoError(t, put("a"), "spent after 2 calls")

	srv.Inject(idemtest.OpGetItem, idemtest.ThrottledPastRetries, 1)
	_, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a")})
	check.Equal(t, "ThrottlingException", errorCode(err))

	srv.ResetCalls()
	srv.Inject(idemtest.OpTransactWriteItems, idemtest.ThrottledPastRetries, 1)
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(key("b"), ""), txPut(key("c"), "")}})
	check.Equal(t, []string{"ThrottlingError", "ThrottlingError"}, reasons(t, err))
	check.Equal(t, 1, srv.Calls(idemtest.OpTransactWriteItems))

	// A request without the SDK's invocation header is a call of its own.
	srv.Inject(idemtest.OpPutItem, idemtest.ThrottledPastRetries, 1)
	req, err := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(`{"TableName":"t","Item":{"id":{"S":"raw"}}}`))
	must.NoError(t, err)
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	check.Equal(t, http.StatusBadRequest, resp.StatusCode)
	must.NoError(t, put("d"), "the raw request spent the fault")
}

// HandlerClient serves a store inside a testing/synctest bubble: a 5 s
// transaction takes no real time (the bubble's fake clock moves by
// exactly its latency, which a real sleep would not), and a write during
// it is refused as it is without synctest.
func TestHandlerClientInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := idemtest.NewServer(idemtest.WithTransactionLatency(5 * time.Second))
		db := srv.HandlerClient()
		ctx := context.Background()
		must.NoError(t, createTable(ctx, db, "t"))

		began := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(key("a"), "attribute_not_exists(id)")}})
			done <- err
		}()
		synctest.Wait() // the transaction sleeps, holding its item
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a")})
		var conflict *types.TransactionConflictException
		check.ErrorAs(t, err, &conflict)
		_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(key("b"), ""), txPut(key("a"), "")}})
		check.Equal(t, []string{"None", "TransactionConflict"}, reasons(t, err))
		must.NoError(t, <-done)
		check.Equal(t, 5*time.Second, time.Since(began), "fake time")

		// InjectLatency: a slow single-item write holds its item meanwhile.
		srv.InjectLatency(idemtest.OpTransactWriteItems, time.Hour, 1)
		go func() {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(key("c"), "")}})
			done <- err
		}()
		synctest.Wait()
		_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("c")})
		check.ErrorAs(t, err, &conflict, "the slow transaction still holds its item")
		must.NoError(t, <-done)
		check.Equal(t, time.Hour+10*time.Second, time.Since(began), "the injected hour and the store's 5 s latency")
	})
}

// InjectLatency on a read answers it later; on a single-item write it
// keeps the item from other writes, which wait their turn.
func TestInjectLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := idemtest.NewServer()
		db := srv.HandlerClient()
		ctx := context.Background()
		must.NoError(t, createTable(ctx, db, "t"))
		began := time.Now()
		srv.InjectLatency(idemtest.OpGetItem, 3*time.Second, 1)
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a")})
		must.NoError(t, err)
		check.Equal(t, 3*time.Second, time.Since(began))

		srv.InjectLatency(idemtest.OpPutItem, 2*time.Second, 1)
		first := make(chan time.Duration)
		go func() {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "first")})
			check.NoError(t, err)
			first <- time.Since(began)
		}()
		synctest.Wait()
		_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("a", "v", "second")})
		must.NoError(t, err)
		check.Equal(t, 5*time.Second, time.Since(began), "the second write waited for the first")
		check.Equal(t, 5*time.Second, <-first)
		got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ConsistentRead: aws.Bool(true)})
		must.NoError(t, err)
		check.Equal(t, s("second"), got.Item["v"])
	})
}
