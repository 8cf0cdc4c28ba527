package idem_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// sweepLayouts are the layouts a sweep reads: a table of its own, a key
// prefix in a shared table, a single-table design with every record in
// one partition (a Query) or each in its own.
var sweepLayouts = map[string]idemtable.Layout{
	"default": {},
	"prefix":  {KeyPrefix: "IDEM#"},
	"single":  {PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY", KeyPrefix: "IDEM#"},
	"spread":  {PartitionKey: "PK", SortKey: "SK", SortValue: "#IDEM"},
}

// A sweep of an MRSC table (no TTL) deletes exactly the expired records,
// in every layout, page by page and resumed where a bounded sweep
// stopped: completed ones, dead holders' claims, and with them the
// apply-once markers their updates left on the counter; never a record
// that is live, nor another item of a shared table, even expired.
func TestSweepDeletesExactlyTheExpiredRecords(t *testing.T) {
	for name, layout := range sweepLayouts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				env := newMRSC(t, idemtest.GlobalConfig{})
				env.grant(t)
				ctx := context.Background()
				db := env.db[regionEast]
				must.NoError(t, idemtable.Create(ctx, db, "records", layout))
				other := layout.Key("not-a-record")
				if layout.SortKey != "" {
					other = map[string]types.AttributeValue{layout.PartitionKey: sAttr("ORDER#1"), layout.SortKey: sAttr("META")}
				}
				if name != "default" {
					// An item of the application's in the shared table, past
					// an expiry of its own.
					item := map[string]types.AttributeValue{"status": sAttr("COMPLETED"), "expires_at": nAttr(1), "fingerprint": sAttr("x")}
					for k, v := range other {
						item[k] = v
					}
					_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("records"), Item: item})
					must.NoError(t, err)
				}
				store, err := idem.NewStore(db, "records", idem.WithLayout(layout))
				must.NoError(t, err)
				var runs struct{ n atomic.Int64 }
				for i := range 4 {
					_, err := store.Execute(ctx, scope(t, "old-"+strconv.Itoa(i)), "fp", mrscEffect(&runs.n))
					must.NoError(t, err)
					_, err = store.Run(ctx, scope(t, "run-"+strconv.Itoa(i)), "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
					must.NoError(t, err)
				}
				_, err = store.Reserve(ctx, scope(t, "dead-holder"), "fp")
				must.NoError(t, err)
				time.Sleep(idem.DefaultRetention + time.Hour)
				for i := range 2 {
					_, err := store.Execute(ctx, scope(t, "fresh-"+strconv.Itoa(i)), "fp", mrscEffect(&runs.n))
					must.NoError(t, err)
				}
				check.Len(t, markers(t, env), 6, "the counter's markers: 4 expired keys', 2 live ones'")

				sweeper, err := idem.NewStore(env.db[regionWest], "records", idem.WithLayout(layout))
				must.NoError(t, err)
				var total idem.SweepStats
				opts := idem.SweepOptions{PageSize: 2, MaxPages: 2}
				for range 20 {
					stats, err := sweeper.Sweep(ctx, opts)
					must.NoError(t, err)
					total.Deleted += stats.Deleted
					total.Markers += stats.Markers
					total.WriteUnits += stats.WriteUnits
					total.ReadUnits += stats.ReadUnits
					if stats.Next == nil {
						break
					}
					opts.Start = stats.Next
				}
				t.Logf("%s: %+v", name, total)
				check.Equal(t, 9, total.Deleted, "4 Execute, 4 Run, 1 dead holder")
				check.Equal(t, 4, total.Markers)
				check.Positive(t, total.ReadUnits)
				check.Positive(t, total.WriteUnits)
				check.Len(t, markers(t, env), 2, "the live keys' markers stay")
				for i := range 2 {
					_, ok, err := store.Get(ctx, scope(t, "fresh-"+strconv.Itoa(i)))
					must.NoError(t, err)
					check.True(t, ok, "a live record stays")
				}
				if name != "default" {
					out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("records"), Key: other, ConsistentRead: aws.Bool(true)})
					must.NoError(t, err)
					check.NotEmpty(t, out.Item, "the application's item stays")
				}
				res, err := store.Execute(ctx, scope(t, "old-0"), "fp", mrscEffect(&runs.n))
				must.NoError(t, err)
				check.Equal(t, idem.OutcomeExecuted, res.Outcome, "an expired key swept runs anew")
			})
		})
	}
}

