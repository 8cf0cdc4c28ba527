package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/bench/proxy"
	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// The consumer workload (4): ProductCreated events, as EventBridge
// delivers them through SQS, counted per seller by idemlambda's
// sellerstats consumer (a batch in one TransactWriteItems) and by
// Powertools' batch processor with makeIdempotent per record.
const (
	// ConsumerOurs is idemlambda's sellerstats consumer (transact mode,
	// Store.ExecuteBatch).
	ConsumerOurs = "idemlambda-sellerstats"
	// ConsumerPowertools is processPartialResponse + BatchProcessor with
	// makeIdempotent around the record handler.
	ConsumerPowertools = "powertools-batch"
	// eventSource is the source the consumers count (the relay's).
	eventSource = "idemlambda.products"
	// batchSize is the event source mapping's batch size.
	batchSize = 10
	// maxReceives is the queue's redrive policy: a message received this
	// many times without success goes to the dead-letter queue.
	maxReceives = 5
)

var consumerImpls = []string{ConsumerOurs, ConsumerPowertools}

// Messages is the consumer runners' input file: the SQS messages of the
// warm-up (their own seller, never checked) and of the measured run.
type Messages struct {
	Warmup   []events.SQSMessage `json:"warmup"`
	Messages []events.SQSMessage `json:"messages"`
}

// truth is what the sellers table must hold once every event is counted
// once: per seller, the number of distinct events and their total cents.
type truth map[string]sellerTotal

type sellerTotal struct {
	Count int64 `json:"count"`
	Cents int64 `json:"cents_EUR"`
}

// ConsumerPhase is one consumer run: one implementation, sellers, and
// concurrent execution environments.
type ConsumerPhase struct {
	Impl       string `json:"impl"`
	Sellers    int    `json:"sellers"`
	Procs      int    `json:"concurrent_invocations"`
	Events     int    `json:"events"`
	Deliveries int    `json:"deliveries"`
	Label      string `json:"label"`

	Invocations   int          `json:"invocations"`
	Redelivered   int          `json:"messages_redelivered"`
	DeadLettered  int          `json:"messages_dead_lettered"`
	Calls         proxy.Counts `json:"calls"`
	CallsPerEvent float64      `json:"calls_per_event"`
	CPUUserMs     float64      `json:"cpu_user_ms"`
	CPUSysMs      float64      `json:"cpu_sys_ms"`
	CPUPerEventUs float64      `json:"cpu_us_per_event"`
	WallMs        float64      `json:"wall_ms"`
	EventsPerSec  float64      `json:"events_per_second"`
	LoadAvgBefore string       `json:"loadavg_before"`

	TruthHeld bool     `json:"truth_held"`
	Mismatch  []string `json:"truth_mismatches,omitempty"`

	// Cost is the run's capacity units, as the store counted them, and
	// what they and the invocations' measured durations cost per million
	// distinct events.
	Cost *Cost `json:"cost,omitempty"`
}

// consumerSet is the events of one seller count: the same messages for
// both implementations and every concurrency.
type consumerSet struct {
	sellers int
	file    string
	msgs    Messages
	truth   truth
}

