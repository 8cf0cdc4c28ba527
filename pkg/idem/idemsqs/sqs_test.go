package idemsqs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// deposit is what a message asks for: cents to an account.
type deposit struct {
	Account string `json:"account"`
	Cents   int64  `json:"cents"`
}

var errPoison = errors.New("poison")

// decode reads a message body "<event id> <account> <cents>", or refuses
// it as poison.
func decode(m events.SQSMessage) (idemsqs.Entry[deposit], error) {
	var id, account string
	var cents int64
	if _, err := fmt.Sscanf(m.Body, "%s %s %d", &id, &account, &cents); err != nil {
		return idemsqs.Entry[deposit]{}, fmt.Errorf("%w: %q: %v", errPoison, m.Body, err)
	}
	return idemsqs.Entry[deposit]{Principal: "bank", Key: id, Value: deposit{account, cents}}, nil
}

// shared is one ADD per account for the deposits a transaction executes.
func shared(table string) func([]deposit, []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
	return func(ds []deposit, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		sums := map[string]int64{}
		var order []string
		for _, d := range ds {
			if _, ok := sums[d.Account]; !ok {
				order = append(order, d.Account)
			}
			sums[d.Account] += d.Cents
		}
		out := make([]types.TransactWriteItem, 0, len(order))
		for _, a := range order {
			out = append(out, types.TransactWriteItem{Update: &types.Update{
				TableName:                 aws.String(table),
				Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: a}},
				UpdateExpression:          aws.String("ADD #total :c, #deposits :n"),
				ExpressionAttributeNames:  map[string]string{"#total": "total", "#deposits": "deposits"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":c": num(sums[a]), ":n": num(int64(countOf(ds, a)))},
			}})
		}
		return out, nil
	}
}

func countOf(ds []deposit, account string) (n int) {
	for _, d := range ds {
		if d.Account == account {
			n++
		}
	}
	return n
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

type fixture struct {
	server *idemtest.Server
	db     *dynamodb.Client
	store  *idem.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	server := idemtest.New(t)
	db := server.Client()
	ctx := context.Background()
	must.NoError(t, idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}))
	_, err := db.CreateTable(ctx, idemtable.Input("accounts", idemtable.Layout{}))
	must.NoError(t, err)
	store, err := idem.NewStore(db, "idempotency", idem.WithConflictAttempts(10))
	must.NoError(t, err)
	return &fixture{server: server, db: db, store: store}
}

func (f *fixture) account(t *testing.T, id string) (total, deposits int64) {
	t.Helper()
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("accounts"), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	})
	must.NoError(t, err)
	get := func(name string) int64 {
		if v, ok := out.Item[name].(*types.AttributeValueMemberN); ok {
			n, err := strconv.ParseInt(v.Value, 10, 64)
			must.NoError(t, err)
			return n
		}
		return 0
	}
	return get("total"), get("deposits")
}

func message(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:deposits"}
}

