package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/getseller"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/embedded"
	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/relay"
	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// pipeline is the whole path of a product, in process, on the strict
// store, driven one step at a time so that a test decides every
// redelivery: createproduct's handler, the store's outbox puts as the
// stream's INSERT records, the relay's handler, EventBridge's envelope
// and an SQS queue (batches of 10, a message reported failed redelivered
// until its fifth receive moves it to the dead-letter list, as the
// template's redrive policy does), the sellerstats consumer, and GET
// /sellers/{id}'s handler. Nothing in it waits on a clock.
type pipeline struct {
	t      *testing.T
	rng    *rand.Rand
	client *dynamodb.Client
	names  tables.Names

	create, seller idemhttp.APIGatewayV2Handler
	relay          *relay.Handler
	consumer       *sellersqs.Consumer
	consumerOut    *logbuf.Buffer

	mu      sync.Mutex                   // the store's put hook runs on its own goroutines
	stream  []events.DynamoDBEventRecord // the outbox's INSERTs, in commit order
	relayed int                          // stream records the relay has taken
	queue   []*queued
	dead    []events.SQSMessage
}

// queued is an SQS message waiting for delivery.
type queued struct {
	id, body string
	receives int
}

// principal is the IAM caller every request of the pipeline comes from,
// granted every seller.
const principal = "arn:aws:iam::123456789012:user/edge-test"

func newPipeline(t *testing.T, seed uint64) *pipeline {
	t.Helper()
	p := &pipeline{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), consumerOut: &logbuf.Buffer{}}
	store := embedded.New()
	p.names = tables.Names{Products: "products", Idempotency: "idempotency", Outbox: "outbox", Sellers: "sellers", Callers: "callers"}
	store.OnPut(func(put embedded.Put) {
		if put.Table != p.names.Outbox {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.stream = append(p.stream, events.DynamoDBEventRecord{
			EventID: strconv.Itoa(len(p.stream)), EventName: "INSERT", EventSource: "aws:dynamodb", EventVersion: "1.1",
			EventSourceArn: "arn:aws:dynamodb:local:000000000000:table/outbox/stream/pipeline",
			Change: events.DynamoDBStreamRecord{
				Keys: map[string]events.DynamoDBAttributeValue{
					outbox.AttrAggregateID: put.Item[outbox.AttrAggregateID], outbox.AttrEventID: put.Item[outbox.AttrEventID],
				},
				NewImage: put.Item, SequenceNumber: fmt.Sprintf("%021d", len(p.stream)+1), StreamViewType: "NEW_IMAGE",
			},
		})
	})
	srv := httptest.NewServer(store)
	t.Cleanup(srv.Close)
	client, err := local.Client(srv.URL)
	require.NoError(t, err)
	p.client = client
	ctx := context.Background()
	require.NoError(t, local.EnsureTables(ctx, client, p.names))
	require.NoError(t, access.Grant(ctx, client, p.names.Callers, principal, access.AnySeller))

	common := config.Common{LogLevel: slog.LevelInfo}
	const source = "idemlambda.products"
	idem := config.Idempotency{Table: p.names.Idempotency, Retention: time.Hour}
	discard := app.Runtime{Out: &logbuf.Buffer{}}
	p.create, err = createproduct.New(client, config.CreateProduct{
		Common: common, ProductsTable: p.names.Products, OutboxTable: p.names.Outbox, EventSource: source, Idempotency: idem,
		CallersTable: p.names.Callers, Limit: config.Limit{Creates: config.MaxCallerLimit, Window: time.Hour},
	}, discard)
	require.NoError(t, err)
	p.relay, err = outboxrelay.New(publisher{p}, config.OutboxRelay{Common: common, EventBusName: "bus", EventSource: source}, discard)
	require.NoError(t, err)
	consumerIdem := idem
	consumerIdem.Mode = config.ModeTransact
	p.consumer, err = sellerstats.New(client, config.SellerStats{
		Common: common, SellersTable: p.names.Sellers, EventSource: source, Idempotency: consumerIdem,
	}, app.Runtime{Out: p.consumerOut})
	require.NoError(t, err)
	p.seller, err = getseller.New(client, config.GetSeller{Common: common, SellersTable: p.names.Sellers}, discard)
	require.NoError(t, err)
	return p
}

