package idemtest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The probes of the simulated global table, one per documented behaviour
// (Developer Guide, "How DynamoDB global tables work"; AWS Prescriptive
// Guidance, "Using DynamoDB global tables"). They run in a
// testing/synctest bubble: lags, pauses and latencies take no real time.

const east, west, south = "us-east-1", "us-west-2", "us-east-2"

// global starts a simulated deployment for one test, in the bubble, with
// a table "t" (partition key id) created through its first Region.
func global(t *testing.T, cfg idemtest.GlobalConfig) (*idemtest.Global, map[string]*dynamodb.Client) {
	t.Helper()
	g, err := idemtest.NewGlobal(cfg)
	must.NoError(t, err)
	t.Cleanup(g.Close)
	dbs := map[string]*dynamodb.Client{}
	for _, r := range g.Regions() {
		dbs[r] = g.Region(r).HandlerClient(fastRetries)
	}
	must.NoError(t, createTable(context.Background(), dbs[cfg.Regions[0]], "t"))
	return g, dbs
}

// item reads an item ("" for none) in a Region, its attribute v.
func item(t *testing.T, db *dynamodb.Client, id string, consistent bool) string {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key(id), ConsistentRead: aws.Bool(consistent)})
	must.NoError(t, err)
	if out.Item == nil {
		return ""
	}
	if v, ok := out.Item["v"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return "(no v)"
}

// claim puts id with v under attribute_not_exists(id), as an
// idempotency claim does.
func claim(db *dynamodb.Client, id, v string) error {
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr(id, "v", v),
		ConditionExpression: aws.String("attribute_not_exists(id)")})
	return err
}

// image is a string attribute of a stream record's image ("" for none).
func image(im map[string]events.DynamoDBAttributeValue, name string) string {
	if v, ok := im[name]; ok {
		return v.String()
	}
	return ""
}

// MREC: "Conditional writes evaluate the condition expression against the
// version of the item in the Region", and replication is asynchronous:
// under lag, a key claimed with attribute_not_exists in two Regions is won
// in both. Last writer wins then keeps the later claim everywhere,
// silently: the earlier one is overwritten without a trace.
func TestGlobalMRECBothRegionsWinAClaimUnderLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, db := global(t, idemtest.GlobalConfig{Regions: []string{east, west}, Lag: time.Second})
		must.NoError(t, claim(db[east], "k", "east"), "the claim in us-east-1")
		time.Sleep(10 * time.Millisecond)
		must.NoError(t, claim(db[west], "k", "west"), "the same claim in us-west-2, 10 ms later: it wins too")
		check.Equal(t, "east", item(t, db[east], "k", true), "each Region reads its own claim, even strongly consistent")
		check.Equal(t, "west", item(t, db[west], "k", true))

		time.Sleep(time.Second)
		check.Equal(t, "west", item(t, db[east], "k", true), "the later write wins in every Region")
		check.Equal(t, "west", item(t, db[west], "k", true))
		check.Equal(t, idemtest.GlobalStats{Replicated: 1, Superseded: 1}, g.Stats(),
			"west's claim replicated to east; east's claim reached west after west's and was dropped")
		var ccf *types.ConditionalCheckFailedException
		check.ErrorAs(t, claim(db[east], "k", "again"), &ccf, "once replicated, the claim holds everywhere")
	})
}

