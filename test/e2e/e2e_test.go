//go:build e2e

// Package e2e drives the whole pipeline against moto: POST /products
// through the real createproduct handler, DynamoDB (products, idempotency,
// outbox), the outbox table's stream read through the Streams API, the
// relay handler publishing to an EventBridge bus, and a rule delivering to
// an SQS queue that the test reads as a consumer would.
//
// It is built only with -tags e2e: `make e2e` (scripts/e2e.sh) installs and
// starts moto and sets AWS_ENDPOINT_URL to it. Every client of the test goes
// through serialProxy (proxy_test.go), which forwards one request at a time
// because moto's conditional writes are not atomic.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	internalconfig "github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/dev/streampoll"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/bridge"
	"github.com/idemlambda/idemlambda/internal/relay"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// endpointVar names the variable scripts/e2e.sh sets to moto's URL.
const endpointVar = "AWS_ENDPOINT_URL"

const (
	// keys is how many products each case creates.
	keys = 10
	// duplicates is how many clients POST each key at the same time.
	duplicates = 4
	// failAt is the PutEvents entry the failure case fails.
	failAt = 3
	// eventPattern is the rule the consumer's queue subscribes with.
	eventPattern = `{"source": ["idemlambda.products"], "detail-type": ["ProductCreated"]}`
	// caseTimeout bounds each case; `make e2e` as a whole stays well under 3 minutes.
	caseTimeout = 60 * time.Second
)

// TestPipeline runs the cases one after another on one moto: they share
// the proxy, whose fault injection is global, but each has its own tables,
// bus, rule and queue.
func TestPipeline(t *testing.T) {
	endpoint := os.Getenv(endpointVar)
	if endpoint == "" {
		// Only `make e2e` builds this file, and it always sets the
		// variable: a missing one is a broken script, not a reason to skip.
		t.Fatalf("%s is not set: run `make e2e`, which starts moto and points the test at it", endpointVar)
	}
	proxy := newSerialProxy(t, endpoint)
	c := newClients(t, proxy.URL)
	t.Logf("moto at %s, reached through the serializing proxy at %s", endpoint, proxy.URL)

	t.Run("exactly once", func(t *testing.T) { exactlyOnce(t, c, proxy) })
	t.Run("failed PutEvents entry", func(t *testing.T) { failedEntry(t, c, proxy) })
	t.Run("seller statistics, redelivered at every hop", func(t *testing.T) { sellerStats(t, c) })

	ops, maxWaiting := proxy.stats()
	t.Logf("proxy forwarded %d requests one at a time (%s); up to %d waited at once",
		sum(ops), formatOps(ops), maxWaiting)
}

// exactlyOnce creates keys products with duplicates concurrent POSTs each,
// relays the outbox and checks one product, one outbox event and one
// queued ProductCreated per key.
func exactlyOnce(t *testing.T, c clients, proxy *serialProxy) {
	ctx, cancel := context.WithTimeout(t.Context(), caseTimeout)
	defer cancel()
	st := newStack(ctx, t, c, "once")
	created := postConcurrently(ctx, t, c, st, "once")
	// Setup is sequential: only the concurrent POSTs can queue at the proxy.
	_, maxWaiting := proxy.stats()
	assert.Greater(t, maxWaiting, int64(1), "duplicates must reach the proxy concurrently")

	calls := &relayCalls{}
	got := relayUntil(ctx, t, c, st, calls, func(d []delivery) bool {
		return len(distinctIDs(d)) >= keys && calls.handled() >= keys
	})
	ids := distinctIDs(got)
	t.Logf("relay: %d batch(es), %d stream records handled; queue: %d ProductCreated messages, %d distinct CloudEvent ids",
		len(calls.all()), calls.handled(), len(got), len(ids))

	assert.Equal(t, keys, len(got), "exactly one ProductCreated message per product, no duplicate")
	assert.Equal(t, keys, len(ids), "distinct CloudEvent ids")
	checkDeliveries(t, created, got)
	checkTables(ctx, t, c, st, created, got)
	for _, call := range calls.all() {
		assert.Empty(t, call.failures, "no batch item failure without a fault")
	}
}

