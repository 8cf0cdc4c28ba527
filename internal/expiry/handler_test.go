package expiry_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/expiry"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// world is the three tables with expired and live items in each: want
// is what a full sweep leaves, by table.
type world struct {
	env   *ddbtest.Env
	store *idem.Store
	want  map[string]map[string]bool
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	env := ddbtest.New(t)
	store, err := idem.NewStore(env.Client, env.Tables.Idempotency, idem.WithTableKind(idemtable.Regional))
	require.NoError(t, err)
	w := &world{env: env, store: store, want: map[string]map[string]bool{
		env.Tables.Idempotency: {expiry.CheckpointID: true}, env.Tables.Outbox: {}, env.Tables.Callers: {},
	}}
	now := time.Now().Unix()
	for i := range 9 {
		scope, err := idem.NewScope("POST /products", "caller", fmt.Sprintf("key-%d", i))
		require.NoError(t, err)
		_, err = store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) { return idem.Response{Status: 201}, nil })
		require.NoError(t, err)
		id := scope.ID()
		if i%3 == 0 {
			w.want[env.Tables.Idempotency][id] = true // live: its retention runs
			continue
		}
		_, err = env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{ // its retention has passed
			TableName: aws.String(env.Tables.Idempotency), Key: map[string]types.AttributeValue{idemtable.KeyAttribute: s(id)},
			UpdateExpression:          aws.String("SET #e = :e"),
			ExpressionAttributeNames:  map[string]string{"#e": idemtable.TTLAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{":e": n(now - 60)},
		})
		require.NoError(t, err)
	}
	for i := range 12 {
		exp := now - 60
		if i%4 == 0 {
			exp = now + 3600
			w.want[env.Tables.Outbox][fmt.Sprintf("p-%03d", i)] = true
		}
		put(t, env.Client, env.Tables.Outbox, outboxItem(i, exp))
		id := fmt.Sprintf("window|%d|c|%d", now-now%10, i)
		exp = now - 1
		if i%4 == 0 {
			exp = now + 10
			w.want[env.Tables.Callers][id] = true
		}
		put(t, env.Client, env.Tables.Callers, map[string]types.AttributeValue{"id": s(id), "creates": n(1), "expires_at": n(exp)})
	}
	put(t, env.Client, env.Tables.Callers, map[string]types.AttributeValue{"id": s("grant|c|0"), "seller_ids": &types.AttributeValueMemberSS{Value: []string{"*"}}})
	w.want[env.Tables.Callers]["grant|c|0"] = true
	return w
}

func (w *world) handler(t *testing.T, out *logbuf.Buffer, cfg expiry.Config) *expiry.Handler {
	t.Helper()
	rec, err := metrics.New(out, "", "sweeper")
	require.NoError(t, err)
	cfg.IdempotencyTable = w.env.Tables.Idempotency
	cfg.Outbox, cfg.Windows = expiry.Outbox(w.env.Tables.Outbox), expiry.Windows(w.env.Tables.Callers)
	h, err := expiry.NewHandler(w.env.Client, w.store, cfg, slog.New(slog.NewJSONHandler(out, nil)), rec)
	require.NoError(t, err)
	return h
}

func (w *world) left(t *testing.T) map[string]map[string]bool {
	t.Helper()
	return map[string]map[string]bool{
		w.env.Tables.Idempotency: ids(t, w.env.Client, w.env.Tables.Idempotency, idemtable.KeyAttribute),
		w.env.Tables.Outbox:      ids(t, w.env.Client, w.env.Tables.Outbox, "aggregate_id"),
		w.env.Tables.Callers:     ids(t, w.env.Client, w.env.Tables.Callers, "id"),
	}
}

// One invocation with time enough sweeps the three tables to their end:
// the expired records, outbox items and window counters deleted, the
// live ones and the grants kept; its metrics line counts them.
func TestHandlerSweepsTheThreeTables(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := &logbuf.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := w.handler(t, out, expiry.Config{PageSize: 5}).Handle(ctx)
	require.NoError(t, err)
	assert.Equal(t, 6, res.Idempotency.Deleted)
	assert.Equal(t, 9, res.Outbox.Deleted)
	assert.Equal(t, 9, res.Windows.Deleted)
	assert.True(t, res.Idempotency.Done && res.Outbox.Done && res.Windows.Done)
	assert.Zero(t, res.Failed)
	assert.Equal(t, w.want, w.left(t))

	lines := out.Metrics(t)
	require.Len(t, lines, 1)
	assert.EqualValues(t, 24, lines[0]["Deleted"])
	assert.EqualValues(t, 0, lines[0]["Failed"])
	assert.Equal(t, res.Idempotency.Pages+res.Outbox.Pages+res.Windows.Pages, int(lines[0]["Pages"].(float64)))
}

