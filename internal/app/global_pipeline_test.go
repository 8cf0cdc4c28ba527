package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/getseller"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/relay"
	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// regionStack is one Region's deployment of the stack on a simulated
// global table: its functions, its relay fed from its own Region's stream
// of the outbox (every Region's writes, replicated ones included), and
// its own bus and queue (EventBridge and SQS are regional).
type regionStack struct {
	name                string
	client              *dynamodb.Client
	statsCfg            config.SellerStats
	create, seller      idemhttp.APIGatewayV2Handler
	relay               *relay.Handler
	relayOut            *logbuf.Buffer
	consumer            *sellersqs.Consumer
	consumerOut         *logbuf.Buffer
	stream              *idemtest.Stream
	mu                  sync.Mutex
	queue               []string // message bodies, EventBridge's events
	published, replicas int
}

func (r *regionStack) Publish(_ context.Context, evs []outbox.Event) (outbox.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		body, err := eventbus.EventEnvelope(e)
		if err != nil {
			return outbox.Result{}, err
		}
		r.queue = append(r.queue, string(body))
	}
	return outbox.Result{Published: len(evs)}, nil
}

// newGlobalStack deploys the stack to every Region of g (its Regions as
// REPLICA_REGIONS, in that order), the tables created once and replicated
// everywhere (without TTL on MRSC, which has none).
func newGlobalStack(t *testing.T, g *idemtest.Global, global config.Global) map[string]*regionStack {
	t.Helper()
	g.Start()
	t.Cleanup(g.Close)
	endpoints := map[string]string{}
	for _, r := range g.Regions() {
		endpoints[r] = g.Region(r).URL()
	}
	names := tables.Names{Products: "products", Idempotency: "idempotency", Outbox: "outbox", Sellers: "sellers", Callers: "callers"}
	ctx := t.Context()
	first, err := local.RegionClient(endpoints, global.Regions[0], nil)
	require.NoError(t, err)
	for _, tb := range tables.All() {
		require.NoError(t, tb.Create(ctx, first, names.Of(tb), tables.CreateOptions{SkipTTL: global.Kind == config.KindMRSC}))
	}
	require.NoError(t, access.Grant(ctx, first, names.Callers, principal, access.AnySeller))
	g.Settle()

	const source = "idemlambda.products"
	stacks := map[string]*regionStack{}
	for _, name := range global.Regions {
		client, err := local.RegionClient(endpoints, name, nil)
		require.NoError(t, err)
		aws := config.AWS{Region: name}
		common := config.Common{LogLevel: slog.LevelInfo}
		idem := config.Idempotency{Table: names.Idempotency, Retention: time.Hour, Mode: config.ModeReserve}
		discard := app.Runtime{Out: &logbuf.Buffer{}}
		r := &regionStack{name: name, relayOut: &logbuf.Buffer{}, consumerOut: &logbuf.Buffer{}, stream: g.Region(name).Stream(names.Outbox)}
		r.create, err = createproduct.New(client, config.CreateProduct{
			Common: common, AWS: aws, ProductsTable: names.Products, OutboxTable: names.Outbox, EventSource: source, Idempotency: idem,
			CallersTable: names.Callers, Limit: config.Limit{Creates: config.MaxCallerLimit, Window: time.Hour}, Global: global,
		}, discard)
		require.NoError(t, err)
		r.relay, err = outboxrelay.New(r, config.OutboxRelay{Common: common, AWS: aws, EventBusName: "bus", EventSource: source}, app.Runtime{Out: r.relayOut})
		require.NoError(t, err)
		consumerIdem := idem
		consumerIdem.Mode = config.ModeTransact
		consumerGlobal := global
		consumerGlobal.Home = "" // sellerstats reads no home: it claims the events that reach it, in its Region
		r.client = client
		r.statsCfg = config.SellerStats{
			Common: common, AWS: aws, SellersTable: names.Sellers, EventSource: source, Idempotency: consumerIdem, Global: consumerGlobal,
		}
		r.consumer, err = sellerstats.New(client, r.statsCfg, app.Runtime{Out: r.consumerOut})
		require.NoError(t, err)
		r.seller, err = getseller.New(client, config.GetSeller{Common: common, AWS: aws, SellersTable: names.Sellers}, discard)
		require.NoError(t, err)
		stacks[name] = r
	}
	return stacks
}

// post sends POST /products in the Region until it answers 201 (a
// duplicate in flight in another Region gets 409, a key whose home is
// busy 503: a client retries both with the same key).
func (r *regionStack) post(t *testing.T, key, body string) answer {
	t.Helper()
	for {
		resp, err := r.create(context.Background(), createRequest(key, body))
		require.NoError(t, err)
		if resp.StatusCode != 409 && resp.StatusCode != 503 {
			return answer{resp.StatusCode, resp.Body}
		}
		time.Sleep(time.Millisecond)
	}
}

