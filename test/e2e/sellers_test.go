//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	internalconfig "github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/streampoll"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/sellers"
)

// twice publishes every call two times: the same PutEvents, sent again,
// as a relay retry after a lost answer would.
type twice struct {
	next  outbox.Publisher
	calls int
}

func (p *twice) Publish(ctx context.Context, evs []outbox.Event) (outbox.Result, error) {
	p.calls++
	if _, err := p.next.Publish(ctx, evs); err != nil {
		return outbox.Result{}, err
	}
	return p.next.Publish(ctx, evs)
}

// sellerStats is the pipeline end to end, to the seller statistics: the
// products' outbox events go through the stream, the relay, EventBridge's
// rule and the SQS queue to the sellerstats consumer, with redelivery at
// every hop (the whole stream relayed twice, every PutEvents sent twice,
// every SQS message received at least twice), and every seller's numbers
// must equal what the distinct products add up to.
func sellerStats(t *testing.T, c clients) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*caseTimeout)
	defer cancel()
	st := newStack(ctx, t, c, "sellers")
	cfg, err := internalconfig.LoadCreateProduct(mapEnv(st.env))
	require.NoError(t, err)
	cfg.LogLevel = slog.LevelWarn
	create, err := createproduct.New(c.ddb, cfg, app.Runtime{Out: functionOut(t)})
	require.NoError(t, err)

	// 12 products for 3 sellers in 2 currencies, each POSTed twice.
	sellerIDs := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	type totals struct {
		count int64
		cents map[string]int64
	}
	want := map[string]*totals{}
	tmpl := createEvent(t)
	for i := range 12 {
		seller, cur, cents := sellerIDs[i%3], []string{"EUR", "USD"}[i%2], int64(100+i)
		req := request(tmpl, fmt.Sprintf("sellers-%d", i), i, 0)
		req.Body = fmt.Sprintf(`{"name":"Widget %d","price_cents":%d,"currency":"%s","seller_id":"%s"}`, i, cents, cur, seller)
		// events/create.json's token acts for its one seller; this one for
		// the three.
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
			Claims: map[string]string{"iss": "https://issuer.example", "sub": "e2e", "seller_ids": strings.Join(sellerIDs, " ")},
		}}
		for range 2 {
			r := post(ctx, create, req)
			require.Equal(t, 201, r.status, r.body)
		}
		if want[seller] == nil {
			want[seller] = &totals{cents: map[string]int64{}}
		}
		want[seller].count++
		want[seller].cents[cur] += cents
	}

	// Hop 1 and 2: the stream relayed twice from its start, each PutEvents
	// sent twice: every event reaches the bus 4 times.
	pub0, err := bridge.New(c.events, bridge.Config{
		Bus: st.env[internalconfig.EventBusName.Name], Source: st.env[internalconfig.EventSource.Name],
	})
	require.NoError(t, err)
	pub := &twice{next: pub0}
	log := testLogger(t, slog.LevelWarn)
	for pass := range 2 {
		calls := &relayCalls{}
		poller, err := streampoll.NewPoller(c.streams, st.streamARN, calls.wrap(relayHandler(t, pub, functionOut(t)).Handle),
			streampoll.Options{PollInterval: 50 * time.Millisecond, RetryDelay: 100 * time.Millisecond, Logger: log})
		require.NoError(t, err)
		pctx, stop := context.WithCancel(ctx)
		stopped := make(chan error, 1)
		go func() { stopped <- poller.Run(pctx) }()
		require.Eventually(t, func() bool { return calls.handled() >= 12 }, caseTimeout, 50*time.Millisecond, "relay pass %d", pass)
		stop()
		require.NoError(t, <-stopped)
	}

	// Hop 3: the queue, consumed as the event source mapping does (receive,
	// invoke, delete what succeeded, leave the failures), except that a
	// message's first receive is never deleted: it comes back at once.
	sc := internalconfig.SellerStats{
		SellersTable: st.env[internalconfig.SellersTable.Name], EventSource: st.env[internalconfig.EventSource.Name],
		Idempotency: internalconfig.Idempotency{Table: st.env[internalconfig.IdempotencyTable.Name], Retention: 576 * time.Hour},
	}
	sc.Idempotency.Mode = "transact"
	sc.LogLevel = slog.LevelWarn
	consumerOut := functionOut(t)
	consumer, err := sellerstats.New(c.ddb, sc, app.Runtime{Out: consumerOut})
	require.NoError(t, err)
	receives := map[string]int{}
	var invoked, deleted, reported int
	quiet := 0
	for quiet < 10 && ctx.Err() == nil {
		out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(st.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 30,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			quiet++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		quiet = 0
		batch := events.SQSEvent{}
		handles := map[string]*string{}
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			receives[id]++
			handles[id] = m.ReceiptHandle
			batch.Records = append(batch.Records, events.SQSMessage{
				MessageId: id, ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives[id])}, EventSource: "aws:sqs",
			})
		}
		resp, err := consumer.Handle(ctx, batch)
		require.NoError(t, err)
		invoked += len(batch.Records)
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
			reported++
		}
		for id, h := range handles {
			switch {
			case failed[id]:
				// left for the queue to redeliver
			case receives[id] == 1:
				// processed, but the delete "is lost": visible again now
				_, err := c.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
					QueueUrl: aws.String(st.queueURL), ReceiptHandle: h, VisibilityTimeout: 0,
				})
				require.NoError(t, err)
			default:
				_, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(st.queueURL), ReceiptHandle: h})
				require.NoError(t, err)
				deleted++
			}
		}
	}
	require.NoError(t, ctx.Err())
	minReceives := 0
	for _, n := range receives {
		if minReceives == 0 || n < minReceives {
			minReceives = n
		}
	}

	// The invariant, for every seller.
	reader, err := sellers.NewReader(c.ddb, sc.SellersTable)
	require.NoError(t, err)
	for seller, w := range want {
		id, err := uuid.Parse(seller)
		require.NoError(t, err)
		got, err := reader.Get(ctx, id)
		require.NoError(t, err, seller)
		assert.Equal(t, sellers.NumberOf(uint64(w.count)), got.ProductCount, "seller %s: one count per distinct product", seller)
		cents := map[string]int64{}
		for _, m := range got.Listed {
			n, ok := m.Cents.Int64()
			require.True(t, ok, "seller %s: %s %s", seller, m.Cents, m.Currency)
			cents[string(m.Currency)] = n
		}
		assert.Equal(t, w.cents, cents, "seller %s: each currency's total is the sum of its products' prices", seller)
	}
	t.Logf("sellers: 12 products (24 POSTs), the stream relayed 2 times, %d PutEvents calls each sent twice; "+
		"the queue held %d messages (12 events x 4), each received at least %d times: %d deliveries to the consumer, "+
		"%d duplicates absorbed, %d reported failed, %d deleted; every seller's count and totals equal the truth",
		pub.calls, len(receives), minReceives, invoked, invoked-12-reported, reported, deleted)
	assert.Equal(t, 48, len(receives), "each event reached the queue 4 times")
	assert.GreaterOrEqual(t, minReceives, 2, "every message received at least twice")
	assert.Zero(t, reported, "no failures without a fault")

	// What the operator sees: the consumer's metrics lines add up to the
	// same story.
	sum := map[string]float64{}
	lines := consumerOut.Metrics(t)
	for _, l := range lines {
		for _, m := range []string{"Records", "Applied", "Duplicate", "Poison", "Failed", "DynamoDBCalls"} {
			v, _ := l[m].(float64)
			sum[m] += v
		}
	}
	t.Logf("sellerstats metrics: %v", sum)
	assert.EqualValues(t, invoked, sum["Records"])
	assert.EqualValues(t, 12, sum["Applied"])
	assert.EqualValues(t, invoked-12-reported, sum["Duplicate"])
	assert.Zero(t, sum["Poison"])
	// One transaction per batch, one more where the batch held duplicates:
	// between one and two calls per invocation that reached the store, and
	// far fewer than one per delivery.
	assert.Positive(t, sum["DynamoDBCalls"])
	assert.LessOrEqual(t, sum["DynamoDBCalls"], float64(2*len(lines)), "at most two transactions per batch without conflicts (moto has none)")
	assert.Less(t, sum["DynamoDBCalls"], float64(invoked), "a batch commits in one transaction, not one per delivery")
}
