package idemglobal_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// The detector on the simulated global table's streams (idemtest.Global,
// multi-Region eventual consistency), in a testing/synctest bubble.

const east, west = "us-east-1", "us-west-2"

// pair is a global table of two Regions, a store in each that claims keys
// in its own Region (idem.WithRegion), and a reader of each Region's
// stream of the idempotency table.
type pair struct {
	g       *idemtest.Global
	stores  map[string]*idem.Store
	streams map[string]*idemtest.Stream
}

func newPair(t *testing.T, lag time.Duration, opts ...idem.Option) *pair {
	t.Helper()
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{east, west}, Lag: lag})
	must.NoError(t, err)
	t.Cleanup(g.Close)
	must.NoError(t, idemtable.Create(context.Background(), g.Region(east).HandlerClient(), "idempotency", idemtable.Layout{}))
	p := &pair{g: g, stores: map[string]*idem.Store{}, streams: map[string]*idemtest.Stream{}}
	for _, r := range []string{east, west} {
		db := g.Region(r).HandlerClient(func(o *dynamodb.Options) {
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
		})
		s, err := idem.NewStore(db, "idempotency", append([]idem.Option{idem.WithRegion(r)}, opts...)...)
		must.NoError(t, err)
		p.stores[r] = s
		p.streams[r] = g.Region(r).Stream("idempotency")
	}
	return p
}

// detect runs a detector on what each Region's stream holds, and returns
// the reports by Region, and what the hook heard.
func (p *pair) detect(t *testing.T) (map[string][]idemtrace.DoubleExecutionInfo, []idemtrace.DoubleExecutionInfo) {
	t.Helper()
	var heard []idemtrace.DoubleExecutionInfo
	d := &idemglobal.Detector{Trace: &idemtrace.Trace{DoubleExecution: func(_ context.Context, info idemtrace.DoubleExecutionInfo) {
		heard = append(heard, info)
	}}}
	out := map[string][]idemtrace.DoubleExecutionInfo{}
	for _, r := range []string{east, west} {
		var batch []events.DynamoDBEventRecord
		for _, rec := range p.streams[r].Read() {
			batch = append(batch, rec.DynamoDBEventRecord)
		}
		out[r] = d.Detect(context.Background(), batch)
	}
	return out, heard
}

func (p *pair) run(t *testing.T, region string, sc idem.Scope, work time.Duration) idem.Result {
	t.Helper()
	res, err := p.stores[region].Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
		time.Sleep(work)
		return idem.Response{Body: []byte("answered in " + region)}, nil
	})
	must.NoError(t, err, region)
	return res
}

func scope(t *testing.T, key string) idem.Scope {
	t.Helper()
	sc, err := idem.NewScope("POST /payments", "tenant-1", key)
	must.NoError(t, err)
	return sc
}

// A key run in both Regions within the lag: the loser's Region's stream
// shows its completed claim overwritten by the winner's, and the
// detector reports it once, with both answers; the winner's Region drops
// the loser's claim when it arrives (last writer wins) and shows nothing.
func TestDetectorReportsAKeyRunInTwoRegions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPair(t, time.Second)
		sc := scope(t, "pay-1")
		check.Equal(t, idem.OutcomeExecuted, p.run(t, east, sc, 10*time.Millisecond).Outcome)
		check.Equal(t, idem.OutcomeExecuted, p.run(t, west, sc, 10*time.Millisecond).Outcome, "west has not seen east's claim")
		time.Sleep(2 * time.Second)

		byRegion, heard := p.detect(t)
		check.Empty(t, byRegion[west], "west's claim won: east's arrived later and was dropped")
		must.Len(t, byRegion[east], 1, "east's stream shows its claim overwritten")
		got := byRegion[east][0]
		check.Equal(t, heard, byRegion[east], "the hook heard each report")
		check.Equal(t, east, got.Region)
		check.Equal(t, "POST /payments", got.Operation)
		check.Equal(t, sc.ID(), got.ScopeID)
		check.Equal(t, east, got.Overwritten.Origin)
		check.Equal(t, west, got.Overwriting.Origin)
		check.Equal(t, "COMPLETED", got.Overwritten.Status)
		check.Equal(t, "COMPLETED", got.Overwriting.Status)
		check.Equal(t, "answered in us-east-1", string(got.Overwritten.Body), "what each execution answered")
		check.Equal(t, "answered in us-west-2", string(got.Overwriting.Body))
		check.NotEmpty(t, got.ID)
	})
}

