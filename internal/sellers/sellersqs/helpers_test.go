package sellersqs_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
	"github.com/idemlambda/idemlambda/internal/tracing"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/money"
)

const source = "idemlambda.products"

type fixture struct {
	env      *ddbtest.Env
	consumer *sellersqs.Consumer
	reader   *sellers.Reader
	logs     *logbuf.Buffer
	// shards, when set, is how many shards consumers made by newConsumer
	// spread a seller over (sellers.Shards otherwise).
	shards int
	// tracing, when set, is what consumers made by newConsumer trace with.
	tracing *tracing.Tracing
}

func newFixture(t testing.TB, opts ...idem.Option) *fixture {
	t.Helper()
	env := ddbtest.New(t)
	f := &fixture{env: env, logs: &logbuf.Buffer{}}
	f.consumer = f.newConsumer(t, 0, opts...)
	t.Cleanup(func() { f.logs.Metrics(t) }) // every line meets the EMF specification
	r, err := sellers.NewReader(env.Client, env.Tables.Sellers)
	require.NoError(t, err)
	f.reader = r
	return f
}

// newConsumer is another sellerstats function on the fixture's tables
// and log, as another execution environment runs it: its own store, with
// a cache of cacheSize completed records.
func (f *fixture) newConsumer(t testing.TB, cacheSize int, opts ...idem.Option) *sellersqs.Consumer {
	t.Helper()
	return f.newConsumerOn(t, f.env.Client, cacheSize, opts...)
}

// newConsumerOn is newConsumer with its own DynamoDB client.
func (f *fixture) newConsumerOn(t testing.TB, client *dynamodb.Client, cacheSize int, opts ...idem.Option) *sellersqs.Consumer {
	t.Helper()
	cfg := config.SellerStats{
		Common:       config.Common{LogLevel: slog.LevelDebug},
		SellersTable: f.env.Tables.Sellers, EventSource: source,
		Idempotency: config.Idempotency{Table: f.env.Tables.Idempotency, Retention: 7 * 24 * time.Hour, Mode: config.ModeTransact, CacheSize: cacheSize},
	}
	c, err := sellerstats.New(client, cfg, app.Runtime{Out: f.logs, Tracing: f.tracing}, opts...)
	require.NoError(t, err)
	if f.shards > 0 {
		sellersqs.SetShards(c, f.shards)
	}
	return c
}

// created is one product and the ProductCreated event the relay would
// publish for it.
type created struct {
	seller uuid.UUID
	price  money.Money
	event  outbox.Event
}

func newProduct(t testing.TB, seller uuid.UUID, price money.Money) created {
	t.Helper()
	_, ev := outboxtest.ProductCreated(t, source, seller, price)
	return created{seller: seller, price: price, event: ev}
}

// message is the SQS message EventBridge would deliver for the event.
func (c created) message(t testing.TB, receive int) events.SQSMessage {
	t.Helper()
	body, err := eventbus.EventEnvelope(c.event)
	require.NoError(t, err)
	return eventbus.Message("m-"+c.event.ID, string(body), receive)
}

// delivery is the n-th delivery of the event as its own SQS message:
// EventBridge and the relay redeliver an event as a new message, with a
// messageId of its own, which is what a batch's failures name.
func (c created) delivery(t testing.TB, n int) events.SQSMessage {
	t.Helper()
	m := c.message(t, 1)
	m.MessageId = fmt.Sprintf("m-%s-%d", c.event.ID, n)
	return m
}

func eur(t testing.TB, cents int64) money.Money {
	t.Helper()
	m, err := money.New(cents, "EUR")
	require.NoError(t, err)
	return m
}

// listed is what a seller's statistics list for these totals, in order.
func listed(ms ...money.Money) []sellers.Total {
	out := make([]sellers.Total, len(ms))
	for i, m := range ms {
		out[i] = sellers.Total{Cents: sellers.NumberOf(uint64(m.Cents())), Currency: m.Currency()}
	}
	return out
}

func (f *fixture) handle(t testing.TB, msgs ...events.SQSMessage) events.SQSEventResponse {
	t.Helper()
	resp, err := f.consumer.Handle(context.Background(), events.SQSEvent{Records: msgs})
	require.NoError(t, err, "the consumer never fails a whole batch")
	return resp
}

// batchLines are the consumer's metrics lines, one per batch, summed.
func (f *fixture) batchTotals(t testing.TB) (lines int, sum map[string]float64) {
	t.Helper()
	sum = map[string]float64{}
	for _, l := range f.logs.Metrics(t) {
		require.Equal(t, "sellerstats", l["Function"])
		lines++
		for _, m := range []string{"Records", "Applied", "Duplicate", "Poison", "Failed", "DynamoDBCalls"} {
			v, ok := l[m].(float64)
			require.True(t, ok, "%s in %v", m, l)
			sum[m] += v
		}
	}
	return lines, sum
}

func failedIDs(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}
