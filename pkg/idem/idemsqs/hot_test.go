package idemsqs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemshard"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// A hot aggregate: every message of a queue credits ONE account, and
// several consumer instances (Lambda execution environments, each with a
// store of its own) drain the queue at once. Every transaction that
// applies a batch updates that one item, and DynamoDB cancels a
// transaction that meets the item while another holds it
// (TransactionConflict). The strict test store models that, with each
// transaction holding its items for a latency (a DynamoDB transaction
// holds them for milliseconds: a few for a small one, tens under load).

// hotRun is one drain of the queue, as the consumers saw it.
type hotRun struct {
	events, deliveries int
	receives           int // messages handed to a consumer, redeliveries included
	redelivered        int // messages reported failed and put back
	dead               int // valid messages dead-lettered after 5 receives
	calls              int // DynamoDB requests, SDK retries included
	transactions       int // TransactWriteItems requests
	conflicts          int // transactions cancelled with TransactionConflict
}

func (h hotRun) String() string {
	return fmt.Sprintf("events=%d deliveries=%d receives=%d redelivered=%d dead-lettered=%d calls=%d (%.2f per event, %d transactions) conflicts=%d",
		h.events, h.deliveries, h.receives, h.redelivered, h.dead, h.calls, float64(h.calls)/float64(h.events), h.transactions, h.conflicts)
}

// hotConsumer handles one batch on one instance's store, and answers the
// runtime as a handler would.
type hotConsumer func(ctx context.Context, store *idem.Store, ev events.SQSEvent) events.SQSEventResponse

// deposits is the deposits' consumer on store (New fails only without a
// store, an operation or a decode function).
func deposits(store *idem.Store) *idemsqs.Consumer[deposit] {
	c, err := idemsqs.New(store, "deposit", decode)
	if err != nil {
		panic(err)
	}
	return c
}

// batchConsumer is Consumer.Transact on the whole batch: one transaction
// applies its new messages with one update of the account.
func batchConsumer(ctx context.Context, store *idem.Store, ev events.SQSEvent) events.SQSEventResponse {
	resp, _ := deposits(store).Transact(ctx, ev, shared("accounts"))
	return resp
}

// shardedConsumer is batchConsumer with the account spread over n items
// ("hot#0" to "hot#<n-1>"): each instance has its own idemshard.Shards,
// as each Lambda environment would, and each transaction credits the
// shard its batch holds, another after a conflict on it.
func shardedConsumer(n int) func() hotConsumer {
	return func() hotConsumer {
		shards := idemshard.New(n)
		return func(ctx context.Context, store *idem.Store, ev events.SQSEvent) events.SQSEventResponse {
			batch := shards.Batch()
			defer batch.Done()
			resp, _ := deposits(store).Transact(ctx, ev, func(ds []deposit, contended []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
				suffix := "#" + strconv.Itoa(batch.Shard(len(contended) > 0))
				on := make([]deposit, len(ds))
				for i, d := range ds {
					on[i] = deposit{Account: d.Account + suffix, Cents: d.Cents}
				}
				return shared("accounts")(on, nil)
			})

			return resp
		}
	}
}

// each gives every instance the same consumer.
func each(c hotConsumer) func() hotConsumer { return func() hotConsumer { return c } }

// perMessageConsumer applies each message in a transaction of its own,
// one after another: the consumer the issue compares against.
func perMessageConsumer(ctx context.Context, store *idem.Store, ev events.SQSEvent) events.SQSEventResponse {
	out := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, m := range ev.Records {
		resp, _ := deposits(store).Transact(ctx, events.SQSEvent{Records: []events.SQSMessage{m}}, shared("accounts"))
		out.BatchItemFailures = append(out.BatchItemFailures, resp.BatchItemFailures...)
	}
	return out
}