// Replication merges several changes of an item delivered together into
// one stream record: west's claim and its completion, paused on their
// way, reach east as one MODIFY from east's claim (still in progress) to
// west's completed record. The detector reads the merged record and
// reports the overwritten claim as in progress (its answer unknown); a
// third Region that saw both claims would report the same ID.
func TestDetectorReadsMergedChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPair(t, 100*time.Millisecond)
		must.NoError(t, p.g.Pause(west, east))
		must.NoError(t, p.g.Pause(east, west))
		sc := scope(t, "pay-2")
		p.run(t, west, sc, 10*time.Millisecond)

		var err error
		done := make(chan idem.Result)
		go func() {
			var res idem.Result
			res, err = p.stores[east].Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
				time.Sleep(time.Second) // still running when west's changes arrive
				return idem.Response{Body: []byte("answered in us-east-1")}, nil
			})
			done <- res
		}()
		time.Sleep(100 * time.Millisecond)
		must.NoError(t, p.g.Resume(west, east))
		res := <-done
		check.Equal(t, idem.OutcomeNotRecorded, res.Outcome, "east's effect ran, and its completion met west's record")
		check.ErrorIs(t, err, idem.ErrLeaseLost, "fenced out")
		check.Positive(t, p.g.Stats().Merged, "west's claim and completion arrived merged")

		byRegion, _ := p.detect(t)
		must.Len(t, byRegion[east], 1)
		got := byRegion[east][0]
		check.Equal(t, "IN_PROGRESS", got.Overwritten.Status)
		check.Equal(t, east, got.Overwritten.Origin)
		check.Equal(t, "COMPLETED", got.Overwriting.Status)
		check.Equal(t, "answered in us-west-2", string(got.Overwriting.Body))
	})
}

// What the protocol itself does is never reported: a Region's own
// claims, renewals, completions and releases; a claim on an expired
// record; a claim that took over a dead holder's key, whose lease had
// ended when it was made, in another Region.
func TestDetectorIgnoresTheProtocolsOwnOverwrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPair(t, 100*time.Millisecond, idem.WithRetention(time.Hour), idem.WithLease(10*time.Second, time.Second))
		ctx := context.Background()
		// A completed key, replayed in both Regions.
		sc := scope(t, "pay-3")
		p.run(t, east, sc, 0)
		time.Sleep(time.Second)
		check.Equal(t, idem.OutcomeReplayed, p.run(t, west, sc, 0).Outcome)
		// A holder in east whose process dies: its claim stays in
		// progress; west takes it over once its lease has ended.
		dead := scope(t, "pay-4")
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			_, _ = p.stores[east].Run(cctx, dead, "fp", func(ctx context.Context) (idem.Response, error) {
				<-ctx.Done()
				return idem.Response{}, idem.ErrNotRecorded // keeps the claim, as a crash would
			})
		}()
		time.Sleep(time.Second)
		cancel()
		time.Sleep(15 * time.Second)
		check.Equal(t, idem.OutcomeTakeover, p.run(t, west, dead, 0).Outcome)
		// A key whose record expired, claimed again in the other Region.
		old := scope(t, "pay-5")
		p.run(t, east, old, 0)
		time.Sleep(2 * time.Hour)
		check.Equal(t, idem.OutcomeExecuted, p.run(t, west, old, 0).Outcome)
		// A key released after a failure, claimed again.
		failing := scope(t, "pay-6")
		_, err := p.stores[east].Run(ctx, failing, "fp", func(context.Context) (idem.Response, error) {
			return idem.Response{}, context.DeadlineExceeded
		})
		check.Error(t, err)
		time.Sleep(time.Second)
		p.run(t, west, failing, 0)
		time.Sleep(time.Second)

		byRegion, heard := p.detect(t)
		check.Empty(t, byRegion[east])
		check.Empty(t, byRegion[west])
		check.Empty(t, heard)
	})
}

// Records that are not claims (another item of a single-table design, a
// home's promise) and images that cannot be read are skipped.
func TestDetectorSkipsOtherItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPair(t, 0)
		ctx := context.Background()
		db := p.g.Region(east).HandlerClient()
		for _, v := range []string{"1", "2"} {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("idempotency"), Item: idemtable.Layout{}.Key("!home|x|" + east)})
			must.NoError(t, err)
			_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("idempotency"), Key: idemtable.Layout{}.Key("other"),
				UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: v}}})
			must.NoError(t, err)
		}
		byRegion, _ := p.detect(t)
		check.Empty(t, byRegion[east])
	})
}