// Last writer wins is per item and by the write's timestamp, whatever the
// order changes arrive in; writes at the same instant (DynamoDB documents
// no rule; every replica here applies the same one: by Region name) and a
// delete against a put converge too, a deleted item's timestamp kept.
func TestGlobalMRECLastWriterWinsPerItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, db := global(t, idemtest.GlobalConfig{Regions: []string{east, west, south}, Lag: time.Second})
		must.NoError(t, g.SetLag(east, west, 5*time.Second)) // east's write reaches west last
		ctx := context.Background()
		put := func(r, id, v string) {
			_, err := db[r].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr(id, "v", v)})
			must.NoError(t, err)
		}
		put(west, "a", "west-first")
		time.Sleep(time.Millisecond)
		put(east, "a", "east-later")
		// The same instant in two Regions that wrote nothing at it before
		// (a Region's own writes are ordered: east wrote at this instant).
		put(south, "b", "south")
		put(west, "b", "west")
		// A put, then a delete in another Region.
		put(west, "c", "west")
		time.Sleep(2 * time.Second)
		_, err := db[south].DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("c")})
		must.NoError(t, err)
		// A delete, then a put of an item that came back.
		put(south, "d", "south")
		time.Sleep(2 * time.Second)
		_, err = db[west].DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("d")})
		must.NoError(t, err)
		time.Sleep(time.Millisecond)
		put(east, "d", "east-after-delete")

		time.Sleep(6 * time.Second)
		for _, r := range []string{east, west, south} {
			check.Equal(t, "east-later", item(t, db[r], "a", true), "%s: a", r)
			check.Equal(t, "west", item(t, db[r], "b", true), "%s: b, at the same instant: by Region name", r)
			check.Equal(t, "", item(t, db[r], "c", true), "%s: c, deleted last", r)
			check.Equal(t, "east-after-delete", item(t, db[r], "d", true), "%s: d, put after its delete", r)
		}
		check.Equal(t, 0, g.Settle(), "nothing left to replicate")
	})
}

// The pause-replication fault (AWS FIS aws:dynamodb:global-table-pause-
// replication): the paused pair diverges, whatever the lag, then
// converges once resumed. Several changes of an item sent while paused
// arrive as one change, one stream record.
func TestGlobalMRECPausedPairDivergesThenConverges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, db := global(t, idemtest.GlobalConfig{Regions: []string{east, west}, Lag: 100 * time.Millisecond})
		ctx := context.Background()
		westStream := g.Region(west).Stream("t")
		must.NoError(t, g.Pause(east, west))
		for i, v := range []string{"v1", "v2", "v3"} {
			_, err := db[east].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("k", "v", v)})
			must.NoError(t, err, "write %d", i)
		}
		_, err := db[west].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("w", "v", "from-west")})
		must.NoError(t, err)
		time.Sleep(time.Hour)
		check.Equal(t, "", item(t, db[west], "k", true), "west never saw east's writes while paused")
		check.Equal(t, "from-west", item(t, db[east], "w", true), "west to east still flows")
		check.Equal(t, 3, g.Pending(west))
		check.Len(t, westStream.Read(), 1, "west's stream: its own write only")

		must.NoError(t, g.Resume(east, west))
		check.Equal(t, "v3", item(t, db[west], "k", true), "resumed: west converges on east's last write")
		recs := westStream.Read()
		must.Len(t, recs, 1, "three changes of k, one record")
		check.Equal(t, "INSERT", recs[0].EventName)
		check.True(t, recs[0].Replicated())
		check.Equal(t, east, recs[0].Origin)
		check.Equal(t, "v3", image(recs[0].Change.NewImage, "v"))
		check.Equal(t, idemtest.GlobalStats{Replicated: 2, Merged: 2}, g.Stats())
	})
}

// "Transactional operations provide ACID guarantees only within the
// Region where the write occurred": a transaction's items replicate one by
// one, so another Region may see part of it (here with Jitter: each item
// keeps a lag of its own, as partitions replicate in parallel).
func TestGlobalMRECTransactionReplicatesItemByItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, db := global(t, idemtest.GlobalConfig{Regions: []string{east, west}, Lag: 100 * time.Millisecond, Jitter: time.Second})
		ctx := context.Background()
		_, err := db[east].TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			txPut(withAttr("debit", "v", "x"), ""), txPut(withAttr("credit", "v", "x"), ""),
		}})
		must.NoError(t, err)
		got, err := db[east].TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
			{Get: &types.Get{TableName: aws.String("t"), Key: key("debit")}}, {Get: &types.Get{TableName: aws.String("t"), Key: key("credit")}},
		}})
		must.NoError(t, err)
		check.True(t, got.Responses[0].Item != nil && got.Responses[1].Item != nil, "atomic in its own Region")

		half := 0
		for range 120 {
			debit, credit := item(t, db[west], "debit", true), item(t, db[west], "credit", true)
			if (debit == "") != (credit == "") {
				half++
			}
			time.Sleep(10 * time.Millisecond)
		}
		check.Positive(t, half, "west saw one item of the transaction without the other")
		check.Equal(t, "x", item(t, db[west], "debit", true))
		check.Equal(t, "x", item(t, db[west], "credit", true))
		check.Equal(t, 2, g.Stats().Replicated)
	})
}

