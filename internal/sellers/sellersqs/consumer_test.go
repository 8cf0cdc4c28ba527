package sellersqs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// TestEveryEventCountsOnceWhateverIsRedelivered: 500 events for 20 sellers
// in 3 currencies, each delivered 1 to 4 times, in shuffled batches of up
// to 10, by 8 concurrent invocations. Every seller's count and totals
// equal the truth computed from the distinct events.
func TestEveryEventCountsOnceWhateverIsRedelivered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(7, 11))
	currencies := []money.Currency{"EUR", "USD", "JPY"}
	sellerIDs := make([]uuid.UUID, 20)
	for i := range sellerIDs {
		sellerIDs[i] = uuid.New()
	}
	type truth struct {
		count  int64
		totals map[money.Currency]int64
	}
	want := map[uuid.UUID]*truth{}
	var deliveries []events.SQSMessage
	const eventsN = 500
	for range eventsN {
		seller := sellerIDs[rng.IntN(len(sellerIDs))]
		price, err := money.New(1+rng.Int64N(100_000), currencies[rng.IntN(len(currencies))])
		require.NoError(t, err)
		c := newProduct(t, seller, price)
		if want[seller] == nil {
			want[seller] = &truth{totals: map[money.Currency]int64{}}
		}
		want[seller].count++
		want[seller].totals[price.Currency()] += price.Cents()
		for r := range 1 + rng.IntN(4) {
			deliveries = append(deliveries, c.delivery(t, r+1))
		}
	}
	rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	f.env.Counter.Reset()
	run := f.drain(t, deliveries, 8, rng, func(rng *rand.Rand) int { return 1 + rng.IntN(10) })
	batchesN, handled, redelivered := run.Batches, run.Handled, run.Redelivered
	assert.Empty(t, run.DeadLettered, "no valid message ends in the dead-letter queue")

	applied, duplicate := 0, 0
	for _, line := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"seller stats batch"`) {
			var a, d int
			_, _ = fmt.Sscanf(line[strings.Index(line, `"applied":`):], `"applied":%d,"duplicate":%d`, &a, &d)
			applied += a
			duplicate += d
		}
	}
	conflicts := ""
	if f.env.Store != nil {
		s := f.env.Store.Stats()
		conflicts = fmt.Sprintf(" conflicts: %d cancellations + %d exceptions (%.2f per event)", s.ConflictCancellations, s.ConflictExceptions,
			float64(s.ConflictCancellations+s.ConflictExceptions)/eventsN)
	}
	t.Logf("events=%d deliveries=%d handled=%d redelivered=%d applied=%d duplicates absorbed=%d sellers=%d calls: %s (%.2f per event)%s",
		eventsN, len(deliveries), handled, redelivered, applied, duplicate, len(want), f.env.Counter,
		float64(f.env.Counter.Total())/eventsN, conflicts)
	assert.Equal(t, eventsN, applied, "each event applied once")
	assert.Equal(t, handled-eventsN-redelivered, duplicate, "every other delivery acknowledged as a duplicate")
	// The metrics lines tell the operator the same, one per batch, and
	// count every call the client made.
	lines, sum := f.batchTotals(t)
	assert.Equal(t, batchesN, lines)
	assert.EqualValues(t, handled, sum["Records"])
	assert.EqualValues(t, applied, sum["Applied"])
	assert.EqualValues(t, duplicate, sum["Duplicate"])
	assert.EqualValues(t, redelivered, sum["Failed"], "a failed message is one the queue redelivers")
	assert.Zero(t, sum["Poison"])
	assert.EqualValues(t, f.env.Counter.Total(), sum["DynamoDBCalls"])
	for seller, w := range want {
		got, err := f.reader.Get(context.Background(), seller)
		require.NoError(t, err)
		assert.Equal(t, sellers.NumberOf(uint64(w.count)), got.ProductCount, "seller %s count", seller)
		totals := map[money.Currency]int64{}
		for _, m := range got.Listed {
			n, ok := m.Cents.Int64()
			require.True(t, ok)
			totals[m.Currency] = n
		}
		assert.Equal(t, w.totals, totals, "seller %s totals", seller)
	}
}

// A batch with poison messages between good ones: the good ones count,
// each poison one is reported by its messageId and its reason logged.
func TestPoisonMessagesAreReportedAndLoggedTheRestCounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seller := uuid.New()
	good1, good2 := newProduct(t, seller, eur(t, 100)), newProduct(t, seller, eur(t, 250))
	envelope := func(detail string) string {
		b, err := eventbus.Envelope(source, "ProductCreated", []byte(detail), good1.event.Time)
		require.NoError(t, err)
		return string(b)
	}
	cloudEvent := func(id, data string) string {
		return `{"specversion":"1.0","id":"` + id + `","source":"` + source + `","type":"ProductCreated","subject":"` + good1.event.Subject +
			`","time":"2026-12-01T10:00:00Z","datacontenttype":"application/json","data":` + data + `}`
	}
	data := func(price, currency string) string {
		return `{"id":"` + good1.event.Subject + `","name":"W","price_cents":` + price + `,"currency":"` + currency +
			`","seller_id":"` + seller.String() + `","created_at":"2026-12-01T10:00:00.000Z"}`
	}
	poison := map[string]struct{ body, reason string }{
		"bad-json":      {`{"detail-type":`, "not an EventBridge event"},
		"float-price":   {envelope(cloudEvent(uuid.NewString(), data("9.99", "EUR"))), "data is not a product"},
		"unknown-cur":   {envelope(cloudEvent(uuid.NewString(), data("999", "XXX"))), "unsupported currency"},
		"no-id":         {envelope(strings.Replace(cloudEvent("x", data("999", "EUR")), `"id":"x",`, "", 1)), "empty id"},
		"other-type":    {strings.Replace(envelope(cloudEvent(uuid.NewString(), data("999", "EUR"))), `"detail-type":"ProductCreated"`, `"detail-type":"ProductDeleted"`, 1), "detail-type"},
		"string-price":  {envelope(cloudEvent(uuid.NewString(), data(`"999"`, "EUR"))), "data is not a product"},
		"zero-price":    {envelope(cloudEvent(uuid.NewString(), data("0", "EUR"))), "price_cents"},
		"foreign-event": {strings.ReplaceAll(envelope(cloudEvent(uuid.NewString(), data("999", "EUR"))), source, "someone.else"), "this consumer counts"},
	}
	msgs := []events.SQSMessage{good1.message(t, 1)}
	for id, p := range poison {
		msgs = append(msgs, eventbus.Message(id, p.body, 1))
	}
	msgs = append(msgs, good2.message(t, 1))
	resp := f.handle(t, msgs...)

	assert.ElementsMatch(t, keys(poison), failedIDs(resp), "exactly the poison messages are reported")
	logs := f.logs.String()
	for id, p := range poison {
		line := lineWith(logs, `"message_id":"`+id+`"`)
		assert.Contains(t, line, "poison message", id)
		assert.Contains(t, line, p.reason, id)
	}
	got, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(2), got.ProductCount)
	assert.Equal(t, listed(eur(t, 350)), got.Listed)
	assert.Contains(t, logs, `"applied":2,"duplicate":0,"poison":8,"failed":0`)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func lineWith(logs, s string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// failing answers TransactWriteItems that carry one event id with a 500,
// without forwarding them: that record's transaction fails, the others go
// through.
type failing struct{ eventID string }

func (fl failing) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") && req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(strings.NewReader(string(b)))
		if strings.Contains(string(b), fl.eventID) {
			body := `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected"}`
			return &http.Response{
				StatusCode: 500, Status: "500 Internal Server Error", Request: req,
				Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"},
					"X-Amz-Crc32": {strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)}},
				Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
			}, nil
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// One record's transaction fails: only its messageId is reported, and its
// redelivery counts it once.
func TestAFailedTransactionReportsOnlyItsMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seller := uuid.New()
	a, b, c := newProduct(t, seller, eur(t, 1)), newProduct(t, seller, eur(t, 10)), newProduct(t, seller, eur(t, 100))

	client, _ := f.env.NewClient(t, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: failing{eventID: b.event.ID}}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 2 })
	})
	cfg := config.SellerStats{SellersTable: f.env.Tables.Sellers, EventSource: source,
		Idempotency: config.Idempotency{Table: f.env.Tables.Idempotency, Retention: 24 * 3600e9, Mode: config.ModeTransact}}
	flaky, err := sellerstats.New(client, cfg, app.Runtime{Out: f.logs})
	require.NoError(t, err)
	resp, err := flaky.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{a.message(t, 1), b.message(t, 1), c.message(t, 1)}})
	require.NoError(t, err)
	assert.Equal(t, []string{"m-" + b.event.ID}, failedIDs(resp))
	assert.Contains(t, lineWith(f.logs.String(), `"message_id":"m-`+b.event.ID+`"`), "the queue redelivers it")
	_, sum := f.batchTotals(t)
	assert.Equal(t, map[string]float64{"Records": 3, "Applied": 2, "Duplicate": 0, "Poison": 0, "Failed": 1,
		"DynamoDBCalls": sum["DynamoDBCalls"]}, sum)
	assert.GreaterOrEqual(t, sum["DynamoDBCalls"], 4.0, "the failed record's call was retried")

	// The queue redelivers b (and, say, a again): b counts once, a does not recount.
	resp = f.handle(t, b.message(t, 2), a.message(t, 2))
	assert.Empty(t, failedIDs(resp))
	got, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(3), got.ProductCount)
	assert.Equal(t, listed(eur(t, 111)), got.Listed)
}