// TestTransactHoldsTheTruthUnderRedelivery: 500 messages (deposits of 5
// accounts, 10% delivered twice or three times, 20 poison) through a queue
// drained by 8 concurrent invocations in batches of 10, each failed
// message redelivered up to 5 receives, on the strict store with
// transactions held 2 ms: every account's total is the sum of its
// distinct deposits, no valid message is dead-lettered, every poison one
// is.
func TestTransactHoldsTheTruthUnderRedelivery(t *testing.T) {
	f := newFixture(t)
	f.server.SetTransactionLatency(2 * time.Millisecond)
	rng := rand.New(rand.NewPCG(21, 1))
	truth := map[string]int64{}
	counts := map[string]int64{}
	var msgs []events.SQSMessage
	for i := range 480 {
		d := deposit{Account: fmt.Sprintf("acct-%d", rng.IntN(5)), Cents: 1 + rng.Int64N(10_000)}
		truth[d.Account] += d.Cents
		counts[d.Account]++
		times := 1
		if rng.IntN(10) == 0 {
			times = 2 + rng.IntN(2)
		}
		for r := range times {
			msgs = append(msgs, message(fmt.Sprintf("m-%d-%d", i, r), fmt.Sprintf("ev-%d %s %d", i, d.Account, d.Cents)))
		}
	}
	for i := range 20 {
		msgs = append(msgs, message(fmt.Sprintf("poison-%d", i), "not a deposit"))
	}
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })

	q := newQueue(msgs)
	var wg sync.WaitGroup
	f.server.ResetCalls()
	for range 8 {
		wg.Go(func() {
			for {
				batch := q.take(10)
				if batch == nil {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				resp, results := consumer(t, f.store, "deposit", decode).Transact(ctx, events.SQSEvent{Records: batch}, shared("accounts"))
				cancel()
				must.Len(t, results, len(batch))
				q.settle(batch, resp)
			}
		})
	}
	wg.Wait()
	calls := 0
	for _, n := range f.server.CallCounts() {
		calls += n
	}
	t.Logf("%d messages (480 events) in %d receives: %d DynamoDB calls, %.2f per event; redelivered %d", len(msgs), q.receives, calls, float64(calls)/480, q.redelivered)
	for a, want := range truth {
		total, n := f.account(t, a)
		check.Equal(t, want, total, "account %s's total is the sum of its distinct deposits", a)
		check.Equal(t, counts[a], n, "account %s's deposits are counted once each", a)
	}
	check.Len(t, q.dead, 20, "only the poison reaches the dead-letter queue")
	for _, m := range q.dead {
		check.Equal(t, "not a deposit", m.Body)
	}
}

// queue is an SQS queue: a failed message comes back until its fifth
// receive, then goes to the dead-letter queue.
type queue struct {
	mu          sync.Mutex
	pending     []events.SQSMessage
	received    map[string]int
	dead        []events.SQSMessage
	receives    int
	redelivered int
}

func newQueue(msgs []events.SQSMessage) *queue {
	return &queue{pending: append([]events.SQSMessage(nil), msgs...), received: map[string]int{}}
}

func (q *queue) take(n int) []events.SQSMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return nil
	}
	n = min(n, len(q.pending))
	batch := q.pending[:n:n]
	q.pending = q.pending[n:]
	for _, m := range batch {
		q.received[m.MessageId]++
		q.receives++
	}
	return batch
}

func (q *queue) settle(batch []events.SQSMessage, resp events.SQSEventResponse) {
	q.mu.Lock()
	defer q.mu.Unlock()
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for _, m := range batch {
		switch {
		case !failed[m.MessageId]:
		case q.received[m.MessageId] >= 5:
			q.dead = append(q.dead, m)
		default:
			q.redelivered++
			q.pending = append(q.pending, m)
		}
	}
}