// markers are the apply-once markers on the counter.
func markers(t *testing.T, env *mrscEnv) []string {
	t.Helper()
	out, err := env.db[regionEast2].GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(mrscCounters), Key: map[string]types.AttributeValue{"id": sAttr("products")}, ConsistentRead: aws.Bool(true),
	})
	must.NoError(t, err)
	set, _ := out.Item["idem_applied"].(*types.AttributeValueMemberSS)
	if set == nil {
		return nil
	}
	return set.Value
}

// A completion whose writes are not all applied never expires, and its
// key is never claimed anew: long past the retention, the key's next
// caller applies them and replays.
func TestMRSCPendingCompletionOutlivesItsRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMRSC(t, idemtest.GlobalConfig{})
		env.grant(t)
		ctx := context.Background()
		holder, _ := env.crashing(t, crashPoints[2].at, false) // after the decision
		var runs struct{ n atomic.Int64 }
		_, err := holder.Execute(ctx, scope(t, "k"), "fp", mrscEffect(&runs.n))
		check.Error(t, err)
		time.Sleep(3 * idem.DefaultRetention)
		stats, err := env.store(t, regionWest).Sweep(ctx, idem.SweepOptions{Stranded: 1000 * time.Hour})
		must.NoError(t, err)
		check.Zero(t, stats.Deleted, "not expired while its writes wait")
		res, err := env.store(t, regionWest).Execute(ctx, scope(t, "k"), "fp", mrscEffect(&runs.n))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, res.Outcome)
		check.Equal(t, int64(1), runs.n.Load())
		check.Equal(t, 1, env.counter(t, regionEast))
	})
}

// A record claimed anew between the sweep's read of it, expired, and its
// delete is not deleted: the delete's condition sees the latest version.
func TestSweepNeverDeletesARecordClaimedSinceItsRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMRSC(t, idemtest.GlobalConfig{})
		ctx := context.Background()
		store := env.store(t, regionEast)
		noop := func(context.Context) (idem.Response, error) { return idem.Response{}, nil }
		_, err := store.Run(ctx, scope(t, "k"), "fp", noop)
		must.NoError(t, err)
		time.Sleep(idem.DefaultRetention + time.Hour)
		var reclaimed atomic.Bool
		claimFirst := func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
				return st.Initialize.Add(middleware.InitializeMiddlewareFunc("reclaim",
					func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
						if d, ok := in.Parameters.(*dynamodb.DeleteItemInput); ok && aws.ToString(d.TableName) == mrscIdem && reclaimed.CompareAndSwap(false, true) {
							res, err := store.Run(ctx, scope(t, "k"), "fp", noop)
							must.NoError(t, err)
							check.Equal(t, idem.OutcomeExecuted, res.Outcome, "the expired key claimed anew")
						}
						return next.HandleInitialize(ctx, in)
					}), middleware.Before)
			})
		}
		sweeper, err := idem.NewStore(env.g.Region(regionWest).HandlerClient(fastRetries, claimFirst), mrscIdem)
		must.NoError(t, err)
		stats, err := sweeper.Sweep(ctx, idem.SweepOptions{})
		must.NoError(t, err)
		check.True(t, reclaimed.Load())
		check.Equal(t, 0, stats.Deleted)
		_, ok, err := store.Get(ctx, scope(t, "k"))
		must.NoError(t, err)
		check.True(t, ok, "the record claimed anew stays")
	})
}
