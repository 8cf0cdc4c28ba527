package sellersqs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// txLatency keeps each transaction holding its items a few milliseconds,
// as a DynamoDB transaction does, so concurrent batches on one seller's
// item meet each other as they would on AWS.
const txLatency = 3 * time.Millisecond

// hotSellerFigures is what one run on a single seller cost.
type hotSellerFigures struct {
	Events, Deliveries int
	queueRun
	Calls                 int
	Ops                   string // the calls by operation
	ConflictCancellations int    // transactions cancelled with TransactionConflict
	ConflictExceptions    int    // single-item writes refused by a running transaction
	conflictsOn
}

func (h hotSellerFigures) callsPerEvent() float64 { return float64(h.Calls) / float64(h.Events) }

func (h hotSellerFigures) conflictsPerEvent() float64 {
	return float64(h.ConflictCancellations+h.ConflictExceptions) / float64(h.Events)
}

func (h hotSellerFigures) perEvent(n int) float64 { return float64(n) / float64(h.Events) }

// conflictsOn counts the consumers' cancelled transactions by cause:
// another transaction held one of the seller's shards (Shards) or an
// event's record (OnRecord: a duplicate of the event in another batch
// was committing it), or an event's record was there already
// (Duplicates: committed by another environment, whose cache this one
// does not share; the rest of the batch then commits in one more
// transaction). A transaction with several causes counts in each.
type conflictsOn struct {
	Shards, OnRecord, Duplicates int
}

// conflictWatch is a DynamoDB HTTP client that reads the cancellation
// reasons of TransactWriteItems into a conflictsOn.
type conflictWatch struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
	tables tables.Names
	mu     sync.Mutex
	seen   conflictsOn
}