// publisher is EventBridge's rule to the queue: each event the relay
// publishes becomes an SQS message whose body is its EventBridge event.
type publisher struct{ p *pipeline }

func (pub publisher) Publish(_ context.Context, evs []outbox.Event) (outbox.Result, error) {
	var res outbox.Result
	for i, e := range evs {
		body, err := eventbus.EventEnvelope(e)
		if err != nil {
			res.Rejected = append(res.Rejected, outbox.Rejection{Index: i, Err: err})
			continue
		}
		pub.p.send(string(body))
		res.Published++
	}
	return res, nil
}

func (p *pipeline) send(body string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, &queued{id: uuid.NewString(), body: body})
}

// answer is an API Gateway response as a client reads it.
type answer struct {
	status int
	body   string
}

// post sends POST /products from principal with key and body.
func (p *pipeline) post(key, body string) answer {
	p.t.Helper()
	resp, err := p.create(context.Background(), createRequest(key, body))
	require.NoError(p.t, err)
	return answer{resp.StatusCode, resp.Body}
}

// createRequest is POST /products from principal with key and body, as
// API Gateway hands it to createproduct.
func createRequest(key, body string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /products", RawPath: "/products", Body: body,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": strconv.Quote(key)},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID:  uuid.NewString(),
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/products"},
			Authorizer: signed(),
		},
	}
}

// signed is what the IAM authorizer says of principal's requests.
func signed() *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "123456789012", UserARN: principal, CallerID: "AIDAEDGETEST"},
	}
}

// getSeller sends GET /sellers/{id} from principal, whose route policy
// lets it read every seller.
func (p *pipeline) getSeller(id string) answer {
	p.t.Helper()
	resp, err := p.seller(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: "GET /sellers/{id}", RawPath: "/sellers/" + id, PathParameters: map[string]string{"id": id},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID:  uuid.NewString(),
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/sellers/" + id},
			Authorizer: signed(),
		},
	})
	require.NoError(p.t, err)
	return answer{resp.StatusCode, resp.Body}
}

// relayOnce hands the relay its next batch of stream records (up to
// size) and moves the stream's position past what it acknowledged; with
// again, the same batch is handed over once more first, as the event
// source mapping does when a checkpoint is lost. It reports whether there
// was anything to relay.
func (p *pipeline) relayOnce(size int, again bool) bool {
	p.t.Helper()
	p.mu.Lock()
	batch := slices.Clone(p.stream[p.relayed:min(len(p.stream), p.relayed+size)])
	p.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	rounds := 1
	if again {
		rounds = 2
	}
	var resp events.DynamoDBEventResponse
	for range rounds {
		var err error
		resp, err = p.relay.Handle(context.Background(), events.DynamoDBEvent{Records: batch})
		require.NoError(p.t, err)
	}
	done := len(batch)
	for _, f := range resp.BatchItemFailures {
		i := slices.IndexFunc(batch, func(r events.DynamoDBEventRecord) bool { return r.Change.SequenceNumber == f.ItemIdentifier })
		require.GreaterOrEqual(p.t, i, 0, "the relay names a record of its batch")
		done = min(done, i)
	}
	p.mu.Lock()
	p.relayed += done
	p.mu.Unlock()
	return true
}