// A total that would pass what a shard holds (38 digits, DynamoDB's
// largest integer) is an error for that event, never a wrap or a
// ValidationException that would fail its batch: an event is refused
// only when no shard of its seller can take it. On a backend with exact
// numbers (DynamoDB, moto: make e2e, the embedded store) the test uses
// the real cap; on one that keeps numbers as float64 the cap is lowered
// to one it compares exactly.
func TestATotalThatWouldOverflowIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	shardCap := new(big.Int).Set(sellers.MaxShardValue)
	if !f.env.ExactNumbers {
		shardCap = big.NewInt(100_000)
		sellersqs.SetShardCap(f.consumer, shardCap.Int64())
		t.Logf("%s backend keeps numbers as float64: overflow tested at a shard cap of %d, not 38 digits", f.env.Kind, shardCap)
	}
	nearly := new(big.Int).Sub(shardCap, big.NewInt(50))
	seller := uuid.New()
	// Every shard 50 cents short of its cap.
	for shard := range sellers.Shards {
		putShard(t, f, seller, shard, "1", nearly.String())
	}
	over, fits := newProduct(t, seller, eur(t, 51)), newProduct(t, seller, eur(t, 50))
	resp := f.handle(t, over.message(t, 1), fits.message(t, 1))
	assert.Equal(t, []string{"m-" + over.event.ID}, failedIDs(resp))
	line := lineWith(f.logs.String(), `"message_id":"m-`+over.event.ID+`"`)
	assert.Contains(t, line, "poison message")
	assert.Contains(t, line, "would overflow")
	_, sum := f.batchTotals(t)
	assert.Equal(t, 1.0, sum["Poison"], "bound for the dead-letter queue")
	assert.Equal(t, 1.0, sum["Applied"])
	got, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(sellers.Shards+1), got.ProductCount)
	want := new(big.Int).Mul(nearly, big.NewInt(sellers.Shards))
	require.Len(t, got.Listed, 1)
	assert.Equal(t, want.Add(want, big.NewInt(50)).String(), got.Listed[0].Cents.String(), "the last cent that fits")
	// The refused event left no record: its redelivery is refused again.
	resp = f.handle(t, over.message(t, 2))
	assert.Equal(t, []string{"m-" + over.event.ID}, failedIDs(resp))
}

