package idemstream_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemstream"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A record whose effect happened but whose completion could not be
// recorded (every attempt throttled while the lease lasted) is
// acknowledged, and the shard goes on past it: asking for it again would
// have Lambda deliver it after the lease, and its effect would run
// again. In fake time, with the strict store in the bubble.
func TestAShardAcknowledgesAnEffectNotRecordedAndGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := idemtest.NewServer()
		defer server.Close()
		db := server.HandlerClient()
		must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}))
		store, err := idem.NewStore(db, "idempotency")
		must.NoError(t, err)

		var applied []string
		effect := func(_ context.Context, v string) error {
			server.ClearFaults()
			applied = append(applied, v)
			if v == "unrecorded" {
				server.Inject(idemtest.OpUpdateItem, idemtest.Throttled, 1_000_000)
			}
			return nil
		}
		record := func(seq, body string) events.KinesisEventRecord {
			return events.KinesisEventRecord{Kinesis: events.KinesisRecord{SequenceNumber: seq, Data: []byte(body)}}
		}
		ev := events.KinesisEvent{Records: []events.KinesisEventRecord{record("1", "unrecorded"), record("2", "next")}}
		decode := func(r events.KinesisEventRecord) (idemstream.Entry[string], error) {
			return idemstream.Entry[string]{Principal: "orders", Key: "k" + r.Kinesis.SequenceNumber, Value: string(r.Kinesis.Data)}, nil
		}
		shipments, err := idemstream.NewKinesis(store, "ship", decode)
		must.NoError(t, err)
		resp, results := shipments.Run(context.Background(), ev, effect)
		check.Empty(t, resp.BatchItemFailures, "the effect happened: nothing to deliver again")
		must.Len(t, results, 2)
		check.Equal(t, idem.OutcomeNotRecorded, results[0].Outcome)
		check.ErrorIs(t, results[0].Err, idem.ErrNotRecorded, "the caller can still log why")
		check.False(t, results[0].Redeliver())
		check.Equal(t, idem.OutcomeExecuted, results[1].Outcome, "the shard goes on past it")
		check.Equal(t, []string{"unrecorded", "next"}, applied)
	})
}