// failedEntry fails one PutEvents entry and checks that the relay names
// its record in batchItemFailures, the poller reads again from it, and the
// event arrives: each product exactly once after deduplication on the
// CloudEvent id, the events after the failed one in the same call twice.
func failedEntry(t *testing.T, c clients, proxy *serialProxy) {
	ctx, cancel := context.WithTimeout(t.Context(), caseTimeout)
	defer cancel()
	st := newStack(ctx, t, c, "fault")
	created := postConcurrently(ctx, t, c, st, "fault")

	proxy.failEntry(failAt)
	calls := &relayCalls{}
	got := relayUntil(ctx, t, c, st, calls, func(d []delivery) bool {
		return len(distinctIDs(d)) >= keys && calls.handled() >= keys
	})
	faults := proxy.firedFaults()
	require.Len(t, faults, 1, "the injected PutEvents failure must have fired once")
	f := faults[0]
	redelivered := f.Entries - 1 - f.Index
	ids := distinctIDs(got)

	// The relay's answer names the failed event's record, by sequence number.
	var failedSeq string
	failedCall := -1
	for i, call := range calls.all() {
		if len(call.failures) == 0 {
			continue
		}
		require.Equal(t, -1, failedCall, "only one batch may fail")
		failedCall = i
		require.Len(t, call.failures, 1)
		failedSeq = call.failures[0]
		k := slices.Index(call.seqs, failedSeq)
		require.GreaterOrEqual(t, k, 0, "batchItemFailures names a record of the batch")
		assert.Equal(t, f.EventID, call.eventIDs[k], "batchItemFailures names the failed event's record")
	}
	require.GreaterOrEqual(t, failedCall, 0, "the relay must report a batch item failure")
	retry := calls.all()[failedCall+1:]
	require.NotEmpty(t, retry, "the poller must call the relay again")
	require.NotEmpty(t, retry[0].seqs)
	assert.Equal(t, failedSeq, retry[0].seqs[0], "the poller retries from the reported record")

	t.Logf("fault: PutEvents entry %d of %d failed (event %s); relay returned batchItemFailures [%s]; poller retried from it",
		f.Index, f.Entries, f.EventID, failedSeq)
	t.Logf("relay: %d batch(es), %d stream records handled; queue: %d raw ProductCreated messages, %d distinct CloudEvent ids (%d redelivered after the failed entry)",
		len(calls.all()), calls.handled(), len(got), len(ids), len(got)-len(ids))

	assert.Equal(t, keys, len(ids), "after dedup on the CloudEvent id, each product exactly once")
	assert.Equal(t, keys+redelivered, len(got), "raw messages: every event once, plus the entries after the failed one again")
	assert.Contains(t, ids, f.EventID, "the failed event is delivered by the retry")
	checkDeliveries(t, created, dedup(got))
	checkTables(ctx, t, c, st, created, dedup(got))
}

// clients are the SDK clients of the test, all pointed at the proxy.
type clients struct {
	ddb     *dynamodb.Client
	streams *dynamodbstreams.Client
	events  *eventbridge.Client
	sqs     *sqs.Client
}

// newClients builds the clients as the functions build theirs
// (app.Client), with dummy credentials in us-east-1 and the endpoint set
// on each, so no AWS_ENDPOINT_URL_<SERVICE> of the environment can route a
// client around the proxy.
func newClients(t *testing.T, endpoint string) clients {
	t.Helper()
	a := internalconfig.AWS{Region: "us-east-1", AccessKeyID: "e2e", SecretAccessKey: "e2e", Endpoint: endpoint}
	var c clients
	var errs [4]error
	c.ddb, errs[0] = app.Client(a, nil, dynamodb.NewFromConfig, ddb.CountPerContext)
	c.streams, errs[1] = app.Client(a, nil, dynamodbstreams.NewFromConfig)
	c.events, errs[2] = app.Client(a, nil, eventbridge.NewFromConfig)
	c.sqs, errs[3] = app.Client(a, nil, sqs.NewFromConfig)
	require.NoError(t, errors.Join(errs[:]...))
	return c
}