// newConsumerSet makes n events spread over the given number of sellers,
// each delivered 1 or 2 times, shuffled; seed fixes prices, sellers,
// deliveries and order (the event and product ids are UUIDv7s, fresh).
func newConsumerSet(dir string, n, nSellers int, seed uint64) (*consumerSet, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(nSellers)))
	id := func() uuid.UUID {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		u, _ := uuid.FromBytes(b[:])
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
		return u
	}
	sellerIDs := make([]uuid.UUID, nSellers)
	for i := range sellerIDs {
		sellerIDs[i] = id()
	}
	set := &consumerSet{sellers: nSellers, truth: truth{}}
	// message is the d-th delivery of one event: each delivery is its own
	// SQS message, as EventBridge and the relay redeliver an event.
	message := func(seller uuid.UUID, cents int64, deliveries int) ([]events.SQSMessage, error) {
		price, err := money.New(cents, "EUR")
		if err != nil {
			return nil, err
		}
		pid, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		p, err := product.New(pid, "Widget", price, seller, time.Now())
		if err != nil {
			return nil, err
		}
		body, err := json.Marshal(p.CreatedData())
		if err != nil {
			return nil, err
		}
		ev, err := outbox.NewEvent(eventSource, product.EventCreated, pid.String(), body, p.CreatedAt())
		if err != nil {
			return nil, err
		}
		env, err := eventbus.EventEnvelope(ev)
		if err != nil {
			return nil, err
		}
		var ms []events.SQSMessage
		for d := range deliveries {
			ms = append(ms, eventbus.Message("m-"+ev.ID+"-"+strconv.Itoa(d+1), string(env), 1))
		}
		return ms, nil
	}
	warmSeller := id()
	for range 20 {
		ms, err := message(warmSeller, 100, 2)
		if err != nil {
			return nil, err
		}
		set.msgs.Warmup = append(set.msgs.Warmup, ms...)
	}
	for range n {
		seller := sellerIDs[rng.IntN(nSellers)]
		cents := 1 + rng.Int64N(100_000)
		ms, err := message(seller, cents, 1+rng.IntN(2))
		if err != nil {
			return nil, err
		}
		set.msgs.Messages = append(set.msgs.Messages, ms...)
		t := set.truth[seller.String()]
		t.Count++
		t.Cents += cents
		set.truth[seller.String()] = t
	}
	rng.Shuffle(len(set.msgs.Messages), func(i, j int) {
		set.msgs.Messages[i], set.msgs.Messages[j] = set.msgs.Messages[j], set.msgs.Messages[i]
	})
	set.file = filepath.Join(dir, fmt.Sprintf("consumer-%dsellers.json", nSellers))
	b, err := json.Marshal(set.msgs)
	if err != nil {
		return nil, err
	}
	return set, os.WriteFile(set.file, b, 0o644)
}

func consumerNames(impl string, nSellers, procs int) tables.Names {
	p := fmt.Sprintf("%s-c%dx%d-", impl, nSellers, procs)
	return tables.Names{Sellers: p + "sellers", Idempotency: p + "idempotency"}
}

// createConsumerTables makes the run's sellers table and its idempotency
// table (idemlambda's, or Powertools').
func (b *bench) createConsumerTables(ctx context.Context, impl string, n tables.Names) error {
	if err := tables.Sellers.Create(ctx, b.direct, n.Sellers, tables.CreateOptions{}); err != nil {
		return err
	}
	if impl == ConsumerOurs {
		return tables.Idempotency.Create(ctx, b.direct, n.Idempotency, tables.CreateOptions{})
	}
	return b.createPowertoolsTable(ctx, n.Idempotency)
}

// batchMsg is one invocation the driver sends a consumer runner: the
// messages' indexes in the set and each one's receive count.
type batchMsg struct {
	Messages []int `json:"m"`
	Receives []int `json:"r"`
}

