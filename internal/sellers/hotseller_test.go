package sellers_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/sellers"
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
	ConflictCancellations int // transactions cancelled with TransactionConflict
	ConflictExceptions    int // single-item writes refused by a running transaction
}

func (h hotSellerFigures) callsPerEvent() float64 { return float64(h.Calls) / float64(h.Events) }

func (h hotSellerFigures) conflictsPerEvent() float64 {
	return float64(h.ConflictCancellations+h.ConflictExceptions) / float64(h.Events)
}

// runHotSeller sends eventsN events of one seller, each delivered 1 to 2
// times, shuffled, through a queue drained by workers concurrent
// invocations taking batches of batch, with transaction isolation modelled
// (on the embedded store); deliveries, if given, fixes each event's
// number of deliveries. It checks the seller's count and total against
// the truth and returns what the run cost.
func runHotSeller(t *testing.T, f *fixture, seed uint64, eventsN, workers, batch int, deliveries ...int) hotSellerFigures {
	t.Helper()
	// One consumer per environment, each with the template's default
	// cache (IdempotencyCacheSize): an environment replays from memory
	// only what it committed or replayed itself.
	consumers := make([]*sellers.Consumer, workers)
	for i := range consumers {
		consumers[i] = f.newConsumer(t, 1000)
	}
	t.Helper()
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
	f.env.Counter.Reset()
	var before hotSellerFigures
	if f.env.Store != nil {
		s := f.env.Store.Stats()
		before.ConflictCancellations, before.ConflictExceptions = s.ConflictCancellations, s.ConflictExceptions
	}
	run := f.drainWith(t, msgs, consumers, rng, func(*rand.Rand) int { return batch })
	got := hotSellerFigures{Events: eventsN, Deliveries: len(msgs), queueRun: run, Calls: f.env.Counter.Total()}
	if f.env.Store != nil {
		s := f.env.Store.Stats()
		got.ConflictCancellations = s.ConflictCancellations - before.ConflictCancellations
		got.ConflictExceptions = s.ConflictExceptions - before.ConflictExceptions
	}

	stats, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, int64(eventsN), stats.ProductCount, "the seller's count is the number of distinct events")
	assert.Equal(t, []money.Money{mustEUR(t, total)}, stats.Listed, "the seller's total is the sum of the distinct events' prices")
	return got
}

func mustEUR(t testing.TB, cents int64) money.Money { return eur(t, cents) }

// TestAHotSellerCountsOnceWithoutDeadLetters: 400 events for one seller,
// each delivered 1 to 2 times, in batches of 10, by 6 concurrent
// invocations, with DynamoDB's transaction isolation modelled: every
// batch's transaction updates the same seller item. The seller's count and
// total equal the truth, and no valid message is dead-lettered after its 5
// receives, however the conflicts fall.
//
// Not parallel, like the next test: its cost is about its own load.
func TestAHotSellerCountsOnceWithoutDeadLetters(t *testing.T) {
	f := newFixture(t)
	h := runHotSeller(t, f, 400, 400, 6, 10)
	t.Logf("hot seller: events=%d deliveries=%d batches=%d handled=%d redelivered=%d dead-lettered=%d calls=%d (%.2f per event: %s) conflicts: %d cancellations + %d exceptions (%.2f per event)",
		h.Events, h.Deliveries, h.Batches, h.Handled, h.Redelivered, len(h.DeadLettered), h.Calls, h.callsPerEvent(), f.env.Counter,
		h.ConflictCancellations, h.ConflictExceptions, h.conflictsPerEvent())
	if line := lineWith(f.logs.String(), "message failed"); line != "" {
		t.Logf("a redelivery's reason: %s", line)
	}
	assert.Empty(t, h.DeadLettered, "no valid message ends in the dead-letter queue")
	// One call per batch, a second when it held duplicates, and the
	// conflicts of six environments on one item: 0.45 to 0.55 alone, up
	// to 0.8 while other packages' tests share the CPUs (the per-event
	// consumer paid 5.08).
	assert.LessOrEqual(t, h.callsPerEvent(), 1.0, "calls per event with six environments on one seller")
}

// TestAHotSellerAtTheTemplatesConcurrency: the same seller at the
// mapping's MaximumConcurrency (template.yaml, 2 environments): at most
// 0.35 DynamoDB calls per event, and about 0.1 when the batches are full
// of new events.
//
// Not parallel: the package's other tests would share its two CPUs and
// stretch its transactions, and the budget is about this load alone.
func TestAHotSellerAtTheTemplatesConcurrency(t *testing.T) {
	f := newFixture(t)
	h := runHotSeller(t, f, 2, 400, templateConcurrency, 10)
	t.Logf("hot seller at %d environments: redelivered=%d calls=%d (%.2f per event) conflicts %.2f per event",
		templateConcurrency, h.Redelivered, h.Calls, h.callsPerEvent(), h.conflictsPerEvent())
	assert.Empty(t, h.DeadLettered)
	assert.LessOrEqual(t, h.callsPerEvent(), 0.35)

	full := runHotSeller(t, f, 3, 200, templateConcurrency, 10, 1)
	t.Logf("full batches of new events: calls=%d (%.2f per event) conflicts %.2f per event", full.Calls, full.callsPerEvent(), full.conflictsPerEvent())
	assert.LessOrEqual(t, full.callsPerEvent(), 0.2)
}

// templateConcurrency is the sellerstats mapping's
// ScalingConfig.MaximumConcurrency in template.yaml.
const templateConcurrency = 2