// stack is one case's resources.
type stack struct {
	env       map[string]string // the functions' environment
	bus       string
	queueURL  string
	streamARN string
}

// newStack creates the tables, a custom bus, a rule on it matching
// ProductCreated and an SQS queue as the rule's target.
func newStack(ctx context.Context, t *testing.T, c clients, name string) stack {
	t.Helper()
	suffix := fmt.Sprintf("e2e-%s-%d", name, time.Now().UnixNano())
	names := tables.Names{Products: "products-" + suffix, Idempotency: "idempotency-" + suffix, Outbox: "outbox-" + suffix, Sellers: "sellers-" + suffix, Callers: "callers-" + suffix}
	require.NoError(t, tables.CreateAll(ctx, c.ddb, names, tables.CreateOptions{WaitTimeout: 30 * time.Second}))
	arn, err := streampoll.LatestStreamARN(ctx, c.ddb, names.Outbox)
	require.NoError(t, err)

	st := stack{bus: "bus-" + suffix, streamARN: arn, env: map[string]string{
		tables.Products.EnvVar:                   names.Products,
		tables.Idempotency.EnvVar:                names.Idempotency,
		tables.Outbox.EnvVar:                     names.Outbox,
		tables.Sellers.EnvVar:                    names.Sellers,
		tables.Callers.EnvVar:                    names.Callers,
		internalconfig.EventBusName.Name:         "bus-" + suffix,
		internalconfig.EventSource.Name:          "idemlambda.products",
		internalconfig.IdempotencyRetention.Name: "24h",
	}}
	_, err = c.events.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(st.bus)})
	require.NoError(t, err, "create event bus")
	q, err := c.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("consumer-" + suffix)})
	require.NoError(t, err, "create queue")
	st.queueURL = aws.ToString(q.QueueUrl)
	attrs, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	require.NoError(t, err, "queue arn")
	rule := "product-created-" + suffix
	_, err = c.events.PutRule(ctx, &eventbridge.PutRuleInput{
		Name: aws.String(rule), EventBusName: aws.String(st.bus), EventPattern: aws.String(eventPattern),
	})
	require.NoError(t, err, "put rule")
	// On AWS the queue also needs a policy letting events.amazonaws.com
	// send to it; moto delivers without one.
	out, err := c.events.PutTargets(ctx, &eventbridge.PutTargetsInput{
		Rule: aws.String(rule), EventBusName: aws.String(st.bus),
		Targets: []ebtypes.Target{{Id: aws.String("consumer"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}},
	})
	require.NoError(t, err, "put targets")
	require.Zero(t, out.FailedEntryCount, "put targets")
	return st
}

// created is the 201 body of each key.
type created map[string]string

// postResult is what one client ended with for its key.
type postResult struct {
	status    int
	body      string
	replayed  bool
	conflicts int // 409 answers it retried after
}

// postConcurrently sends duplicates POSTs per key through the real
// createproduct handler, all released at once, each client retrying 409
// (another request holds the key) until it gets the final answer. It checks
// that every client of a key got the same 201 bytes and that exactly one of
// them executed.
func postConcurrently(ctx context.Context, t *testing.T, c clients, st stack, prefix string) created {
	t.Helper()
	cfg, err := internalconfig.LoadCreateProduct(mapEnv(st.env))
	require.NoError(t, err)
	cfg.LogLevel = slog.LevelWarn
	h, err := createproduct.New(c.ddb, cfg, app.Runtime{Out: functionOut(t)})
	require.NoError(t, err)
	tmpl := createEvent(t)

	results := make([][]postResult, keys)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range keys {
		results[i] = make([]postResult, duplicates)
		for d := range duplicates {
			wg.Go(func() {
				<-start
				results[i][d] = post(ctx, h, request(tmpl, fmt.Sprintf("%s-%d", prefix, i), i, d))
			})
		}
	}
	close(start)
	wg.Wait()

	out := created{}
	var fresh, replayed, conflicts int
	for i, rs := range results {
		key := fmt.Sprintf("%s-%d", prefix, i)
		executed := 0
		for _, r := range rs {
			conflicts += r.conflicts
			require.Equal(t, 201, r.status, "key %s: %s", key, r.body)
			require.Equal(t, rs[0].body, r.body, "key %s: every duplicate gets the same bytes", key)
			if r.replayed {
				replayed++
			} else {
				executed++
			}
		}
		fresh += executed
		require.Equal(t, 1, executed, "key %s: exactly one request executes", key)
		out[key] = rs[0].body
	}
	t.Logf("POST /products: %d keys x %d concurrent duplicates = %d requests: %d created, %d replayed (Idempotent-Replayed), %d 409 in-flight answers retried",
		keys, duplicates, keys*duplicates, fresh, replayed, conflicts)
	return out
}

