package idem_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

const opDescribeTable = idemtest.Op("DescribeTable")

// learnedFrom records what a store's trace reports it learned.
type learnedFrom struct {
	mu   sync.Mutex
	seen []idemtrace.TableLearnedInfo
}

func (l *learnedFrom) trace() *idemtrace.Trace {
	return &idemtrace.Trace{TableLearned: func(_ context.Context, info idemtrace.TableLearnedInfo) {
		l.mu.Lock()
		l.seen = append(l.seen, info)
		l.mu.Unlock()
	}}
}

func (l *learnedFrom) get() []idemtrace.TableLearnedInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]idemtrace.TableLearnedInfo(nil), l.seen...)
}

// A store learns its table's kind once, with one DescribeTable on its
// first call, however many calls come first at once; told it, it asks
// nothing.
func TestStoreLearnsItsTableKindOnce(t *testing.T) {
	t.Parallel()
	srv := idemtest.New(t)
	ctx := context.Background()
	must.NoError(t, idemtable.Create(ctx, srv.Client(), "idempotency", idemtable.Layout{}))
	var learned learnedFrom
	store, err := idem.NewStore(srv.Client(), "idempotency", idem.WithTrace(learned.trace()))
	must.NoError(t, err)
	srv.ResetCalls()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			_, err := store.Run(ctx, scope(t, "k"+strconv.Itoa(i)), "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
			check.NoError(t, err)
		})
	}
	wg.Wait()
	check.Equal(t, 1, srv.Calls(opDescribeTable), "one DescribeTable for 32 first calls")
	info, err := store.Learn(ctx)
	must.NoError(t, err)
	check.Equal(t, idemtable.Info{Kind: idemtable.Regional, Region: "us-east-1"}, info)
	check.Equal(t, 1, srv.Calls(opDescribeTable), "Learn asks nothing once learned")
	check.Equal(t, []idemtrace.TableLearnedInfo{{Kind: "regional", From: "DescribeTable", Region: "us-east-1"}}, learned.get())

	told, err := idem.NewStore(srv.Client(), "idempotency", idem.WithTableKind(idemtable.Regional))
	must.NoError(t, err)
	_, err = told.Run(ctx, scope(t, "told"), "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
	must.NoError(t, err)
	info, err = told.Learn(ctx)
	must.NoError(t, err)
	check.Equal(t, idemtable.Regional, info.Kind)
	check.Equal(t, 1, srv.Calls(opDescribeTable), "a store told its kind asks nothing")

	_, err = idem.NewStore(srv.Client(), "idempotency", idem.WithTableKind("global"))
	check.ErrorContains(t, err, "table kind")
}

// describer answers DescribeTable as told: refused n times with code,
// then as the client does; it counts the calls.
type describer struct {
	*dynamodb.Client
	code  string
	n     atomic.Int32
	calls atomic.Int32
}

func (d *describer) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	d.calls.Add(1)
	if d.n.Add(-1) >= 0 {
		return nil, &smithy.GenericAPIError{Code: d.code, Message: "refused (test)"}
	}
	return d.Client.DescribeTable(ctx, in, opts...)
}

// A store that may not describe its table (AccessDeniedException) runs
// as on a regional table and never asks again; one whose DescribeTable
// failed for a moment (throttled) asks again on its next call.
func TestStoreThatCannotLearnRunsAsOnARegionalTable(t *testing.T) {
	t.Parallel()
	srv := idemtest.New(t)
	ctx := context.Background()
	createMRSCTables(t, srv.Client()) // a regional table here
	for code, want := range map[string]struct {
		calls int32
		kind  idemtable.Kind
	}{
		"AccessDeniedException": {1, ""},
		"ThrottlingException":   {2, idemtable.Regional},
	} {
		d := &describer{Client: srv.Client(), code: code}
		d.n.Store(1)
		var learned learnedFrom
		store, err := idem.NewStore(d, mrscIdem, idem.WithTrace(learned.trace()))
		must.NoError(t, err)
		var runs atomic.Int64
		for i := range 3 {
			_, err := store.Run(ctx, scope(t, code+strconv.Itoa(i)), "fp", func(context.Context) (idem.Response, error) {
				runs.Add(1)
				return idem.Response{}, nil
			})
			check.NoError(t, err, code)
		}
		check.Equal(t, int64(3), runs.Load(), code)
		check.Equal(t, want.calls, d.calls.Load(), code)
		info, err := store.Learn(ctx)
		check.NoError(t, err, code)
		check.Equal(t, want.kind, info.Kind, code)
		if seen := learned.get(); check.NotEmpty(t, seen, code) {
			var apiErr smithy.APIError
			check.ErrorAs(t, seen[0].Err, &apiErr, code)
		}
	}
}

