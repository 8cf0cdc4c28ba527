package idemstream_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// Transact applies a shard's records one after another, so it too leaves
// a record untried when the time left before the invocation's deadline
// is less than the slowest record took (CHANGELOG: "FIFO queues and
// streams"): a record started then would run into the deadline, and the
// whole batch would come back rather than the shard resuming from it.
func TestTransactLeavesARecordUntriedWithoutTimeForIt(t *testing.T) {
	t.Parallel()
	// In fake time (testing/synctest, the strict store served
	// in-process): the deadline and the record's time are exact, whatever
	// the machine's load.
	synctest.Test(t, func(t *testing.T) {
		srv := idemtest.NewServer()
		defer srv.Close()
		db := srv.HandlerClient()
		must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
		store, err := idem.NewStore(db, "idempotency")
		must.NoError(t, err)

		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		var calls atomic.Int64
		ev := events.KinesisEvent{Records: []events.KinesisEventRecord{
			{Kinesis: events.KinesisRecord{SequenceNumber: "1", Data: []byte("a")}},
			{Kinesis: events.KinesisRecord{SequenceNumber: "2", Data: []byte("b")}},
			{Kinesis: events.KinesisRecord{SequenceNumber: "3", Data: []byte("c")}},
		}}
		resp, res := kinesis(t, store, "count", func(r events.KinesisEventRecord) (idemstream.Entry[string], error) {
			return idemstream.Entry[string]{Principal: "orders", Key: "k" + r.Kinesis.SequenceNumber, Value: string(r.Kinesis.Data)}, nil
		}).Transact(ctx, ev, func([]string, []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
			calls.Add(1)
			time.Sleep(300 * time.Millisecond)
			return nil, nil
		})
		check.Equal(t, idem.OutcomeExecuted, res[0].Outcome)
		check.Equal(t, []events.KinesisBatchItemFailure{{ItemIdentifier: "2"}}, resp.BatchItemFailures)
		check.ErrorIs(t, res[1].Err, context.DeadlineExceeded)
		check.EqualValues(t, 1, calls.Load(), "the second record is not started")
		check.ErrorIs(t, res[2].Err, idemstream.ErrSkipped)
	})
}