// Every Region's stream carries the replicated writes too, in the shape
// Lambda receives them (the old and new images of a NEW_AND_OLD_IMAGES
// stream), so a consumer in every Region sees each change once per
// Region; the records do not say where a write came from (Origin is the
// store's, for tests).
func TestGlobalMRECStreamsCarryReplicatedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, db := global(t, idemtest.GlobalConfig{Regions: []string{east, west}, Lag: time.Second})
		ctx := context.Background()
		eastStream, westStream := g.Region(east).Stream("t"), g.Region(west).Stream("t")
		_, err := db[east].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("k", "v", "1")})
		must.NoError(t, err)
		time.Sleep(2 * time.Second)
		_, err = db[west].UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("k"),
			UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("2")}})
		must.NoError(t, err)
		time.Sleep(2 * time.Second)
		_, err = db[east].DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("k")})
		must.NoError(t, err)
		time.Sleep(2 * time.Second)

		type rec struct{ event, origin, old, new string }
		read := func(st *idemtest.Stream, region string) []rec {
			var out []rec
			for _, r := range st.Read() {
				check.Equal(t, region, r.AWSRegion)
				check.Equal(t, "aws:dynamodb", r.EventSource)
				check.Contains(t, r.EventSourceArn, "arn:aws:dynamodb:"+region+":")
				check.Equal(t, "k", r.Change.Keys["id"].String())
				out = append(out, rec{r.EventName, r.Origin, image(r.Change.OldImage, "v"), image(r.Change.NewImage, "v")})
			}
			return out
		}
		want := func(region string) []rec {
			return []rec{{"INSERT", east, "", "1"}, {"MODIFY", west, "1", "2"}, {"REMOVE", east, "2", ""}}
		}
		check.Equal(t, want(east), read(eastStream, east))
		check.Equal(t, want(west), read(westStream, west))
		check.Empty(t, eastStream.Read(), "a Read returns only what is new")
	})
}

// DescribeTable of an MREC replica, as DynamoDB answers it: version
// 2019.11.21, the other replicas (never itself), no MultiRegionConsistency
// (only MRSC tables report it), and the replica's own stream and ARN.
func TestGlobalMRECDescribeTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, db := global(t, idemtest.GlobalConfig{Regions: []string{east, west, south}})
		for _, r := range []string{east, west, south} {
			out, err := db[r].DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")})
			must.NoError(t, err)
			d := out.Table
			check.Equal(t, "2019.11.21", aws.ToString(d.GlobalTableVersion), r)
			var replicas []string
			for _, rd := range d.Replicas {
				replicas = append(replicas, aws.ToString(rd.RegionName))
				check.Equal(t, types.ReplicaStatusActive, rd.ReplicaStatus)
			}
			check.Len(t, replicas, 2, r)
			check.NotContains(t, replicas, r, "a replica never lists itself")
			check.Equal(t, types.MultiRegionConsistency(""), d.MultiRegionConsistency, "MREC is not reported")
			check.Empty(t, d.GlobalTableWitnesses)
			check.Contains(t, aws.ToString(d.TableArn), "arn:aws:dynamodb:"+r+":")
			check.Contains(t, aws.ToString(d.LatestStreamArn), "arn:aws:dynamodb:"+r+":")
			check.True(t, aws.ToBool(d.StreamSpecification.StreamEnabled))
		}
	})
}

