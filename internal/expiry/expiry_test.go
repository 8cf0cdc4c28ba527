package expiry_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/expiry"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// put writes items, failing the test on any error.
func put(t *testing.T, db *dynamodb.Client, table string, items ...map[string]types.AttributeValue) {
	t.Helper()
	for _, item := range items {
		_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
		require.NoError(t, err)
	}
}

// outboxItem is an outbox item whose expiry is at exp.
func outboxItem(i int, exp int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"aggregate_id": s(fmt.Sprintf("p-%03d", i)), "event_id": s(fmt.Sprintf("e-%03d", i)),
		"payload": s("{}"), "expires_at": n(exp),
	}
}

// ids lists the items left in table, by the attribute attr.
func ids(t *testing.T, db *dynamodb.Client, table, attr string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		for _, item := range page.Items {
			out[item[attr].(*types.AttributeValueMemberS).Value] = true
		}
	}
	return out
}

// The window counters' attributes are access's.
func TestWindowsAreAccessCounters(t *testing.T) {
	t.Parallel()
	assert.Equal(t, access.AttrID, expiry.CallerID)
	assert.Equal(t, access.WindowPrefix, expiry.WindowPrefix)
	assert.Equal(t, access.AttrExpiresAt, expiry.CallerExpiresAt)
}

// A sweep deletes exactly the expired items, page by page, and leaves the
// live ones; on the callers table only window counters, never a grant.
func TestSweepDeletesExactlyTheExpiredItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := ddbtest.New(t)
	now := time.Now().Unix()
	want := map[string]bool{}
	for i := range 50 {
		exp := now - 60 // expired a minute ago
		if i%5 == 0 {
			exp = now + 3600 // live for an hour
			want[fmt.Sprintf("p-%03d", i)] = true
		}
		put(t, env.Client, env.Tables.Outbox, outboxItem(i, exp))
	}
	st, err := expiry.Sweep(ctx, env.Client, expiry.Outbox(env.Tables.Outbox), expiry.Options{PageSize: 7})
	require.NoError(t, err)
	assert.Equal(t, 40, st.Expired)
	assert.Equal(t, 40, st.Deleted)
	assert.Zero(t, st.Kept)
	assert.Greater(t, st.Pages, 7, "50 items, 7 a page")
	assert.Nil(t, st.Next, "swept to the end")
	assert.Positive(t, st.WriteUnits)
	assert.Equal(t, want, ids(t, env.Client, env.Tables.Outbox, "aggregate_id"))

	put(t, env.Client, env.Tables.Callers,
		map[string]types.AttributeValue{"id": s("window|100|alice|0"), "creates": n(3), "expires_at": n(now - 1)},
		map[string]types.AttributeValue{"id": s("window|100|alice|1"), "creates": n(1), "expires_at": n(now + 10)},
		// A grant never expires; one that carried an expiry would still
		// not be the sweep's.
		map[string]types.AttributeValue{"id": s("grant|alice|0"), "seller_ids": &types.AttributeValueMemberSS{Value: []string{"s"}}},
		map[string]types.AttributeValue{"id": s("grant|bob|0"), "expires_at": n(now - 100)},
	)
	st, err = expiry.Sweep(ctx, env.Client, expiry.Windows(env.Tables.Callers), expiry.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, st.Deleted)
	assert.Equal(t, map[string]bool{"window|100|alice|1": true, "grant|alice|0": true, "grant|bob|0": true},
		ids(t, env.Client, env.Tables.Callers, "id"))
}

// A bounded sweep stops after MaxPages with where to resume; resumed
// until Next is nil, it has deleted every expired item once.
func TestSweepResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := ddbtest.New(t)
	now := time.Now().Unix()
	for i := range 30 {
		put(t, env.Client, env.Tables.Outbox, outboxItem(i, now-1))
	}
	var total expiry.Stats
	opts := expiry.Options{PageSize: 4, MaxPages: 2}
	runs := 0
	for {
		st, err := expiry.Sweep(ctx, env.Client, expiry.Outbox(env.Tables.Outbox), opts)
		require.NoError(t, err)
		runs++
		assert.LessOrEqual(t, st.Pages, 2)
		total.Add(st)
		if st.Next == nil {
			break
		}
		opts.Start = st.Next
		require.Less(t, runs, 100, "the sweep never ends")
	}
	assert.Greater(t, runs, 3)
	assert.Equal(t, 30, total.Deleted)
	assert.Empty(t, ids(t, env.Client, env.Tables.Outbox, "aggregate_id"))
}

// renewing is a client that, before the first delete of each item in
// renew, writes the item again, as a writer between the sweep's read and
// its delete would: with a later expiry (live), or with another expiry
// that has passed too.
type renewing struct {
	*dynamodb.Client
	t     *testing.T
	table string
	renew map[string]int64 // aggregate id -> its new expiry
	done  sync.Map
}