// relayAll hands the relay every record of its Region's stream so far,
// in batches of up to 10, as the event source mapping does.
func (r *regionStack) relayAll(t *testing.T) {
	t.Helper()
	var records []events.DynamoDBEventRecord
	for _, rec := range r.stream.Read() {
		records = append(records, rec.DynamoDBEventRecord)
	}
	for batch := range slices.Chunk(records, 10) {
		resp, err := r.relay.Handle(context.Background(), events.DynamoDBEvent{Records: batch})
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures, "the relay published its batch")
	}
	for _, m := range r.relayOut.Metrics(t) {
		r.published += int(m["Published"].(float64))
		r.replicas += int(m["Replicas"].(float64))
	}
}

// consumeAll delivers the queue's messages to the consumer in batches of
// 10, every message twice (at least once), until none is left failed.
func (r *regionStack) consumeAll(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	queue := slices.Clone(r.queue)
	r.queue = nil
	r.mu.Unlock()
	ids := make([]string, len(queue))
	for i := range queue {
		ids[i] = uuid.NewString()
	}
	for round := 1; len(queue) > 0; round++ {
		require.LessOrEqual(t, round, 20, "messages still failing after 20 deliveries")
		var again []int
		for start := 0; start < len(queue); start += 10 {
			ev := events.SQSEvent{}
			for i := start; i < min(start+10, len(queue)); i++ {
				ev.Records = append(ev.Records, eventbus.Message(ids[i], queue[i], round))
			}
			for range 2 {
				resp, err := r.consumer.Handle(context.Background(), ev)
				require.NoError(t, err)
				for _, f := range resp.BatchItemFailures {
					again = append(again, slices.Index(ids, f.ItemIdentifier))
				}
			}
		}
		var next []string
		var nextIDs []string
		for _, i := range again {
			if !slices.Contains(nextIDs, ids[i]) {
				next, nextIDs = append(next, queue[i]), append(nextIDs, ids[i])
			}
		}
		queue, ids = next, nextIDs
	}
}

// counted is how many times this Region's consumer counted each event.
func (r *regionStack) counted(t *testing.T) map[string]int {
	t.Helper()
	p := &pipeline{t: t, consumerOut: r.consumerOut}
	c, _ := p.counted()
	return c
}

func (r *regionStack) getSeller(t *testing.T, id string) answer {
	t.Helper()
	p := &pipeline{t: t, seller: r.seller}
	return p.getSeller(id)
}