// A seller whose shards the consumer filled to its old cap (int64's
// limit over 10 each: ten events at 922337203685477580, issue 35's
// freeze) keeps counting: its next events are counted, and its
// statistics, past int64 in all, read back exact.
func TestASellerFilledToTheOldInt64CapKeepsCounting(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seller := uuid.New()
	const oldCap = "922337203685477580" // math.MaxInt64 / 10
	for shard := range sellers.Shards {
		putShard(t, f, seller, shard, "1", oldCap)
	}
	a, b := newProduct(t, seller, eur(t, 999)), newProduct(t, seller, eur(t, 1))
	assert.Empty(t, failedIDs(f.handle(t, a.message(t, 1))))
	assert.Empty(t, failedIDs(f.handle(t, b.message(t, 1))))
	got, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(sellers.Shards+2), got.ProductCount)
	require.Len(t, got.Listed, 1)
	assert.Equal(t, "9223372036854776800", got.Listed[0].Cents.String(), "ten times the old cap, plus 1000")
}

// A shard that cannot take an event is not the seller's last word: the
// event goes to one that can, whichever shard its batch met first.
func TestAFullShardPassesItsEventsToOneWithRoom(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const shardCap = int64(100_000)
	seller := uuid.New()
	const free = 3
	for shard := range sellers.Shards {
		if shard != free {
			putShard(t, f, seller, shard, "1", strconv.FormatInt(shardCap-50, 10))
		}
	}
	// Three batches, each by another environment (whose home is a full
	// shard 9 times in 10).
	want := (sellers.Shards - 1) * (shardCap - 50)
	for b := range 3 {
		var msgs []events.SQSMessage
		for i := range 2 {
			cents := int64(51 + 2*b + i)
			want += cents
			msgs = append(msgs, newProduct(t, seller, eur(t, cents)).message(t, 1))
		}
		env := f.newConsumer(t, 0)
		sellersqs.SetShardCap(env, shardCap)
		resp, err := env.Handle(context.Background(), events.SQSEvent{Records: msgs})
		require.NoError(t, err)
		assert.Empty(t, failedIDs(resp), "shard %d has room for all of them", free)
	}
	got, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(sellers.Shards-1+6), got.ProductCount)
	assert.Equal(t, listed(eur(t, want)), got.Listed)
}