// post sends one request, retrying while the key is in flight (409) or the
// store is busy (503), a bounded number of times.
func post(ctx context.Context, h idemhttp.APIGatewayV2Handler, req events.APIGatewayV2HTTPRequest) postResult {
	var r postResult
	id := req.RequestContext.RequestID
	for attempt := range 200 {
		req.RequestContext.RequestID = id + "-" + strconv.Itoa(attempt)
		resp, _ := h(ctx, req) // the handler answers every failure as problem+json
		r.status, r.body = resp.StatusCode, resp.Body
		r.replayed = resp.Headers[idemhttp.HeaderReplayed] == "true"
		if resp.StatusCode != 409 && resp.StatusCode != 503 {
			return r
		}
		r.conflicts++
		select {
		case <-ctx.Done():
			return r
		case <-time.After(20 * time.Millisecond): // not Retry-After: the holder finishes in milliseconds
		}
	}
	return r
}

// createEvent loads the sample API Gateway event make invoke sends.
func createEvent(t *testing.T) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile("../../events/create.json")
	require.NoError(t, err)
	var req events.APIGatewayV2HTTPRequest
	require.NoError(t, json.Unmarshal(b, &req))
	return req
}

// request is the sample event with its own key and body for product i.
func request(tmpl events.APIGatewayV2HTTPRequest, key string, i, dup int) events.APIGatewayV2HTTPRequest {
	req := tmpl
	req.Headers = maps.Clone(tmpl.Headers)
	req.Headers["idempotency-key"] = strconv.Quote(key)
	req.RequestContext.RequestID = fmt.Sprintf("e2e-%s-%d", key, dup)
	req.Body = fmt.Sprintf(`{"name":"Widget %d","price_cents":%d,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}`, i, 999+i)
	return req
}

// relayCall is one invocation of the relay handler as the poller made it.
type relayCall struct {
	seqs     []string // the records' sequence numbers, in order
	eventIDs []string // the records' outbox event_id keys
	failures []string // batchItemFailures it answered
	err      error
}

// relayCalls records every invocation of the relay handler.
type relayCalls struct {
	mu    sync.Mutex
	calls []relayCall
	done  map[string]bool // sequence numbers handled without failure
}

// wrap returns h recording its calls; it changes nothing they return.
func (r *relayCalls) wrap(h streampoll.Handler) streampoll.Handler {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp, err := h(ctx, ev)
		call := relayCall{err: err}
		for _, rec := range ev.Records {
			call.seqs = append(call.seqs, rec.Change.SequenceNumber)
			id := ""
			if v, ok := rec.Change.Keys[tables.AttrEventID]; ok && v.DataType() == events.DataTypeString {
				id = v.String()
			}
			call.eventIDs = append(call.eventIDs, id)
		}
		for _, f := range resp.BatchItemFailures {
			call.failures = append(call.failures, f.ItemIdentifier)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, call)
		if r.done == nil {
			r.done = map[string]bool{}
		}
		for _, seq := range call.seqs {
			if err != nil || slices.Contains(call.failures, seq) {
				break // this record and the ones after it are retried
			}
			r.done[seq] = true
		}
		return resp, err
	}
}

func (r *relayCalls) all() []relayCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// handled counts the distinct records the relay has handled successfully.
func (r *relayCalls) handled() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.done)
}