// MREC's TTL settings are kept in sync on every replica: a change made in
// one Region is the change of every Region, for the hour's rule too.
func TestGlobalMRECTimeToLiveOnEveryReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, db := global(t, idemtest.GlobalConfig{Regions: []string{east, west}})
		ctx := context.Background()
		_, err := db[east].UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("t"),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires_at"), Enabled: aws.Bool(true)}})
		must.NoError(t, err)
		out, err := db[west].DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("t")})
		must.NoError(t, err)
		check.Equal(t, types.TimeToLiveStatusEnabled, out.TimeToLiveDescription.TimeToLiveStatus)
		_, err = db[west].UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("t"),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires_at"), Enabled: aws.Bool(false)}})
		refused(t, err, "Time to live has been modified multiple times within a fixed interval")
	})
}

// A Region isolated from the others (MREC) keeps taking writes; what it
// and the others wrote meanwhile crosses once it is reconnected. A Region
// that is down answers nothing: ServiceUnavailable, which the SDK retries
// until its attempts run out.
func TestGlobalMRECIsolatedAndLostRegions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, db := global(t, idemtest.GlobalConfig{Regions: []string{east, west}})
		must.NoError(t, g.Isolate(west))
		must.NoError(t, claim(db[west], "k", "west"))
		must.NoError(t, claim(db[east], "j", "east"))
		time.Sleep(time.Minute)
		check.Equal(t, "", item(t, db[east], "k", true))
		check.Equal(t, "", item(t, db[west], "j", true))
		must.NoError(t, g.Reconnect(west))
		check.Equal(t, "west", item(t, db[east], "k", true))
		check.Equal(t, "east", item(t, db[west], "j", true))

		must.NoError(t, g.Down(west))
		g.Region(west).ResetCalls()
		err := claim(db[west], "x", "west")
		var api smithy.APIError
		must.True(t, errors.As(err, &api), "%v", err)
		check.Equal(t, "ServiceUnavailable", api.ErrorCode())
		check.Equal(t, 3, g.Region(west).Calls(idemtest.OpPutItem), "the SDK's three attempts")
		must.NoError(t, claim(db[east], "y", "east"), "the other Region goes on")
		must.NoError(t, g.Up(west))
		check.Equal(t, "east", item(t, db[west], "y", true), "back up, it catches up")
		check.Positive(t, g.Stats().Unavailable)
	})
}

// What a store that claims in its caller's Region does on MREC (issue
// 37): a key claimed in two Regions within the replication lag runs
// twice, once in each Region, and last writer wins then keeps one of the
// two records everywhere, silently. It is the baseline that homes
// (idem.WithHomes) bring to one execution; a store must opt into it
// (idem.WithRegion), since one given neither refuses an MREC table.
func TestGlobalMRECRunsAKeyOncePerRegionUnderLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{east, west}, Lag: time.Second})
		must.NoError(t, err)
		t.Cleanup(g.Close)
		ctx := context.Background()
		must.NoError(t, idemtable.Create(ctx, g.Region(east).HandlerClient(), "idempotency", idemtable.Layout{}))
		scope, err := idem.NewScope("POST /payments", "tenant-1", "key-1")
		must.NoError(t, err)
		runs := map[string]int{}
		for _, r := range []string{east, west} {
			store, err := idem.NewStore(g.Region(r).HandlerClient(), "idempotency", idem.WithRegion(r))
			must.NoError(t, err)
			res, err := store.Run(ctx, scope, "fp", func(context.Context) (idem.Response, error) {
				runs[r]++
				return idem.Response{Body: []byte(r)}, nil
			})
			must.NoError(t, err)
			check.Equal(t, idem.OutcomeExecuted, res.Outcome, r)
		}
		check.Equal(t, map[string]int{east: 1, west: 1}, runs, "one execution per Region")
		time.Sleep(time.Second)
		check.Equal(t, 0, g.Settle())
		check.Positive(t, g.Stats().Superseded, "one Region's record was overwritten without a trace")
	})
}