// putShard writes one shard of a seller's statistics as the counter
// would have: count products, cents in EUR.
func putShard(t *testing.T, f *fixture, seller uuid.UUID, shard int, count, cents string) {
	t.Helper()
	_, err := f.env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(f.env.Tables.Sellers),
		Item: map[string]types.AttributeValue{
			"seller_id": &types.AttributeValueMemberS{Value: seller.String()}, "shard": &types.AttributeValueMemberN{Value: strconv.Itoa(shard)},
			"product_count": &types.AttributeValueMemberN{Value: count},
			"cents_EUR":     &types.AttributeValueMemberN{Value: cents},
			"updated_at":    &types.AttributeValueMemberS{Value: "2026-12-01T00:00:00Z"},
		},
	})
	require.NoError(t, err)
}

// One event, one TransactWriteItems: the count, the total and the event's
// record in one call; its duplicate is that call cancelled.
func TestCallsPerEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := newProduct(t, uuid.New(), eur(t, 999))
	f.env.Counter.Reset()
	f.handle(t, c.message(t, 1))
	t.Logf("first delivery: %s", f.env.Counter)
	assert.Equal(t, map[string]int{"TransactWriteItems": 1}, f.env.Counter.Snapshot())
	f.env.Counter.Reset()
	f.handle(t, c.message(t, 2))
	t.Logf("duplicate: %s", f.env.Counter)
	assert.Equal(t, 1, f.env.Counter.Get("TransactWriteItems"))
	if f.env.TransactPutReturnsOldItem {
		assert.Zero(t, f.env.Counter.Get("GetItem"))
	}
	ms := f.logs.Metrics(t)
	require.Len(t, ms, 2)
	assert.EqualValues(t, 1, ms[0]["DynamoDBCalls"], "the first delivery's line")
	assert.EqualValues(t, f.env.Counter.Total(), ms[1]["DynamoDBCalls"], "the duplicate's line counts what the counter saw")
	assert.EqualValues(t, 1, ms[1]["Duplicate"])
}

// The same event id with another product is never counted.
func TestAnEventIDReusedForAnotherProductIsPoison(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seller := uuid.New()
	a, b := newProduct(t, seller, eur(t, 5)), newProduct(t, seller, eur(t, 7))
	b.event.ID = a.event.ID
	resp := f.handle(t, a.message(t, 1), b.message(t, 1))
	require.Len(t, resp.BatchItemFailures, 1)
	assert.Contains(t, lineWith(f.logs.String(), "poison message"), "different payload")
	got, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(1), got.ProductCount)
}