// relayUntil runs the Streams poller on the outbox stream into the relay
// handler, publishing to the stack's bus, and reads the queue until done
// holds and one more second brings no message (so a duplicate would be
// seen), or the context ends. It stops the poller before returning.
func relayUntil(ctx context.Context, t *testing.T, c clients, st stack, calls *relayCalls, done func([]delivery) bool) []delivery {
	t.Helper()
	log := testLogger(t, slog.LevelInfo)
	pub, err := bridge.New(c.events, bridge.Config{
		Bus: st.env[internalconfig.EventBusName.Name], Source: st.env[internalconfig.EventSource.Name],
	})
	require.NoError(t, err)
	poller, err := streampoll.NewPoller(c.streams, st.streamARN, calls.wrap(relayHandler(t, pub, functionOut(t)).Handle),
		streampoll.Options{PollInterval: 50 * time.Millisecond, RetryDelay: 100 * time.Millisecond, Logger: log})
	require.NoError(t, err)

	pctx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- poller.Run(pctx) }()
	defer func() {
		stop()
		require.NoError(t, <-stopped, "poller")
	}()

	const (
		pause = 100 * time.Millisecond
		quiet = 10 // empty receives after done before trusting the count
	)
	var got []delivery
	empty := 0
	for round := 0; round < int(caseTimeout/pause) && ctx.Err() == nil; round++ {
		out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(st.queueURL), MaxNumberOfMessages: 10,
			// No long polling: it would hold the serializing proxy.
			WaitTimeSeconds: 0, VisibilityTimeout: 60,
		})
		require.NoError(t, err, "receive message")
		for _, m := range out.Messages {
			got = append(got, parseDelivery(t, aws.ToString(m.Body)))
			_, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(st.queueURL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err, "delete message")
		}
		if len(out.Messages) > 0 || !done(got) {
			empty = 0
		} else if empty++; empty >= quiet {
			return got
		}
		if len(out.Messages) == 0 {
			time.Sleep(pause)
		}
	}
	t.Fatalf("queue: %d messages, %d distinct events, relay handled %d records; want %d products: %v",
		len(got), len(distinctIDs(got)), calls.handled(), keys, ctx.Err())
	return nil
}

// delivery is one SQS message: the EventBridge event the rule sent.
type delivery struct {
	detailType, source string
	event              outbox.Event // the EventBridge detail: the CloudEvent
}