// runHot sends eventsN deposits to one account, a tenth of them delivered
// twice, shuffled, through a queue that instances consumers drain in
// batches of 10 (a failed message comes back until its fifth receive),
// each transaction holding its items latency.
// Each instance has its own store (opts) and consumer (newConsumer). It checks the
// truths: the account's total and count are those of the distinct
// events, and every delivery of an applied event is acknowledged or
// comes back. It returns what the run cost.
func runHot(tb testing.TB, seed uint64, eventsN, instances int, latency time.Duration, newConsumer func() hotConsumer, opts ...idem.Option) hotRun {
	tb.Helper()
	srv := idemtest.New(tb, idemtest.WithTransactionLatency(latency))
	ctx := context.Background()
	db := srv.Client()
	if err := idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.CreateTable(ctx, idemtable.Input("accounts", idemtable.Layout{})); err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	var (
		msgs  []events.SQSMessage
		total int64
	)
	for i := range eventsN {
		cents := 1 + rng.Int64N(10_000)
		total += cents
		times := 1
		if rng.IntN(10) == 0 {
			times = 2
		}
		for r := range times {
			msgs = append(msgs, message(fmt.Sprintf("m-%d-%d", i, r), fmt.Sprintf("ev-%d hot %d", i, cents)))
		}
	}
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	stores := make([]*idem.Store, instances)
	for i := range stores {
		s, err := idem.NewStore(srv.Client(), "idempotency", opts...)
		if err != nil {
			tb.Fatal(err)
		}
		stores[i] = s
	}
	before := srv.Stats()
	srv.ResetCalls()
	q := newQueue(msgs)
	var wg sync.WaitGroup
	for _, store := range stores {
		consume := newConsumer()
		wg.Go(func() {
			for {
				batch := q.take(10)
				if batch == nil {
					return
				}
				// A Lambda invocation's deadline.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				resp := consume(ctx, store, events.SQSEvent{Records: batch})
				cancel()
				q.settle(batch, resp)
			}
		})
	}
	wg.Wait()

	run := hotRun{events: eventsN, deliveries: len(msgs), receives: q.receives, redelivered: q.redelivered, dead: len(q.dead)}
	for op, n := range srv.CallCounts() {
		run.calls += n
		if op == idemtest.OpTransactWriteItems {
			run.transactions = n
		}
	}
	run.conflicts = srv.Stats().ConflictCancellations - before.ConflictCancellations
	if run.dead == 0 {
		got, n := accountOf(tb, db, "hot")
		for shard := range 16 {
			sum, deposits := accountOf(tb, db, "hot#"+strconv.Itoa(shard))
			got, n = got+sum, n+deposits
		}
		if got != total || n != int64(eventsN) {
			tb.Errorf("account: total %d over %d deposits, want %d over %d: every event applied exactly once", got, n, total, eventsN)
		}
	}
	return run
}

// TestAHotAggregateLosesAndDoublesNothing: 8 consumer instances drain
// 200 deposits to one account in batches (idemsqs.Consumer.Transact), their
// transactions meeting each other on the account's item: every event is
// applied exactly once (runHot checks the total and the count) and no
// valid message is dead-lettered. What the run cost is logged;
// BenchmarkHotAggregate reports it.
func TestAHotAggregateLosesAndDoublesNothing(t *testing.T) {
	for name, c := range map[string]func() hotConsumer{"batches": each(batchConsumer), "batches on 8 shards": shardedConsumer(8)} {
		t.Run(name, func(t *testing.T) {
			h := runHot(t, 1, 200, 8, 3*time.Millisecond, c)
			t.Logf("hot aggregate, 8 instances, %s: %s", name, h)
			if h.dead != 0 {
				t.Errorf("%d valid messages dead-lettered", h.dead)
			}
		})
	}
}

// BenchmarkHotAggregate reports what one hot account costs 8 consumer
// instances draining 400 deposits (about 440 deliveries) in batches of
// 10, with transactions holding their items 3 ms and 10 ms: per event,
// the DynamoDB calls and the transactions that conflicts cancelled; per
// run, the messages redelivered and dead-lettered. Timing decides these
// counts (how long a transaction holds the item, which the CPUs the run
// shares stretch), so they are a benchmark's figures, never a test's
// assertions. docs/library.md ("A hot aggregate") has a table of them.
//
//	go test -race -run '^$' -bench HotAggregate -benchtime 3x ./idem/idemsqs/
func BenchmarkHotAggregate(b *testing.B) {
	consumers := []struct {
		name    string
		consume func() hotConsumer
	}{
		{"per-message", each(perMessageConsumer)},
		{"batch", each(batchConsumer)},
		{"batch-8-shards", shardedConsumer(8)},
	}
	for _, latency := range []time.Duration{3 * time.Millisecond, 10 * time.Millisecond} {
		for _, c := range consumers {
			b.Run(fmt.Sprintf("latency=%v/%s", latency, c.name), func(b *testing.B) {
				var sum hotRun
				runs := 0
				for b.Loop() {
					runs++
					h := runHot(b, uint64(runs), 400, 8, latency, c.consume)
					sum.events += h.events
					sum.calls += h.calls
					sum.conflicts += h.conflicts
					sum.redelivered += h.redelivered
					sum.dead += h.dead
					b.Logf("run %d: %s", runs, h)
				}
				b.ReportMetric(float64(sum.calls)/float64(sum.events), "calls/event")
				b.ReportMetric(float64(sum.conflicts)/float64(sum.events), "conflicts/event")
				b.ReportMetric(float64(sum.redelivered)/float64(runs), "redelivered/run")
				b.ReportMetric(float64(sum.dead)/float64(runs), "dead/run")
			})
		}
	}
}

// accountOf reads an account's total and deposit count.
func accountOf(tb testing.TB, db *dynamodb.Client, id string) (total, deposits int64) {
	tb.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("accounts"), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	get := func(name string) int64 {
		v, ok := out.Item[name].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return n
	}
	return get("total"), get("deposits")
}