// onlyAPI is a client that cannot describe its table: the store learns
// an MRSC table's kind from DynamoDB's refusal of its first transaction.
type onlyAPI struct{ idem.API }

// A store that could not ask learns MRSC from the refusal of its first
// transaction, which wrote nothing, and commits that call's effect the
// way such a table allows; it sends no transaction after. So does every
// way in that commits writes.
func TestMRSCLearnedFromATransactionRefused(t *testing.T) {
	for _, way := range []string{"Execute", "Transact", "ExecuteBatch"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				env := newMRSC(t, idemtest.GlobalConfig{})
				env.grant(t)
				ctx := context.Background()
				var learned learnedFrom
				store, err := idem.NewStore(onlyAPI{env.db[regionEast]}, mrscIdem, idem.WithTrace(learned.trace()))
				must.NoError(t, err)
				var runs atomic.Int64
				call := func(key string) error {
					var err error
					switch way {
					case "Execute":
						_, err = store.Execute(ctx, scope(t, key), "fp", mrscEffect(&runs))
					case "Transact":
						_, err = store.Transact(ctx, scope(t, key), "fp", mrscEffect(&runs))
					default:
						res, berr := store.ExecuteBatch(ctx, []idem.BatchItem{{Scope: scope(t, key), Fingerprint: "fp", Response: created(key)}},
							func(executing []int, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
								runs.Add(1)
								_, w := mrscWrites()
								return w, nil
							})
						err = errors.Join(berr, res[0].Err)
					}
					return err
				}
				must.NoError(t, call("first"))
				must.NoError(t, call("second"))
				check.Equal(t, 1, env.g.Region(regionEast).Calls(idemtest.OpTransactWriteItems), "the first transaction, refused")
				check.Equal(t, 2, env.count(t, regionWest, mrscProducts))
				check.Equal(t, 2, env.counter(t, regionWest))
				info, err := store.Learn(ctx)
				must.NoError(t, err)
				check.Equal(t, idemtable.MRSC, info.Kind)
				check.Equal(t, []idemtrace.TableLearnedInfo{{Kind: "MRSC", From: "refusal"}}, learned.get())
			})
		})
	}
}

