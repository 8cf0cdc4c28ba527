package idemtest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A deployment needs the Regions DynamoDB allows: MRSC exactly three (three
// replicas, or two and a witness), a witness only with MRSC.
func TestNewGlobalRefusesWhatDynamoDBRefuses(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]idemtest.GlobalConfig{
		"one Region":             {Regions: []string{east}},
		"the same Region twice":  {Regions: []string{east, east}},
		"MRSC with two Regions":  {Mode: idemtest.MRSC, Regions: []string{east, west}},
		"MRSC with four Regions": {Mode: idemtest.MRSC, Regions: []string{east, west, south, "eu-west-1"}},
		"MRSC, three and a witness": {Mode: idemtest.MRSC, Regions: []string{east, west, south},
			Witness: "eu-west-1"},
		"a witness that is a replica": {Mode: idemtest.MRSC, Regions: []string{east, west}, Witness: east},
		"a witness with MREC":         {Regions: []string{east, west}, Witness: south},
		"an unknown mode":             {Mode: "SOMETIMES", Regions: []string{east, west}},
	} {
		_, err := idemtest.NewGlobal(cfg)
		check.Error(t, err, name)
	}
	for name, cfg := range map[string]idemtest.GlobalConfig{
		"MRSC, three replicas":      {Mode: idemtest.MRSC, Regions: []string{east, west, south}},
		"MRSC, two and a witness":   {Mode: idemtest.MRSC, Regions: []string{east, west}, Witness: south},
		"MREC, three (the default)": {Regions: []string{east, west, south}},
	} {
		g, err := idemtest.NewGlobal(cfg)
		if check.NoError(t, err, name) {
			g.Close()
		}
	}
}

// MRSC refuses what it does not support, with ValidationException:
// TransactWriteItems, TransactGetItems, TTL (which idemtable.Create
// therefore leaves off on such a table), local secondary indexes, and
// deleting one replica.
func TestGlobalMRSCRefusesTransactionsAndTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, db := global(t, idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{east, west}, Witness: south})
		ctx := context.Background()
		_, err := db[east].TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(key("a"), "")}})
		refused(t, err, "Transactions are not supported for global tables with MultiRegionConsistency set to STRONG")
		_, err = db[west].TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
			{Get: &types.Get{TableName: aws.String("t"), Key: key("a")}}}})
		refused(t, err, "Transactions are not supported")
		_, err = db[east].UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("t"),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires_at"), Enabled: aws.Bool(true)}})
		refused(t, err, "TimeToLive is not supported for global tables with MultiRegionConsistency set to STRONG")
		g := db[east]
		must.NoError(t, idemtable.Create(ctx, g, "idempotency", idemtable.Layout{}), "created without TTL")
		ttl, err := g.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("idempotency")})
		must.NoError(t, err)
		check.Equal(t, types.TimeToLiveStatusDisabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
		_, err = db[west].DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("t")})
		refused(t, err, "Deletion of only one table replica is not supported")
		err = createRangeTableErr(ctx, db[east], "lsi")
		check.NoError(t, err, "a global index is supported")
		_, err = db[east].CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String("withlsi"), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String("pk"), AttributeType: "S"}, {AttributeName: aws.String("sk"), AttributeType: "S"},
				{AttributeName: aws.String("l"), AttributeType: "S"}},
			KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: "HASH"}, {AttributeName: aws.String("sk"), KeyType: "RANGE"}},
			LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("byl"),
				KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: "HASH"}, {AttributeName: aws.String("l"), KeyType: "RANGE"}},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
		})
		refused(t, err, "Local secondary indexes are not supported")
	})
}

// MRSC: "item changes ... are synchronously replicated to at least one
// other Region before the write operation returns", "conditional write
// operations always evaluate the condition expression against the latest
// version", and a strongly consistent read in any Region returns it.
func TestGlobalMRSCConditionalWritesSeeTheLatestVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, db := global(t, idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{east, west, south}})
		must.NoError(t, claim(db[east], "k", "east"))
		var ccf *types.ConditionalCheckFailedException
		check.ErrorAs(t, claim(db[west], "k", "west"), &ccf, "the same claim in another Region, at the same instant")
		check.ErrorAs(t, claim(db[south], "k", "south"), &ccf)
		for _, r := range []string{east, west, south} {
			check.Equal(t, "east", item(t, db[r], "k", true), r)
			check.Equal(t, "east", item(t, db[r], "k", false), r)
		}
	})
}