// consumeOnce receives a batch of up to 10 messages, in random order, as
// a standard queue does, and settles it: a message the consumer reports
// failed waits for its next receive, or moves to the dead-letter list at
// its fifth; one it acknowledged goes, unless dup says SQS delivers it
// once more (at-least-once). It reports whether there was anything to
// receive.
func (p *pipeline) consumeOnce(dup func() bool) bool {
	p.t.Helper()
	p.mu.Lock()
	p.rng.Shuffle(len(p.queue), func(i, j int) { p.queue[i], p.queue[j] = p.queue[j], p.queue[i] })
	batch := slices.Clone(p.queue[:min(len(p.queue), 10)])
	p.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	ev := events.SQSEvent{}
	for _, m := range batch {
		m.receives++
		ev.Records = append(ev.Records, eventbus.Message(m.id, m.body, m.receives))
	}
	resp, err := p.consumer.Handle(context.Background(), ev)
	require.NoError(p.t, err)
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range batch {
		switch {
		case failed[m.id] && m.receives >= 5:
			p.dead = append(p.dead, eventbus.Message(m.id, m.body, m.receives))
		case failed[m.id], dup():
			continue // stays in the queue
		}
		p.queue = slices.DeleteFunc(p.queue, func(q *queued) bool { return q == m })
	}
	return true
}

// drain relays and consumes until the stream is relayed and the queue
// empty, with no redelivery of its own.
func (p *pipeline) drain() {
	p.t.Helper()
	for p.relayOnce(10, false) {
	}
	for p.consumeOnce(func() bool { return false }) {
	}
}

// counted is how many times the consumer logged each event as counted
// (an "event counted" line, by CloudEvent id), and how many deliveries
// it acknowledged as duplicates.
func (p *pipeline) counted() (counted map[string]int, duplicates int) {
	p.t.Helper()
	counted = map[string]int{}
	for _, line := range p.consumerOut.Logs() {
		var l struct {
			Msg     string `json:"msg"`
			EventID string `json:"event_id"`
		}
		require.NoError(p.t, json.Unmarshal([]byte(line), &l), line)
		switch l.Msg {
		case "event counted":
			counted[l.EventID]++
		case "duplicate event acknowledged":
			duplicates++
		}
	}
	return counted, duplicates
}

// deadEvents are the CloudEvent ids of the messages in the dead-letter
// list.
func (p *pipeline) deadEvents() []string {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := []string{}
	for _, m := range p.dead {
		var env struct {
			Detail struct {
				ID string `json:"id"`
			} `json:"detail"`
		}
		require.NoError(p.t, json.Unmarshal([]byte(m.Body), &env))
		ids = append(ids, env.Detail.ID)
	}
	return ids
}

// eventOf is the CloudEvent id of the outbox event of each product.
func (p *pipeline) eventOf() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]string{}
	for _, r := range p.stream {
		product := r.Change.NewImage[outbox.AttrAggregateID].String()
		out[product] = append(out[product], r.Change.NewImage[outbox.AttrEventID].String())
	}
	return out
}

// createdID is the product id of a 201's body.
func createdID(t *testing.T, a answer) string {
	t.Helper()
	var b struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &b), a.body)
	return b.ID
}

// sellerBody is GET /sellers/{id}'s body, its numbers kept as the exact
// decimal integers the JSON carries, however large.
type sellerBody struct {
	SellerID     string      `json:"seller_id"`
	ProductCount json.Number `json:"product_count"`
	Listed       []struct {
		Cents    json.Number `json:"cents"`
		Currency string      `json:"currency"`
	} `json:"listed"`
}

func decodeSeller(t *testing.T, a answer) sellerBody {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.UseNumber()
	var b sellerBody
	require.NoError(t, dec.Decode(&b), a.body)
	return b
}

// putShard writes one shard of a seller's statistics, as the consumer
// would have: count products, cents in EUR.
func (p *pipeline) putShard(seller string, shard int, count, cents string) {
	p.t.Helper()
	_, err := p.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(p.names.Sellers), Item: map[string]types.AttributeValue{
		"seller_id": &types.AttributeValueMemberS{Value: seller}, "shard": &types.AttributeValueMemberN{Value: strconv.Itoa(shard)},
		"product_count": &types.AttributeValueMemberN{Value: count}, "cents_EUR": &types.AttributeValueMemberN{Value: cents},
		"updated_at": &types.AttributeValueMemberS{Value: "2026-12-01T00:00:00Z"},
	}})
	require.NoError(p.t, err)
}

// compact is a JSON body without its insignificant spaces, for messages.
func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}