// A store never runs a mode its table cannot honour: on an MREC global
// table it needs WithHomes (each key claimed in its home Region) or
// WithRegion (claims in each caller's Region, opted into, and told from
// the streams); WithHomes belongs on an MREC table only. Told the kind,
// NewStore refuses; learning it, the first call and Learn do, before the
// store writes anything, and every call after.
func TestStoreRefusesAModeItsTableCannotHonour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var runs atomic.Int64
	run := func(store *idem.Store, key string) error {
		_, err := store.Run(ctx, scope(t, key), "fp", func(context.Context) (idem.Response, error) {
			runs.Add(1)
			return idem.Response{}, nil
		})
		return err
	}
	// homes gives a store homes among the clients (no voter is read
	// before its first call is routed).
	homes := func(clients map[string]idem.API, region string) idem.Option {
		return idem.WithHomes(idem.Homes{Region: region, Clients: clients, Home: func(idem.Scope) string { return region }})
	}

	t.Run("MREC", func(t *testing.T) {
		g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{regionEast, regionWest}})
		must.NoError(t, err)
		t.Cleanup(g.Close)
		db := g.Region(regionEast).HandlerClient()
		must.NoError(t, idemtable.Create(ctx, db, mrscIdem, idemtable.Layout{}))

		bare, err := idem.NewStore(db, mrscIdem)
		must.NoError(t, err)
		before := runs.Load()
		err = run(bare, "bare")
		check.ErrorIs(t, err, errors.ErrUnsupported)
		check.ErrorContains(t, err, "WithHomes")
		_, err = bare.Execute(ctx, scope(t, "bare"), "fp", func(context.Context) (idem.Effect, error) { return idem.Effect{}, nil })
		check.ErrorIs(t, err, errors.ErrUnsupported)
		_, err = bare.ExecuteBatch(ctx, []idem.BatchItem{{Scope: scope(t, "bare"), Fingerprint: "fp", Response: created("bare")}},
			func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })
		check.ErrorIs(t, err, errors.ErrUnsupported)
		check.Equal(t, before, runs.Load(), "no operation ran")
		check.Equal(t, 0, g.Region(regionEast).Calls(idemtest.OpPutItem)+g.Region(regionEast).Calls(idemtest.OpTransactWriteItems), "nothing written")
		info, err := bare.Learn(ctx)
		check.ErrorIs(t, err, errors.ErrUnsupported)
		check.Equal(t, idemtable.MREC, info.Kind)

		_, err = idem.NewStore(db, mrscIdem, idem.WithTableKind(idemtable.MREC))
		check.ErrorIs(t, err, errors.ErrUnsupported, "told MREC without a mode")

		local, err := idem.NewStore(db, mrscIdem, idem.WithRegion(regionEast))
		must.NoError(t, err)
		check.NoError(t, run(local, "local"), "WithRegion opts into claims in the caller's Region")
		_, err = local.Learn(ctx)
		check.NoError(t, err)

		// Homes are MREC's; so is TTL, which a sweep stands in for on MRSC
		// only: a store with homes says so, not that its client lacks Scan.
		homed, err := idem.NewStore(db, mrscIdem, homes(map[string]idem.API{regionEast: db, regionWest: g.Region(regionWest).HandlerClient()}, regionEast))
		must.NoError(t, err)
		_, err = homed.Sweep(ctx, idem.SweepOptions{})
		check.ErrorIs(t, err, errors.ErrUnsupported)
		check.ErrorContains(t, err, "TTL")
	})

	t.Run("homes elsewhere", func(t *testing.T) {
		srv := idemtest.New(t)
		must.NoError(t, idemtable.Create(ctx, srv.Client(), mrscIdem, idemtable.Layout{}))
		two := map[string]idem.API{regionEast: srv.Client(), regionWest: srv.Client()}
		for _, kind := range []idemtable.Kind{idemtable.Regional, idemtable.MRSC} {
			_, err := idem.NewStore(srv.Client(), mrscIdem, idem.WithTableKind(kind), homes(two, regionEast))
			check.ErrorIs(t, err, errors.ErrUnsupported, kind)
		}

		regional, err := idem.NewStore(srv.Client(), mrscIdem, homes(two, regionEast))
		must.NoError(t, err)
		err = run(regional, "regional")
		check.ErrorIs(t, err, errors.ErrUnsupported)
		check.ErrorContains(t, err, "regional")
		_, err = regional.Learn(ctx)
		check.ErrorIs(t, err, errors.ErrUnsupported)

		env := newMRSC(t, idemtest.GlobalConfig{})
		clients := map[string]idem.API{}
		for r, c := range env.db {
			clients[r] = c
		}
		strong := env.store(t, regionEast, homes(clients, regionEast))
		err = run(strong, "strong")
		check.ErrorIs(t, err, errors.ErrUnsupported)
		check.ErrorContains(t, err, "MRSC")
		check.Equal(t, 0, env.g.Region(regionEast).Calls(idemtest.OpPutItem), "nothing written")
	})
	check.Equal(t, int64(1), runs.Load(), "only the store that opted in ran its operation")
}