// TestRunAppliesAnExternalEffectOnce: 32 invocations at once, each with a
// batch holding the same event: the effect runs once, and every message
// is applied or acknowledged as a duplicate, or reported in flight for
// its redelivery to replay.
func TestRunAppliesAnExternalEffectOnce(t *testing.T) {
	f := newFixture(t)
	f.server.SetTransactionLatency(time.Millisecond)
	var effects atomic.Int64
	effect := func(ctx context.Context, d deposit) error {
		effects.Add(1)
		time.Sleep(20 * time.Millisecond)
		return nil
	}
	var wg sync.WaitGroup
	var applied, duplicate, inflight atomic.Int64
	for i := range 32 {
		wg.Go(func() {
			ev := events.SQSEvent{Records: []events.SQSMessage{message(fmt.Sprintf("m-%d", i), "ev-1 acct-1 500")}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, results := consumer(t, f.store, "email", decode).Run(ctx, ev, effect)
			switch r := results[0]; {
			case r.Err == nil && r.Outcome == idem.OutcomeExecuted:
				applied.Add(1)
				check.Empty(t, resp.BatchItemFailures)
			case r.Err == nil && r.Outcome == idem.OutcomeReplayed:
				duplicate.Add(1)
				check.Empty(t, resp.BatchItemFailures)
			case errors.Is(r.Err, idem.ErrInFlight):
				inflight.Add(1)
				check.Len(t, resp.BatchItemFailures, 1, "in flight: the queue redelivers it")
			default:
				t.Errorf("unexpected result %+v", r)
			}
		})
	}
	wg.Wait()
	t.Logf("32 concurrent deliveries: %d applied, %d duplicates, %d in flight", applied.Load(), duplicate.Load(), inflight.Load())
	check.EqualValues(t, 1, effects.Load(), "the effect ran once")
	check.EqualValues(t, 1, applied.Load())
	check.EqualValues(t, 32, applied.Load()+duplicate.Load()+inflight.Load())

	// The in-flight ones' redeliveries replay.
	_, results := consumer(t, f.store, "email", decode).Run(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m-again", "ev-1 acct-1 500")}}, effect)
	check.Equal(t, idem.OutcomeReplayed, results[0].Outcome)
	check.NoError(t, results[0].Err)
	check.EqualValues(t, 1, effects.Load())
}

// A failed effect releases its key: the redelivery runs it; poison and
// key reuse are reported; on a FIFO queue everything after the first
// failure is reported too, untried.
func TestRunReportsOnlyWhatFailed(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int64
	fail := true
	effect := func(ctx context.Context, d deposit) error {
		runs.Add(1)
		if d.Account == "flaky" && fail {
			return errors.New("downstream timeout")
		}
		return nil
	}
	batch := []events.SQSMessage{
		message("a", "ev-a acct 100"),
		message("b", "ev-b flaky 200"),
		message("c", "garbage"),
		message("d", "ev-d acct 300"),
	}
	resp, results := consumer(t, f.store, "email", decode).Run(context.Background(), events.SQSEvent{Records: batch}, effect)
	check.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "b"}, {ItemIdentifier: "c"}}, resp.BatchItemFailures)
	check.ErrorIs(t, results[2].Err, errPoison)
	check.EqualValues(t, 3, runs.Load())

	fail = false
	_, results = consumer(t, f.store, "email", decode).Run(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("b2", "ev-b flaky 200"), message("a2", "ev-a acct 999")}}, effect)
	check.Equal(t, idem.OutcomeExecuted, results[0].Outcome, "the failed effect's key was released: its redelivery runs")
	check.ErrorIs(t, results[1].Err, idem.ErrKeyReuse, "the same event id with another payload")
	check.EqualValues(t, 4, runs.Load())

	fifo := []events.SQSMessage{message("f1", "ev-f1 acct 1"), message("f2", "garbage"), message("f3", "ev-f3 acct 3")}
	for i := range fifo {
		fifo[i].EventSourceARN = "arn:aws:sqs:eu-west-1:123456789012:deposits.fifo"
	}
	resp, results = consumer(t, f.store, "email", decode).Run(context.Background(), events.SQSEvent{Records: fifo}, effect)
	check.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "f2"}, {ItemIdentifier: "f3"}}, resp.BatchItemFailures)
	check.ErrorIs(t, results[2].Err, idemsqs.ErrSkipped)
	check.EqualValues(t, 5, runs.Load(), "f3 was not tried")
}

// A batch of 9 duplicates and 1 new message: one transaction, or two; the
// duplicates are acknowledged; a message reusing an id is reported.
func TestTransactAcknowledgesDuplicates(t *testing.T) {
	f := newFixture(t)
	var first []events.SQSMessage
	for i := range 9 {
		first = append(first, message(fmt.Sprintf("m-%d", i), fmt.Sprintf("ev-%d acct 10", i)))
	}
	resp, _ := consumer(t, f.store, "deposit", decode).Transact(context.Background(), events.SQSEvent{Records: first}, shared("accounts"))
	must.Empty(t, resp.BatchItemFailures)
	f.server.ResetCalls()
	batch := append(append([]events.SQSMessage(nil), first...), message("new", "ev-new acct 5"), message("reuse", "ev-0 acct 11"))
	for i := range 9 {
		batch[i].MessageId += "-again"
	}
	resp, results := consumer(t, f.store, "deposit", decode).Transact(context.Background(), events.SQSEvent{Records: batch}, shared("accounts"))
	check.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "reuse"}}, resp.BatchItemFailures)
	for _, r := range results[:9] {
		check.Equal(t, idem.OutcomeReplayed, r.Outcome)
	}
	check.Equal(t, idem.OutcomeExecuted, results[9].Outcome)
	check.ErrorIs(t, results[10].Err, idem.ErrKeyReuse)
	tx := f.server.Calls(idemtest.OpTransactWriteItems)
	check.LessOrEqual(t, tx, 2, "the new message applies in at most 2 transactions")
	t.Logf("9 duplicates + 1 new + 1 reuse: %v", f.server.CallCounts())
	total, n := f.account(t, "acct")
	check.EqualValues(t, 95, total)
	check.EqualValues(t, 10, n)
}