// MRSC: "A write operation fails with a ReplicatedWriteConflictException
// when it attempts to modify an item that is already being modified in
// another Region"; it may be retried, and succeeds once the other write is
// done. The Go SDK (v1.74) does not retry it: the error reaches the
// caller after one attempt.
func TestGlobalMRSCConcurrentWritesConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, db := global(t, idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{east, west}, Witness: south,
			WriteLatency: 50 * time.Millisecond})
		ctx := context.Background()
		first := make(chan error, 1)
		go func() { first <- claim(db[east], "k", "east") }()
		synctest.Wait() // east's write holds k across the Regions for its round trip
		g.Region(west).ResetCalls()
		err := claim(db[west], "k", "west")
		var conflict *types.ReplicatedWriteConflictException
		check.ErrorAs(t, err, &conflict, "a write of k from another Region meanwhile")
		check.Equal(t, 1, g.Region(west).Calls(idemtest.OpPutItem), "the Go SDK does not retry ReplicatedWriteConflictException")
		_, err = db[west].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: withAttr("other", "v", "west")})
		check.NoError(t, err, "another item is free")
		must.NoError(t, <-first)

		var ccf *types.ConditionalCheckFailedException
		check.ErrorAs(t, claim(db[west], "k", "west"), &ccf, "the retry, once east's write is done, meets it")
		check.Equal(t, 1, g.Stats().WriteConflicts)

		// A write in the same Region waits for the first, as on a regional
		// table: no conflict.
		go func() { first <- claim(db[east], "j", "east") }()
		synctest.Wait()
		check.ErrorAs(t, claim(db[east], "j", "again"), &ccf)
		must.NoError(t, <-first)
		check.Equal(t, 1, g.Stats().WriteConflicts)
	})
}

// MRSC needs two of its three Regions: a Region that cannot reach another
// replica or the witness fails writes and strongly consistent reads (the
// store answers InternalServerError: DynamoDB's code for this is not
// documented) and still answers eventually consistent reads from its
// replica, stale; the other two go on, and the isolated replica catches
// up when reconnected. With two replicas and a witness, the witness alone
// lost changes nothing; the witness and a replica lost stop the other
// replica's writes.
func TestGlobalMRSCLostRegionOrWitness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, db := global(t, idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{east, west, south}})
		ctx := context.Background()
		must.NoError(t, claim(db[east], "before", "east"))
		must.NoError(t, g.Isolate(west))
		err := claim(db[west], "k", "west")
		check.Equal(t, "InternalServerError", errorCode(err), "%v", err)
		_, err = db[west].GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("before"), ConsistentRead: aws.Bool(true)})
		check.Equal(t, "InternalServerError", errorCode(err), "a strongly consistent read in the isolated Region")
		must.NoError(t, claim(db[east], "k", "east"), "east and south still make two")
		check.Equal(t, "east", item(t, db[south], "k", true))
		check.Equal(t, "", item(t, db[west], "k", false), "the isolated Region's eventually consistent read is stale")
		check.Equal(t, "east", item(t, db[west], "before", false))
		must.NoError(t, g.Reconnect(west))
		check.Equal(t, "east", item(t, db[west], "k", true), "reconnected, it has caught up")
		var ccf *types.ConditionalCheckFailedException
		check.ErrorAs(t, claim(db[west], "k", "west"), &ccf)

		w, wdb := global(t, idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{east, west}, Witness: south})
		must.NoError(t, w.Isolate(south))
		must.NoError(t, claim(wdb[east], "a", "east"), "the witness lost: the replicas make two")
		must.NoError(t, w.Down(west))
		check.Equal(t, "InternalServerError", errorCode(claim(wdb[east], "b", "east")), "the witness and the other replica lost")
		must.NoError(t, w.Reconnect(south))
		must.NoError(t, claim(wdb[east], "b", "east"), "the witness back: east and the witness make two")
		must.NoError(t, w.Up(west))
		check.Equal(t, "east", item(t, wdb[west], "b", true), "west back up, it has caught up")
		check.Positive(t, w.Stats().Unavailable)
	})
}

// DescribeTable of an MRSC replica, as DynamoDB answers it:
// MultiRegionConsistency STRONG, the other replicas and the witness.
func TestGlobalMRSCDescribeTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, db := global(t, idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{east, west}, Witness: south})
		out, err := db[west].DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")})
		must.NoError(t, err)
		d := out.Table
		check.Equal(t, types.MultiRegionConsistencyStrong, d.MultiRegionConsistency)
		check.Equal(t, "2019.11.21", aws.ToString(d.GlobalTableVersion))
		must.Len(t, d.Replicas, 1)
		check.Equal(t, east, aws.ToString(d.Replicas[0].RegionName))
		must.Len(t, d.GlobalTableWitnesses, 1)
		check.Equal(t, south, aws.ToString(d.GlobalTableWitnesses[0].RegionName))
		check.Equal(t, types.WitnessStatusActive, d.GlobalTableWitnesses[0].WitnessStatus)
	})
}