// consume runs one consumer phase: procs runner processes (execution
// environments) take batches of batchSize from one queue, in the order
// of the set; each message a batch reports failed goes back to the end
// of the queue with its receive count raised, until maxReceives.
func (b *bench) consume(ctx context.Context, impl string, set *consumerSet, procs int) (*ConsumerPhase, error) {
	n := consumerNames(impl, set.sellers, procs)
	if err := b.createConsumerTables(ctx, impl, n); err != nil {
		return nil, err
	}
	p := &ConsumerPhase{
		Impl: impl, Sellers: set.sellers, Procs: procs, Events: set.truth.events(), Deliveries: len(set.msgs.Messages),
		LoadAvgBefore: loadavg(),
	}
	p.Label = fmt.Sprintf("%d events, %d seller(s), %d deliveries, %d concurrent invocations", p.Events, set.sellers, p.Deliveries, procs)
	fmt.Printf("  %-22s sellers=%-2d procs=%d load %s ... ", impl, set.sellers, procs, p.LoadAvgBefore)
	args := []string{
		"--endpoint=" + b.proxyURL, "--sellers=" + n.Sellers, "--idempotency=" + n.Idempotency,
		"--messages=" + set.file, "--source=" + eventSource,
	}
	var ps []*proc
	defer func() {
		for _, x := range ps {
			x.kill()
			x.log.Close()
		}
	}()
	for i := range procs {
		x, v, err := b.startConsumer(impl, args, fmt.Sprintf("%s-c%dx%d-%d.log", impl, set.sellers, procs, i))
		if err != nil {
			return nil, err
		}
		ps = append(ps, x)
		for k, val := range v {
			b.res.Versions[k] = val
		}
	}
	timer := time.AfterFunc(b.o.phaseTimeout, func() {
		for _, x := range ps {
			_ = x.cmd.Process.Kill()
		}
	})
	defer timer.Stop()

	q := newQueue(len(set.msgs.Messages))
	before, err := consumedCapacity(b.storeURL)
	if err != nil {
		return nil, err
	}
	b.px.Reset()
	for _, x := range ps {
		if err := x.send("go"); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		lat  []int64 // each invocation's duration, µs
	)
	for _, x := range ps {
		wg.Go(func() {
			for {
				batch, ok := q.take(batchSize)
				if !ok {
					return
				}
				line, _ := json.Marshal(batch)
				m, err := x.invoke(string(line))
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					q.abort()
					return
				}
				q.settle(batch, m.Failed)
				mu.Lock()
				p.Invocations++
				lat = append(lat, m.Latency)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	for _, x := range ps {
		if err := x.send("end"); err != nil {
			return nil, err
		}
		m, err := x.next()
		if err != nil {
			return nil, err
		}
		if m.Phase != "done" {
			return nil, fmt.Errorf("unexpected runner message %q", m.Phase)
		}
		_ = x.stdin.Close()
		err = x.cmd.Wait()
		x.ended = true
		if err != nil {
			return nil, fmt.Errorf("runner: %w (see %s)", err, x.log.Name())
		}
		p.CPUUserMs += m.CPUUserMs
		p.CPUSysMs += m.CPUSysMs
	}
	c := b.px.Snapshot()
	after, err := consumedCapacity(b.storeURL)
	if err != nil {
		return nil, err
	}
	p.Calls = c
	p.Redelivered, p.DeadLettered = q.redelivered, q.dead
	p.WallMs = float64(wall.Microseconds()) / 1000
	p.CallsPerEvent = float64(c.Total()) / float64(p.Events)
	p.CPUPerEventUs = (p.CPUUserMs + p.CPUSysMs) * 1000 / float64(p.Events)
	p.EventsPerSec = float64(p.Events) / wall.Seconds()
	if err := checkReads(c); err != nil {
		return nil, err
	}
	units, storeRequests := stepUnits(before, after, []string{n.Sellers, n.Idempotency})
	if err := checkUnits(c, storeRequests); err != nil {
		return nil, err
	}
	p.Cost = newCost("event", units, p.Events, p.Invocations, billedMs(lat), prices)
	if p.Mismatch, err = b.checkTruth(ctx, n.Sellers, set.truth); err != nil {
		return nil, err
	}
	p.TruthHeld = len(p.Mismatch) == 0
	held := "truth held"
	if !p.TruthHeld {
		held = fmt.Sprintf("TRUTH BROKEN: %v", p.Mismatch)
	}
	fmt.Printf("%d invocations, %s, %.2f calls/event%s, %.0f us CPU/event, %.0f events/s, %d redelivered, %d dead-lettered; %s\n",
		p.Invocations, opsString(c.Ops), p.CallsPerEvent, unitsString(p.Cost), p.CPUPerEventUs, p.EventsPerSec, p.Redelivered, p.DeadLettered, held)
	return p, nil
}

// checkTruth compares the sellers table with the truth: each seller's
// product_count and cents_EUR, summed over its shards, equal its
// distinct events' count and sum. It returns the differences.
func (b *bench) checkTruth(ctx context.Context, table string, want truth) ([]string, error) {
	got := truth{}
	err := scanAll(ctx, b.direct, table, func(item map[string]types.AttributeValue) {
		id, _ := item[sellers.AttrSellerID].(*types.AttributeValueMemberS)
		if id == nil {
			return
		}
		num := func(name string) int64 {
			v, _ := item[name].(*types.AttributeValueMemberN)
			if v == nil {
				return 0
			}
			n, _ := strconv.ParseInt(v.Value, 10, 64)
			return n
		}
		g := got[id.Value]
		g.Count += num("product_count")
		g.Cents += num("cents_EUR")
		got[id.Value] = g
	})
	if err != nil {
		return nil, err
	}
	var diff []string
	for s, w := range want {
		if g := got[s]; g != w {
			diff = append(diff, fmt.Sprintf("seller %s: count %d total %d, want %d and %d", s[:8], g.Count, g.Cents, w.Count, w.Cents))
		}
	}
	return diff, nil
}

// events is the number of distinct events the truth counts.
func (t truth) events() int {
	n := 0
	for _, s := range t {
		n += int(s.Count)
	}
	return n
}

// queue is the SQS queue of one consumer phase, in memory: message
// indexes in order, each one's receive count, and the messages in flight.
type queue struct {
	mu          sync.Mutex
	cond        *sync.Cond
	ready       []int
	receives    []int
	inFlight    int
	redelivered int
	dead        int
	aborted     bool
}

func newQueue(n int) *queue {
	q := &queue{ready: make([]int, n), receives: make([]int, n)}
	for i := range q.ready {
		q.ready[i] = i
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// take receives up to n messages; it waits while the queue is empty but
// messages are in flight (they may come back), and reports false once
// every message is settled.
func (q *queue) take(n int) (batchMsg, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ready) == 0 && q.inFlight > 0 && !q.aborted {
		q.cond.Wait()
	}
	if len(q.ready) == 0 || q.aborted {
		return batchMsg{}, false
	}
	k := min(n, len(q.ready))
	b := batchMsg{Messages: append([]int(nil), q.ready[:k]...)}
	q.ready = q.ready[k:]
	for _, i := range b.Messages {
		q.receives[i]++
		b.Receives = append(b.Receives, q.receives[i])
	}
	q.inFlight += k
	return b, true
}

// settle deletes a batch's messages except the failed ones, which become
// visible again at the end of the queue, or go to the dead-letter queue
// after maxReceives.
func (q *queue) settle(b batchMsg, failed []int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inFlight -= len(b.Messages)
	for _, i := range failed {
		if q.receives[i] >= maxReceives {
			q.dead++
			continue
		}
		q.redelivered++
		q.ready = append(q.ready, i)
	}
	q.cond.Broadcast()
}

func (q *queue) abort() {
	q.mu.Lock()
	q.aborted = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// invoke sends one batch and waits for its answer.
func (p *proc) invoke(line string) (runnerMsg, error) {
	if err := p.send("invoke " + line); err != nil {
		return runnerMsg{}, err
	}
	m, err := p.next()
	if err != nil {
		return m, err
	}
	if m.Phase != "invoked" {
		return m, fmt.Errorf("invoke: runner answered %q (see %s)", m.Phase, p.log.Name())
	}
	return m, nil
}

// startConsumer starts one consumer runner and waits for its warm-up.
func (b *bench) startConsumer(impl string, args []string, logName string) (*proc, map[string]string, error) {
	const fn = "sellerstats"
	if impl == ConsumerOurs {
		return b.startCmd(fn, b.o.goconsumer, args, logName)
	}
	return b.startCmd(fn, b.o.node, append([]string{filepath.Join(b.o.ptDir, "consume.mjs")}, args...), logName)
}

// createPowertoolsTable creates an idempotency table as Powertools'
// DynamoDBPersistenceLayer expects it: hash key id (S), TTL on expiration.
func (b *bench) createPowertoolsTable(ctx context.Context, name string) error {
	_, err := b.direct.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	_, err = b.direct.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String("expiration"), Enabled: aws.Bool(true),
		},
	})
	return err
}

// consumers runs workload 4: for each seller count, one set of events,
// then each concurrency with both implementations, alternating which
// runs first.
func (b *bench) consumers(ctx context.Context) error {
	sellerCounts, err := ints(b.o.consumerSellers)
	if err != nil {
		return fmt.Errorf("-consumer-sellers: %w", err)
	}
	procCounts, err := ints(b.o.consumerProcs)
	if err != nil {
		return fmt.Errorf("-consumer-procs: %w", err)
	}
	turn := 0
	for _, s := range sellerCounts {
		set, err := newConsumerSet(b.o.work, b.o.consumerEvents, s, 20)
		if err != nil {
			return err
		}
		for _, procs := range procCounts {
			order := slices.Clone(consumerImpls)
			if turn%2 == 1 {
				slices.Reverse(order)
			}
			turn++
			for _, impl := range order {
				p, err := b.consume(ctx, impl, set, procs)
				if err != nil {
					return fmt.Errorf("%s consumer, %d sellers, %d invocations: %w", impl, s, procs, err)
				}
				b.res.Consumer = append(b.res.Consumer, p)
			}
		}
	}
	return nil
}

// ints parses a comma-separated list of positive integers.
func ints(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
