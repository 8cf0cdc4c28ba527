package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The Regions of the simulated MRSC tables.
const (
	regionEast  = "us-east-1"
	regionEast2 = "us-east-2"
	regionWest  = "us-west-2"
)

var mrscRegions = []string{regionEast, regionEast2, regionWest}

// The tables of an MRSC test: the records, and what effects write.
const (
	mrscIdem     = "idempotency"
	mrscProducts = "products"
	mrscOutbox   = "outbox"
	mrscCounters = "counters"
	mrscGrants   = "grants"
)

// mrscEnv is a simulated global table with multi-Region strong
// consistency, three Regions, each with a client of its own.
type mrscEnv struct {
	g  *idemtest.Global
	db map[string]*dynamodb.Client
}

// fastRetries keeps the SDK's retries of 5xx answers short: the fake
// clock of a bubble would only skip them, but over many calls they add up.
func fastRetries(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
}

func newMRSC(t *testing.T, cfg idemtest.GlobalConfig) *mrscEnv {
	t.Helper()
	cfg.Mode = idemtest.MRSC
	if cfg.Regions == nil {
		cfg.Regions = mrscRegions
	}
	g, err := idemtest.NewGlobal(cfg)
	must.NoError(t, err)
	t.Cleanup(g.Close)
	env := &mrscEnv{g: g, db: map[string]*dynamodb.Client{}}
	for _, r := range g.Regions() {
		env.db[r] = g.Region(r).HandlerClient(fastRetries)
	}
	ctx := context.Background()
	db := env.db[cfg.Regions[0]]
	must.NoError(t, idemtable.Create(ctx, db, mrscIdem, idemtable.Layout{}))
	for _, tb := range []string{mrscProducts, mrscCounters, mrscGrants} {
		_, err := db.CreateTable(ctx, idemtable.Input(tb, idemtable.Layout{}))
		must.NoError(t, err)
	}
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(mrscOutbox), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("aggregate_id"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("event_id"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("aggregate_id"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("event_id"), KeyType: types.KeyTypeRange},
		},
	})
	must.NoError(t, err)
	return env
}

// store is a store in region, with its own client (wrapped by wrap).
func (e *mrscEnv) store(t testing.TB, region string, opts ...idem.Option) *idem.Store {
	t.Helper()
	s, err := idem.NewStore(e.db[region], mrscIdem, opts...)
	must.NoError(t, err)
	return s
}

// mrscWrites are an effect's writes as an adopter writes them for an
// MRSC table: the product it creates (a fresh id: a second execution
// would show as a second product), its outbox event, the seller's grant
// checked, and the count of products, kept under a cap.
func mrscWrites() (string, []types.TransactWriteItem) {
	id := uuid.NewString()
	return id, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(mrscGrants), Key: map[string]types.AttributeValue{"id": sAttr("seller-1")},
			ConditionExpression: aws.String("attribute_exists(id)"),
		}},
		{Put: &types.Put{
			TableName: aws.String(mrscProducts), Item: map[string]types.AttributeValue{"id": sAttr(id)},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		}},
		{Put: &types.Put{
			TableName: aws.String(mrscOutbox),
			Item:      map[string]types.AttributeValue{"aggregate_id": sAttr(id), "event_id": sAttr(uuid.NewString())},
			ConditionExpression: aws.String("attribute_not_exists(aggregate_id)"),
		}},
		{Update: &types.Update{
			TableName: aws.String(mrscCounters), Key: map[string]types.AttributeValue{"id": sAttr("products")},
			UpdateExpression:          aws.String("ADD #n :one SET #at = :now"),
			ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :cap"),
			ExpressionAttributeNames:  map[string]string{"#n": "n", "#at": "updated_at"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": nAttr(1), ":cap": nAttr(1 << 40), ":now": sAttr(time.Now().UTC().Format(time.RFC3339Nano))},
		}},
	}
}

func nAttr(n int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)} }

// mrscEffect is an operation that creates a product (mrscWrites), and
// counts its executions.
func mrscEffect(runs *atomic.Int64) func(context.Context) (idem.Effect, error) {
	return func(context.Context) (idem.Effect, error) {
		runs.Add(1)
		id, writes := mrscWrites()
		return idem.Effect{Response: created(id), Writes: writes}, nil
	}
}

// grant gives seller-1 its grant, which mrscWrites check.
func (e *mrscEnv) grant(t testing.TB) {
	t.Helper()
	_, err := e.db[regionEast].PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(mrscGrants), Item: map[string]types.AttributeValue{"id": sAttr("seller-1")},
	})
	must.NoError(t, err)
}

// count is the items of a table, read consistently from region.
func (e *mrscEnv) count(t testing.TB, region, table string) int {
	t.Helper()
	n := 0
	var start map[string]types.AttributeValue
	for {
		out, err := e.db[region].Scan(context.Background(), &dynamodb.ScanInput{
			TableName: aws.String(table), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start,
		})
		must.NoError(t, err)
		n += len(out.Items)
		if len(out.LastEvaluatedKey) == 0 {
			return n
		}
		start = out.LastEvaluatedKey
	}
}

// counter is the products counter, read consistently from region.
func (e *mrscEnv) counter(t testing.TB, region string) int {
	t.Helper()
	out, err := e.db[region].GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(mrscCounters), Key: map[string]types.AttributeValue{"id": sAttr("products")}, ConsistentRead: aws.Bool(true),
	})
	must.NoError(t, err)
	n, ok := out.Item["n"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	must.NoError(t, err)
	return v
}

// An Execute in one Region commits its effect without a transaction, and
// a duplicate in another Region replays it; nothing runs twice, and no
// transaction is sent.
func TestMRSCExecuteThenReplayInAnotherRegion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMRSC(t, idemtest.GlobalConfig{})
		env.grant(t)
		ctx := context.Background()
		var runs atomic.Int64
		east, west := env.store(t, regionEast), env.store(t, regionWest)
		first, err := east.Execute(ctx, scope(t, "k1"), "fp", mrscEffect(&runs))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, first.Outcome)
		again, err := west.Execute(ctx, scope(t, "k1"), "fp", mrscEffect(&runs))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, again.Outcome)
		check.Equal(t, first.Response, again.Response)
		check.Equal(t, int64(1), runs.Load())
		check.Equal(t, 1, env.count(t, regionEast2, mrscProducts))
		check.Equal(t, 1, env.count(t, regionEast2, mrscOutbox))
		check.Equal(t, 1, env.counter(t, regionEast2))
		info, err := east.Learn(ctx)
		must.NoError(t, err)
		check.Equal(t, idemtable.MRSC, info.Kind)
		check.Equal(t, regionEast, info.Region)
		check.Equal(t, []string{regionEast2, regionWest}, info.Replicas)
		for _, r := range mrscRegions {
			check.Equal(t, 0, env.g.Region(r).Calls(idemtest.OpTransactWriteItems), r)
		}
	})
}

var (
	_ = errors.New
	_ = fmt.Sprint
	_ sync.Mutex
	_ middleware.Stack
	_ idemtrace.Trace
)