// Bounded to a few pages, each invocation does no more, leaves where it
// stopped in the checkpoint, and the next resumes there: a few
// invocations sweep everything, each item deleted once.
func TestHandlerResumesFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := &logbuf.Buffer{}
	h := w.handler(t, out, expiry.Config{PageSize: 2, MaxPages: 3})
	deleted, runs := 0, 0
	var done [3]bool // each table swept to its end once: it starts over at the next run
	for {
		res, err := h.Handle(context.Background())
		require.NoError(t, err)
		runs++
		pages := res.Idempotency.Pages + res.Outbox.Pages + res.Windows.Pages
		require.LessOrEqual(t, pages, 3, "run %d", runs)
		deleted += res.Idempotency.Deleted + res.Outbox.Deleted + res.Windows.Deleted
		done = [3]bool{done[0] || res.Idempotency.Done, done[1] || res.Outbox.Done, done[2] || res.Windows.Done}
		if done == [3]bool{true, true, true} {
			break
		}
		require.Less(t, runs, 50, "never done")
	}
	assert.Greater(t, runs, 2, "resumed")
	assert.Equal(t, 24, deleted)
	assert.Equal(t, w.want, w.left(t))
}

// An invocation whose deadline is within the margin starts no page and
// keeps the checkpoint as it was; a table that cannot be swept fails the
// invocation while the others are swept.
func TestHandlerBoundsAndFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := &logbuf.Buffer{}
	h := w.handler(t, out, expiry.Config{PageSize: 2, MaxPages: 1})
	_, err := h.Handle(context.Background()) // one page of the records: a checkpoint
	require.NoError(t, err)
	before, err := w.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(w.env.Tables.Idempotency),
		Key: map[string]types.AttributeValue{idemtable.KeyAttribute: s(expiry.CheckpointID)}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Contains(t, before.Item, "records")

	ctx, cancel := context.WithTimeout(context.Background(), expiry.Margin/2)
	defer cancel()
	res, err := h.Handle(ctx)
	require.NoError(t, err)
	assert.Zero(t, res.Idempotency.Pages+res.Outbox.Pages+res.Windows.Pages, "no page within the margin")
	after, err := w.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(w.env.Tables.Idempotency),
		Key: map[string]types.AttributeValue{idemtable.KeyAttribute: s(expiry.CheckpointID)}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	assert.Equal(t, before.Item["records"], after.Item["records"], "the checkpoint kept")

	rec, err := metrics.New(out, "", "sweeper")
	require.NoError(t, err)
	broken, err := expiry.NewHandler(w.env.Client, w.store, expiry.Config{IdempotencyTable: w.env.Tables.Idempotency,
		Outbox: expiry.Outbox("no-such-table"), Windows: expiry.Windows(w.env.Tables.Callers)}, slog.New(slog.NewJSONHandler(out, nil)), rec)
	require.NoError(t, err)
	res, err = broken.Handle(context.Background())
	require.Error(t, err)
	assert.ErrorContains(t, err, "no-such-table")
	assert.Equal(t, 1, res.Failed)
	assert.Equal(t, 9, res.Windows.Deleted, "the other tables swept all the same")
	assert.Equal(t, w.want[w.env.Tables.Callers], w.left(t)[w.env.Tables.Callers])
	lines := out.Metrics(t)
	assert.EqualValues(t, 1, lines[len(lines)-1]["Failed"])

	_, err = expiry.NewHandler(nil, w.store, expiry.Config{}, slog.Default(), rec)
	assert.Error(t, err)
}

// Handlers running at once (the schedule's run and a manual one, or two
// Regions' sweepers) delete each expired record, outbox item and window
// counter once between them, and none of the live ones.
func TestConcurrentHandlersDeleteEachItemOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := &logbuf.Buffer{}
	const handlers = 6
	results := make([]expiry.Result, handlers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range handlers {
		h := w.handler(t, out, expiry.Config{PageSize: 2})
		wg.Go(func() {
			<-start
			res, err := h.Handle(context.Background())
			assert.NoError(t, err)
			results[i] = res
		})
	}
	close(start)
	wg.Wait()
	var records, events, windows int
	for _, r := range results {
		records += r.Idempotency.Deleted
		events += r.Outbox.Deleted
		windows += r.Windows.Deleted
	}
	t.Logf("handlers=%d deleted: records=%d events=%d windows=%d", handlers, records, events, windows)
	assert.Equal(t, 6, records, "each expired record deleted once")
	assert.Equal(t, 9, events, "each expired outbox item deleted once")
	assert.Equal(t, 9, windows, "each expired window counter deleted once")
	assert.Equal(t, w.want, w.left(t))
}