// TestEachProductCountedOnceAcrossRegions runs the stack in every Region
// of a simulated global table: products are created in both Regions, the
// same keys retried in the other Region, each Region's relay reads its
// own Region's stream (which shows every Region's outbox items) and
// publishes to its own bus, and each Region's consumer counts what
// reaches it. Replication is held back (a lag of an hour) while the
// relays and the consumers run, and settled only before the reads, so
// a consumer never sees another Region's idempotency records or shards
// while it counts: every 201 must still lead to exactly one counted
// event, and both Regions' GET /sellers/{id} must agree once replication
// has settled.
//
// It fails if a relay publishes other Regions' items (each event reaches
// two consumers, and both count it), or if two Regions' consumers add to
// one shard item (last writer wins loses one Region's counts).
func TestEachProductCountedOnceAcrossRegions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    idemtest.GlobalConfig
		global config.Global
	}{
		{"MREC, one home", idemtest.GlobalConfig{Regions: []string{"us-east-1", "eu-west-1"}, Lag: time.Hour},
			config.Global{Kind: config.KindMREC, Regions: []string{"us-east-1", "eu-west-1"}, Home: "us-east-1"}},
		{"MRSC, two replicas and a witness", idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{"us-east-1", "us-east-2"}, Witness: "us-west-2"},
			config.Global{Kind: config.KindMRSC, Regions: []string{"us-east-1", "us-east-2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := idemtest.NewGlobal(tc.cfg)
			require.NoError(t, err)
			stacks := newGlobalStack(t, g, tc.global)
			regions := tc.global.Regions
			sellersIDs := []string{uuid.NewString(), uuid.NewString()}

			// Each key is posted in one Region and retried in the other at
			// once: both must answer 201 with the same product.
			const keys = 24
			products := make([]string, keys)
			var wg sync.WaitGroup
			for k := range keys {
				seller := sellersIDs[k%len(sellersIDs)]
				body := fmt.Sprintf(`{"name":"Widget %d","price_cents":%d,"currency":"EUR","seller_id":%q}`, k, 100+k, seller)
				key := "key-" + strconv.Itoa(k)
				answers := make([]answer, 2)
				for i := range answers {
					wg.Go(func() { answers[i] = stacks[regions[(k+i)%2]].post(t, key, body) })
				}
				wg.Wait()
				for _, a := range answers {
					require.Equal(t, 201, a.status, a.body)
				}
				products[k] = createdID(t, answers[0])
				require.Equal(t, products[k], createdID(t, answers[1]), "the same key in two Regions created one product")
			}

			// Every Region's stream shows every outbox item once
			// replication is through; the relays and consumers then run in
			// both Regions at once, replication held back.
			g.Settle()
			for _, r := range regions {
				wg.Go(func() { stacks[r].relayAll(t) })
			}
			wg.Wait()
			for _, r := range regions {
				wg.Go(func() { stacks[r].consumeAll(t) })
			}
			wg.Wait()

			published, replicas := 0, 0
			counted := map[string]int{}
			for _, r := range regions {
				published += stacks[r].published
				replicas += stacks[r].replicas
				for id, n := range stacks[r].counted(t) {
					counted[id] += n
				}
			}
			assert.Equal(t, keys, published, "each product's event published once, across Regions")
			assert.Equal(t, keys, replicas, "each event's replica passed over in the other Region")
			require.Len(t, counted, keys, "every product's event counted")
			for id, n := range counted {
				assert.Equal(t, 1, n, "event %s counted %d times across Regions", id, n)
			}

			g.Settle()
			for s, seller := range sellersIDs {
				want, cents := 0, 0
				for k := s; k < keys; k += len(sellersIDs) {
					want++
					cents += 100 + k
				}
				for _, r := range regions {
					a := stacks[r].getSeller(t, seller)
					require.Equal(t, 200, a.status, a.body)
					b := decodeSeller(t, a)
					assert.Equal(t, strconv.Itoa(want), b.ProductCount.String(), "%s: seller %d's products", r, s)
					require.Len(t, b.Listed, 1, a.body)
					assert.Equal(t, strconv.Itoa(cents), b.Listed[0].Cents.String(), "%s: seller %d's total", r, s)
				}
			}
		})
	}
}

// TestConsumersInEveryRegionCountOnShardsOfTheirOwn: on MREC, a Region's
// consumer counts the events its own relay published, and after a
// failover both Regions' consumers count at once (the old home's queue
// draining while the new home's events arrive). Each Region here runs
// eight execution environments (consumers), which spread over a seller's
// shards, on events of one seller, with replication held back: had two
// Regions a shard item in common, last writer wins would keep one
// Region's count of it and lose the other's once replication settles.
// Every Region's GET must show every event.
func TestConsumersInEveryRegionCountOnShardsOfTheirOwn(t *testing.T) {
	regions := []string{"us-east-1", "eu-west-1"}
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: regions, Lag: time.Hour})
	require.NoError(t, err)
	stacks := newGlobalStack(t, g, config.Global{Kind: config.KindMREC, Regions: regions, Home: regions[0]})
	seller := uuid.New()
	price, err := money.New(250, "EUR")
	require.NoError(t, err)

	const environments, perRegion = 8, 40
	var wg sync.WaitGroup
	for _, name := range regions {
		r := stacks[name]
		envs := make([]*sellersqs.Consumer, environments)
		for i := range envs {
			envs[i], err = sellerstats.New(r.client, r.statsCfg, app.Runtime{Out: r.consumerOut})
			require.NoError(t, err)
		}
		for e, env := range envs {
			wg.Go(func() {
				for i := e; i < perRegion; i += environments {
					_, ev := outboxtest.ProductCreated(t, "idemlambda.products", seller, price)
					body, err := eventbus.EventEnvelope(ev)
					require.NoError(t, err)
					msg := eventbus.Message(uuid.NewString(), string(body), 1)
					resp, err := env.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
					require.NoError(t, err)
					require.Empty(t, resp.BatchItemFailures)
				}
			})
		}
	}
	wg.Wait()
	g.Settle()
	for _, name := range regions {
		a := stacks[name].getSeller(t, seller.String())
		require.Equal(t, 200, a.status, a.body)
		b := decodeSeller(t, a)
		assert.Equal(t, strconv.Itoa(len(regions)*perRegion), b.ProductCount.String(), "%s: every Region's counts, none lost", name)
		assert.Equal(t, strconv.Itoa(len(regions)*perRegion*250), b.Listed[0].Cents.String(), "%s: the total", name)
	}
}