func TestReaderBeforeTheFirstProduct(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.reader.Get(context.Background(), uuid.New())
	assert.True(t, errors.Is(err, sellers.ErrNotFound))
}

// hanging answers no DynamoDB request until the request's context ends.
type hanging struct{}

func (hanging) RoundTrip(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// A store that hangs never makes the consumer overrun its invocation: it
// answers a margin before the deadline, the message it was on and the
// untried rest reported failed, so only they come back, and the
// invocation itself succeeds (no whole-batch redelivery). In fake time
// (testing/synctest), with a client whose every call waits for its
// context to end: when the answer comes is the consumer's own deadline
// arithmetic, whatever the machine's load.
func TestAHungStoreAnswersBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		logs := &logbuf.Buffer{}
		calls := ddb.NewCounter()
		client, err := app.Client(config.AWS{Region: "us-east-1", AccessKeyID: "local", SecretAccessKey: "local", Endpoint: "http://hung.invalid"},
			nil, dynamodb.NewFromConfig, calls.Option, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: hanging{}} })
		require.NoError(t, err)
		cfg := config.SellerStats{SellersTable: "sellers", EventSource: source,
			Idempotency: config.Idempotency{Table: "idempotency", Retention: time.Hour, Mode: config.ModeTransact}}
		hung, err := sellerstats.New(client, cfg, app.Runtime{Out: logs})
		require.NoError(t, err)
		seller := uuid.New()
		var msgs []events.SQSMessage
		var ids []string
		for i := range 10 {
			m := newProduct(t, seller, eur(t, int64(i+1))).message(t, 1)
			msgs = append(msgs, m)
			ids = append(ids, m.MessageId)
		}
		const budget = 2 * time.Second
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		start := time.Now()
		resp, err := hung.Handle(ctx, events.SQSEvent{Records: msgs})
		took := time.Since(start)
		require.NoError(t, err)
		t.Logf("10 messages on a hung store: answered %v into a %v invocation, %d requests sent", took, budget, calls.Total())
		assert.GreaterOrEqual(t, took, budget-sellersqs.DeadlineMargin, "the work had until its own deadline")
		assert.LessOrEqual(t, took, budget-sellersqs.DeadlineMargin/2, "answered inside the invocation, with half a margin to spare")
		assert.NoError(t, ctx.Err(), "the invocation's deadline has not passed")
		assert.Positive(t, calls.Total(), "the store was called")
		assert.Equal(t, ids, failedIDs(resp), "every message comes back, none is lost")
		assert.Contains(t, logs.String(), "out of time; the queue redelivers the rest of the batch")
		// The batch's metrics line, read without emf.Validate: its
		// timestamp is the bubble's clock, in 2000, before the epoch
		// milliseconds CloudWatch takes.
		var batch []map[string]any
		for _, l := range logs.Lines() {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["_aws"] != nil {
				batch = append(batch, m)
			}
		}
		require.Len(t, batch, 1, "one metrics line per batch")
		assert.Equal(t, 10.0, batch[0]["Failed"])
		assert.Zero(t, batch[0]["Applied"].(float64)+batch[0]["Poison"].(float64))
	})
}

// BenchmarkConsumer is the handler's cost per record, batches of 10 fresh
// events, against the backend of DYNAMODB_TEST_BACKEND (make bench: a
// store in another process).
func BenchmarkConsumer(b *testing.B) {
	f := newFixture(b)
	seller := uuid.New()
	var batch []events.SQSMessage
	records := 0
	b.ReportAllocs()
	for b.Loop() {
		batch = batch[:0]
		for range 10 {
			batch = append(batch, newProduct(b, seller, eur(b, 100)).message(b, 1))
		}
		resp, err := f.consumer.Handle(context.Background(), events.SQSEvent{Records: batch})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			b.Fatalf("batch failed: %v %v", err, resp.BatchItemFailures)
		}
		records += len(batch)
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(f.env.Counter.Total())/float64(records), "ddb-calls/record")
	got, err := f.reader.Get(context.Background(), seller)
	if err != nil || got.ProductCount != sellers.NumberOf(uint64(records)) {
		b.Fatal(fmt.Errorf("count %s of %d: %v", got.ProductCount, records, err))
	}
}