// parseDelivery decodes the EventBridge envelope and its detail.
func parseDelivery(t *testing.T, body string) delivery {
	t.Helper()
	var env struct {
		DetailType string          `json:"detail-type"`
		Source     string          `json:"source"`
		Detail     json.RawMessage `json:"detail"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &env), "SQS body: %s", body)
	d := delivery{detailType: env.DetailType, source: env.Source}
	require.NoError(t, json.Unmarshal(env.Detail, &d.event), "detail: %s", env.Detail)
	require.NoError(t, d.event.Validate(), "detail: %s", env.Detail)
	return d
}

// checkDeliveries checks that the deduplicated deliveries are the created
// products' events, one each. moto re-encodes the detail (Python's
// json.dumps puts a space after ',' and ':'), so data is compared compact:
// every byte of the 201 body, key order included, must be there.
func checkDeliveries(t *testing.T, want created, got []delivery) {
	t.Helper()
	byProduct := map[string]delivery{}
	for _, d := range got {
		assert.Equal(t, "ProductCreated", d.detailType)
		assert.Equal(t, "idemlambda.products", d.source)
		assert.Equal(t, "ProductCreated", d.event.Type)
		_, dup := byProduct[d.event.Subject]
		assert.False(t, dup, "product %s delivered under two event ids", d.event.Subject)
		byProduct[d.event.Subject] = d
	}
	require.Equal(t, len(want), len(byProduct), "products with a ProductCreated")
	for key, body := range want {
		id := productID(t, body)
		d, ok := byProduct[id]
		if !assert.True(t, ok, "key %s: no ProductCreated for product %s", key, id) {
			continue
		}
		var data bytes.Buffer
		require.NoError(t, json.Compact(&data, d.event.Data))
		assert.Equal(t, body, data.String(), "key %s: event data is the 201 body", key)
	}
}

// checkTables checks that the products table has exactly the created
// products and the outbox exactly one event per product, the delivered one.
func checkTables(ctx context.Context, t *testing.T, c clients, st stack, want created, got []delivery) {
	t.Helper()
	var wantIDs, eventIDs []string
	for _, body := range want {
		wantIDs = append(wantIDs, productID(t, body))
	}
	for _, d := range got {
		eventIDs = append(eventIDs, d.event.ID)
	}
	products := scan(ctx, t, c, st.env[tables.Products.EnvVar])
	outboxItems := scan(ctx, t, c, st.env[tables.Outbox.EnvVar])
	t.Logf("tables: %d products, %d outbox events for %d keys", len(products), len(outboxItems), len(want))
	assert.ElementsMatch(t, wantIDs, column(products, tables.AttrID), "one product per key")
	assert.ElementsMatch(t, wantIDs, column(outboxItems, tables.AttrAggregateID), "one outbox event per product")
	assert.ElementsMatch(t, eventIDs, column(outboxItems, tables.AttrEventID), "the queue carries the outbox events")
}

// scan reads a whole table, a bounded number of pages.
func scan(ctx context.Context, t *testing.T, c clients, table string) []map[string]ddbtypes.AttributeValue {
	t.Helper()
	var items []map[string]ddbtypes.AttributeValue
	var start map[string]ddbtypes.AttributeValue
	for range 100 {
		out, err := c.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start})
		require.NoError(t, err, "scan %s", table)
		items = append(items, out.Items...)
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return items
		}
	}
	t.Fatalf("scan %s: more than 100 pages", table)
	return nil
}

// column returns a string attribute of every item.
func column(items []map[string]ddbtypes.AttributeValue, name string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, _ := it[name].(*ddbtypes.AttributeValueMemberS)
		if s == nil {
			out = append(out, "")
			continue
		}
		out = append(out, s.Value)
	}
	return out
}

// productID reads the id of a 201 body.
func productID(t *testing.T, body string) string {
	t.Helper()
	var b struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &b))
	require.NotEmpty(t, b.ID)
	return b.ID
}

// distinctIDs is the set of CloudEvent ids, as a consumer deduplicating
// on the id sees them.
func distinctIDs(got []delivery) map[string]bool {
	ids := make(map[string]bool, len(got))
	for _, d := range got {
		ids[d.event.ID] = true
	}
	return ids
}

// dedup keeps the first delivery of each CloudEvent id.
func dedup(got []delivery) []delivery {
	seen := map[string]bool{}
	var out []delivery
	for _, d := range got {
		if !seen[d.event.ID] {
			seen[d.event.ID] = true
			out = append(out, d)
		}
	}
	return out
}

// mapEnv is a getenv over a map.
func mapEnv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// testLogger writes the test's own log lines (the stream poller's) into
// the test output.
func testLogger(t *testing.T, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// functionOut stands in for a function's stdout: its JSON log lines and
// its metrics lines. When the test ends, every metrics line must meet the
// EMF specification; a failed test prints the log lines.
func functionOut(t *testing.T) *logbuf.Buffer {
	out := &logbuf.Buffer{}
	t.Cleanup(func() {
		out.Metrics(t)
		if t.Failed() {
			for _, l := range out.Logs() {
				t.Log(l)
			}
		}
	})
	return out
}

// relayHandler is the relay as its main assembles it, publishing
// through pub.
func relayHandler(t *testing.T, pub outbox.Publisher, out io.Writer) *relay.Handler {
	t.Helper()
	h, err := outboxrelay.New(pub, internalconfig.OutboxRelay{Common: internalconfig.Common{LogLevel: slog.LevelInfo}}, app.Runtime{Out: out})
	require.NoError(t, err)
	return h
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// formatOps lists request counts by operation, sorted.
func formatOps(ops map[string]int) string {
	parts := make([]string, 0, len(ops))
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		name := op[strings.LastIndex(op, ".")+1:]
		if name == "" {
			name = "?"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, ops[op]))
	}
	return strings.Join(parts, ", ")
}