// On a FIFO queue, Transact applies nothing after a failed message: a
// message group's later messages must not land before an earlier one.
func TestTransactKeepsFIFOOrder(t *testing.T) {
	f := newFixture(t)
	fifo := []events.SQSMessage{message("f1", "ev-f1 acct 1"), message("f2", "garbage"), message("f3", "ev-f3 acct 7")}
	for i := range fifo {
		fifo[i].EventSourceARN = "arn:aws:sqs:eu-west-1:123456789012:deposits.fifo"
	}
	resp, results := consumer(t, f.store, "deposit", decode).Transact(context.Background(), events.SQSEvent{Records: fifo}, shared("accounts"))
	check.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "f2"}, {ItemIdentifier: "f3"}}, resp.BatchItemFailures)
	check.Equal(t, idem.OutcomeExecuted, results[0].Outcome)
	check.ErrorIs(t, results[2].Err, idemsqs.ErrSkipped)
	check.Equal(t, idem.OutcomeRejected, results[2].Outcome, "skipped: never tried")
	total, n := f.account(t, "acct")
	check.EqualValues(t, 1, total, "f3 did not land before f2")
	check.EqualValues(t, 1, n)
}

// A value larger than the store's response limit is applied once and its
// redeliveries acknowledged: only its fingerprint is kept, not the value.
func TestAValueOfAnySizeIsAppliedOnce(t *testing.T) {
	f := newFixture(t)
	store, err := idem.NewStore(f.db, "idempotency", idem.WithMaxResponseBytes(200))
	must.NoError(t, err)
	big := func(m events.SQSMessage) (idemsqs.Entry[string], error) {
		return idemsqs.Entry[string]{Principal: "p", Key: m.Body, Value: strings.Repeat("x", 1000)}, nil
	}
	var runs atomic.Int64
	for range 2 {
		_, results := consumer(t, store, "big", big).Run(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m", "run-1")}},
			func(context.Context, string) error { runs.Add(1); return nil })

		must.NoError(t, results[0].Err)
	}
	check.EqualValues(t, 1, runs.Load())
	for i := range 2 {
		_, results := consumer(t, store, "big", big).Transact(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m", "tx-1")}},
			func([]string, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })

		must.NoError(t, results[0].Err)
		check.Equal(t, []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed}[i], results[0].Outcome)
	}
}

// An effect that ran but whose completion could not be recorded (the
// fenced UpdateItem throttled past the SDK's retries) is acknowledged:
// reporting it failed would have the queue redeliver it after the
// visibility timeout, past the lease, and the redelivery would take the
// key over and run the effect again.
func TestRunAcknowledgesAnEffectWhoseCompletionWasNotRecorded(t *testing.T) {
	f := newFixture(t)
	// A completion is tried until the lease ends (less the margin), then
	// reported not recorded: a short lease keeps the test short.
	store, err := idem.NewStore(f.db, "idempotency", idem.WithLease(time.Second, 100*time.Millisecond), idem.WithRetention(time.Hour))
	must.NoError(t, err)
	var effects atomic.Int64
	// The effect happens, then every completion attempt is throttled.
	throttled := func(_ context.Context, d deposit) error {
		effects.Add(1)
		f.server.ClearFaults()
		if d.Account == "throttled" {
			f.server.Inject(idemtest.OpUpdateItem, idemtest.Throttled, 1000)
		}
		return nil
	}
	t.Cleanup(f.server.ClearFaults)
	ev := events.SQSEvent{Records: []events.SQSMessage{message("m-1", "ev-1 throttled 500")}}
	resp, results := consumer(t, store, "email", decode).Run(context.Background(), ev, throttled)
	must.Len(t, results, 1)
	check.Equal(t, idem.OutcomeNotRecorded, results[0].Outcome)
	check.ErrorIs(t, results[0].Err, idem.ErrNotRecorded, "the caller can still log why")
	check.False(t, results[0].Redeliver())
	check.Empty(t, resp.BatchItemFailures, "the effect happened: no redelivery")
	check.EqualValues(t, 1, effects.Load())

	// On a FIFO queue the next message goes on: this one was applied.
	fifo := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "f-1", Body: "ev-2 throttled 1", EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:q.fifo"},
		{MessageId: "f-2", Body: "ev-3 acct-1 1", EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:q.fifo"},
	}}
	resp, results = consumer(t, store, "email", decode).Run(context.Background(), fifo, throttled)
	check.Empty(t, resp.BatchItemFailures)
	check.Equal(t, idem.OutcomeNotRecorded, results[0].Outcome)
	check.Equal(t, idem.OutcomeExecuted, results[1].Outcome)
	check.EqualValues(t, 3, effects.Load())
}