func (r *renewing) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	id := in.Key["aggregate_id"].(*types.AttributeValueMemberS).Value
	if exp, ok := r.renew[id]; ok {
		if _, again := r.done.LoadOrStore(id, true); !again {
			_, err := r.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(r.table), Key: in.Key,
				UpdateExpression:          aws.String("SET expires_at = :e"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":e": n(exp)},
			})
			require.NoError(r.t, err)
		}
	}
	return r.Client.DeleteItem(ctx, in, opts...)
}

// An item written again between the sweep's read and its delete is never
// deleted: renewed to live, or to another expiry that has passed (its
// condition names the expiry it read). It is counted Kept.
func TestSweepKeepsItemsRenewedBetweenReadAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := ddbtest.New(t)
	now := time.Now().Unix()
	for i := range 10 {
		put(t, env.Client, env.Tables.Outbox, outboxItem(i, now-60))
	}
	db := &renewing{Client: env.Client, t: t, table: env.Tables.Outbox, renew: map[string]int64{
		"p-002": now + 3600, // live again
		"p-005": now - 30,   // written again, expired too, but not what the sweep read
	}}
	st, err := expiry.Sweep(ctx, db, expiry.Outbox(env.Tables.Outbox), expiry.Options{PageSize: 3})
	require.NoError(t, err)
	assert.Equal(t, 10, st.Expired)
	assert.Equal(t, 8, st.Deleted)
	assert.Equal(t, 2, st.Kept)
	assert.Equal(t, map[string]bool{"p-002": true, "p-005": true}, ids(t, env.Client, env.Tables.Outbox, "aggregate_id"))

	// The next sweep deletes the one that is expired as written.
	st, err = expiry.Sweep(ctx, env.Client, expiry.Outbox(env.Tables.Outbox), expiry.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, st.Deleted)
	assert.Equal(t, map[string]bool{"p-002": true}, ids(t, env.Client, env.Tables.Outbox, "aggregate_id"))
}

// Sweepers running at once, while a writer renews some of the expired
// items, delete each item once, by one sweeper, and never one the writer
// renewed: every item is either deleted (counted once, over all
// sweepers) or still there, and every renewed one is still there.
func TestConcurrentSweepersDeleteEachItemOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := ddbtest.New(t)
	const items, sweepers = 200, 8
	now := time.Now().Unix()
	live := 0
	for i := range items {
		exp := now - 60
		if i%10 == 0 {
			exp, live = now+3600, live+1
		}
		put(t, env.Client, env.Tables.Outbox, outboxItem(i, exp))
	}
	var deleted, kept, expired atomic.Int64
	renewed := sync.Map{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range sweepers {
		wg.Go(func() {
			<-start
			st, err := expiry.Sweep(ctx, env.Client, expiry.Outbox(env.Tables.Outbox), expiry.Options{PageSize: 9})
			assert.NoError(t, err)
			deleted.Add(int64(st.Deleted))
			kept.Add(int64(st.Kept))
			expired.Add(int64(st.Expired))
		})
	}
	wg.Go(func() { // renews every third expired item, if it is still there
		<-start
		for i := 1; i < items; i += 3 {
			if i%10 == 0 {
				continue
			}
			key := outboxItem(i, 0)
			_, err := env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(env.Tables.Outbox),
				Key:                       map[string]types.AttributeValue{"aggregate_id": key["aggregate_id"], "event_id": key["event_id"]},
				UpdateExpression:          aws.String("SET expires_at = :e"),
				ConditionExpression:       aws.String("attribute_exists(aggregate_id)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":e": n(now + 3600)},
			})
			var ccf *types.ConditionalCheckFailedException
			switch {
			case err == nil:
				renewed.Store(fmt.Sprintf("p-%03d", i), true)
			case !assert.ErrorAs(t, err, &ccf):
			}
		}
	})
	close(start)
	wg.Wait()

	left := ids(t, env.Client, env.Tables.Outbox, "aggregate_id")
	nRenewed := 0
	renewed.Range(func(k, _ any) bool {
		nRenewed++
		assert.True(t, left[k.(string)], "%s was renewed, then deleted", k)
		return true
	})
	t.Logf("sweepers=%d items=%d live=%d renewed=%d deleted=%d kept=%d expired-reads=%d DeleteItem=%d",
		sweepers, items, live, nRenewed, deleted.Load(), kept.Load(), expired.Load(), env.Counter.Get("DeleteItem"))
	assert.EqualValues(t, items, int(deleted.Load())+len(left), "every item deleted once or still there")
	assert.Equal(t, live+nRenewed, len(left), "exactly the live and the renewed ones are left")
	assert.Equal(t, expired.Load(), deleted.Load()+kept.Load(), "each expired read was deleted or kept")
	assert.GreaterOrEqual(t, expired.Load(), int64(items-live-nRenewed), "every sweeper read the whole table")
}