func (w *conflictWatch) Do(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") || req.Body == nil {
		return w.next.Do(req)
	}
	in, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(in))
	resp, err := w.next.Do(req)
	if err != nil || resp.StatusCode == http.StatusOK {
		return resp, err
	}
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	var tx struct {
		TransactItems []map[string]struct{ TableName string }
	}
	var cancelled struct {
		CancellationReasons []struct{ Code string }
	}
	if json.Unmarshal(in, &tx) != nil || json.Unmarshal(out, &cancelled) != nil {
		return resp, nil
	}
	var shard, record, duplicate bool
	for i, r := range cancelled.CancellationReasons {
		if i >= len(tx.TransactItems) {
			continue
		}
		for _, op := range tx.TransactItems[i] {
			switch {
			case r.Code == "TransactionConflict":
				shard = shard || op.TableName == w.tables.Sellers
				record = record || op.TableName == w.tables.Idempotency
			case r.Code == "ConditionalCheckFailed":
				duplicate = duplicate || op.TableName == w.tables.Idempotency
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if shard {
		w.seen.Shards++
	}
	if record {
		w.seen.OnRecord++
	}
	if duplicate {
		w.seen.Duplicates++
	}
	return resp, nil
}

// runHotSeller sends eventsN events of one seller, each delivered 1 to 2
// times, shuffled, through a queue drained by workers concurrent
// invocations taking batches of batch, with transaction isolation modelled
// (on the embedded store); deliveries, if given, fixes each event's
// number of deliveries. It checks the seller's count and total against
// the truth and returns what the run cost.
func runHotSeller(t testing.TB, f *fixture, seed uint64, eventsN, workers, batch int, deliveries ...int) hotSellerFigures {
	t.Helper()
	// One consumer per environment, each with the template's default
	// cache (IdempotencyCacheSize): an environment replays from memory
	// only what it committed or replayed itself. They share a client
	// that counts their calls and tells their conflicts apart.
	watch := &conflictWatch{tables: f.env.Tables}
	client, calls := f.env.NewClient(t, func(o *dynamodb.Options) {
		watch.next = o.HTTPClient
		o.HTTPClient = watch
	})
	consumers := make([]*sellersqs.Consumer, workers)
	for i := range consumers {
		consumers[i] = f.newConsumerOn(t, client, 1000)
	}
	if f.env.Store != nil {
		f.env.Store.SetTransactionLatency(txLatency)
	}
	rng := rand.New(rand.NewPCG(seed, 17))
	seller := uuid.New()
	var (
		msgs  []events.SQSMessage
		total int64
	)
	for range eventsN {
		price, err := money.New(1+rng.Int64N(100_000), "EUR")
		require.NoError(t, err)
		c := newProduct(t, seller, price)
		total += price.Cents()
		times := 1 + rng.IntN(2)
		if len(deliveries) > 0 {
			times = deliveries[0]
		}
		for r := range times {
			msgs = append(msgs, c.delivery(t, r+1))
		}
	}
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	var before hotSellerFigures
	if f.env.Store != nil {
		s := f.env.Store.Stats()
		before.ConflictCancellations, before.ConflictExceptions = s.ConflictCancellations, s.ConflictExceptions
	}
	run := f.drainWith(t, msgs, consumers, rng, func(*rand.Rand) int { return batch })
	got := hotSellerFigures{Events: eventsN, Deliveries: len(msgs), queueRun: run, Calls: calls.Total(), Ops: calls.String(), conflictsOn: watch.seen}
	if f.env.Store != nil {
		s := f.env.Store.Stats()
		got.ConflictCancellations = s.ConflictCancellations - before.ConflictCancellations
		got.ConflictExceptions = s.ConflictExceptions - before.ConflictExceptions
	}

	stats, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(uint64(eventsN)), stats.ProductCount, "the seller's count is the number of distinct events")
	assert.Equal(t, listed(mustEUR(t, total)), stats.Listed, "the seller's total is the sum of the distinct events' prices")
	return got
}

func mustEUR(t testing.TB, cents int64) money.Money { return eur(t, cents) }

// TestAHotSellerCountsOnceWithoutDeadLetters: 400 events for one seller,
// each delivered 1 to 2 times, in batches of 10, by 6 concurrent
// invocations, with DynamoDB's transaction isolation modelled: every
// batch's transaction updates one of the seller's shards. The seller's
// count and total equal the truth (runHotSeller checks them) and no
// valid message is dead-lettered after its 5 receives, however the
// conflicts fall.
//
// What the run costs (calls and conflicts per event) is a count that
// timing decides: transactions stretch when other work shares the CPUs,
// and meet more often. It is logged here and reported by make
// sweep-sellers and BenchmarkHotSeller, never asserted.
func TestAHotSellerCountsOnceWithoutDeadLetters(t *testing.T) {
	f := newFixture(t)
	h := runHotSeller(t, f, 400, 400, 6, 10)
	t.Logf("hot seller: events=%d deliveries=%d batches=%d handled=%d redelivered=%d dead-lettered=%d calls=%d (%.2f per event: %s) conflicts: %d cancellations + %d exceptions (%.2f per event; on a shard %.2f, on a record %.2f); duplicates met %.2f per event",
		h.Events, h.Deliveries, h.Batches, h.Handled, h.Redelivered, len(h.DeadLettered), h.Calls, h.callsPerEvent(), h.Ops,
		h.ConflictCancellations, h.ConflictExceptions, h.conflictsPerEvent(), h.perEvent(h.Shards), h.perEvent(h.OnRecord), h.perEvent(h.Duplicates))
	if line := lineWith(f.logs.String(), "message failed"); line != "" {
		t.Logf("a redelivery's reason: %s", line)
	}
	assert.Empty(t, h.DeadLettered, "no valid message ends in the dead-letter queue")
}

// TestAHotSellerAtTheTemplatesConcurrency: the same seller at the
// mapping's MaximumConcurrency (template.yaml, 2 environments), with
// batches of mixed deliveries and with full batches of new events: the
// truth holds and nothing is dead-lettered. Its cost is logged (make
// sweep-sellers and BenchmarkHotSeller report it).
func TestAHotSellerAtTheTemplatesConcurrency(t *testing.T) {
	f := newFixture(t)
	h := runHotSeller(t, f, 2, 400, templateConcurrency, 10)
	t.Logf("hot seller at %d environments: redelivered=%d calls=%d (%.2f per event) conflicts %.2f per event (on a shard %.2f, on a record %.2f); duplicates met %.2f per event",
		templateConcurrency, h.Redelivered, h.Calls, h.callsPerEvent(), h.conflictsPerEvent(), h.perEvent(h.Shards), h.perEvent(h.OnRecord), h.perEvent(h.Duplicates))
	assert.Empty(t, h.DeadLettered)

	full := runHotSeller(t, f, 3, 200, templateConcurrency, 10, 1)
	t.Logf("full batches of new events: calls=%d (%.2f per event) conflicts %.2f per event", full.Calls, full.callsPerEvent(), full.conflictsPerEvent())
	assert.Empty(t, full.DeadLettered)
}

// BenchmarkHotSeller reports what one hot seller costs at 2 (the
// template's concurrency) and 6 concurrent consumer environments: 400
// events, 1 to 2 deliveries each, batches of 10, transactions held
// txLatency on the embedded store. Each iteration is a whole run on a
// fresh store; the figures are per event.
func BenchmarkHotSeller(b *testing.B) {
	for _, workers := range []int{templateConcurrency, 6} {
		b.Run(fmt.Sprintf("environments=%d", workers), func(b *testing.B) {
			var calls, conflicts, events, redelivered int
			seed := uint64(0)
			for b.Loop() {
				f := newFixture(b)
				seed++
				h := runHotSeller(b, f, seed, 400, workers, 10)
				if len(h.DeadLettered) > 0 {
					b.Fatalf("%d messages dead-lettered", len(h.DeadLettered))
				}
				calls, events, redelivered = calls+h.Calls, events+h.Events, redelivered+h.Redelivered
				conflicts += h.ConflictCancellations + h.ConflictExceptions
			}
			b.ReportMetric(float64(calls)/float64(events), "ddb-calls/event")
			b.ReportMetric(float64(conflicts)/float64(events), "conflicts/event")
			b.ReportMetric(float64(redelivered)/float64(events), "redeliveries/event")
		})
	}
}

// templateConcurrency is the sellerstats mapping's
// ScalingConfig.MaximumConcurrency in template.yaml.
const templateConcurrency = 2