// A message whose producer names no principal is refused, never put in a
// scope shared with every other such message.
func TestAnEmptyPrincipalIsRefused(t *testing.T) {
	f := newFixture(t)
	anon := func(m events.SQSMessage) (idemsqs.Entry[deposit], error) {
		e, err := decode(m)
		e.Principal = ""
		return e, err
	}
	var effects atomic.Int64
	effect := func(context.Context, deposit) error { effects.Add(1); return nil }
	ev := events.SQSEvent{Records: []events.SQSMessage{message("m-1", "ev-1 acct-1 500")}}
	_, results := consumer(t, f.store, "email", anon).Run(context.Background(), ev, effect)
	check.ErrorIs(t, results[0].Err, idem.ErrInvalidKey)
	_, results = consumer(t, f.store, "deposits", anon).Transact(context.Background(), ev, shared("accounts"))
	check.ErrorIs(t, results[0].Err, idem.ErrInvalidKey)
	check.Zero(t, effects.Load())
}

// consumer is idemsqs.New, which must succeed.
func consumer[T any](t testing.TB, store *idem.Store, operation string, decode func(events.SQSMessage) (idemsqs.Entry[T], error), opts ...idemsqs.Option) *idemsqs.Consumer[T] {
	t.Helper()
	c, err := idemsqs.New(store, operation, decode, opts...)
	must.NoError(t, err)
	return c
}

// New refuses what it cannot serve, before any batch; WithRetention is
// the retention of the consumer's records alone.
func TestNewAndWithRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for name, build := range map[string]func() error{
		"no store":     func() error { _, err := idemsqs.New(nil, "deposit", decode); return err },
		"no operation": func() error { _, err := idemsqs.New(f.store, "", decode); return err },
		"no decode": func() error {
			_, err := idemsqs.New[deposit](f.store, "deposit", nil)
			return err
		},
		"retention under the lease": func() error {
			_, err := idemsqs.New(f.store, "deposit", decode, idemsqs.WithRetention(time.Second))
			return err
		},
	} {
		check.Error(t, build(), name)
	}

	week := consumer(t, f.store, "deposit", decode, idemsqs.WithRetention(7*24*time.Hour))
	ev := events.SQSEvent{Records: []events.SQSMessage{message("m-1", "e-week acc-1 5")}}
	before := time.Now()
	_, results := week.Transact(context.Background(), ev, shared("accounts"))
	must.NoError(t, results[0].Err)
	sc, err := idem.NewScope("deposit", "bank", "e-week")
	must.NoError(t, err)
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("idempotency"), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: sc.ID()}},
	})
	must.NoError(t, err)
	exp, err := strconv.ParseInt(out.Item["expires_at"].(*types.AttributeValueMemberN).Value, 10, 64)
	must.NoError(t, err)
	check.Equal(t, 7*24*time.Hour, time.Unix(exp, 0).Sub(before.Truncate(time.Second)).Round(time.Hour))
}
