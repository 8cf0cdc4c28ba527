package idemadmin_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

var layouts = map[string]idemtable.Layout{
	"default": {},
	"single": {
		PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY", KeyPrefix: "IDEM#",
		Attributes: idemtable.Attributes{Status: "st", LeaseExpiresAt: "lexp", ExpiresAt: "ttl"},
	},
	"prefix": {KeyPrefix: "IDEMPOTENCY#"},
	"spread": {PartitionKey: "PK", SortKey: "SK", SortValue: "#IDEMPOTENCY", KeyPrefix: "IDEM#"},
}

// eachLayout runs f on a fresh table per layout.
func eachLayout(t *testing.T, f func(t *testing.T, tbl idemadmin.Table, store *idem.Store)) {
	for name, layout := range layouts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := idemtest.New(t).Client()
			must.NoError(t, idemtable.Create(context.Background(), db, "idempotency", layout))
			_, err := db.CreateTable(context.Background(), idemtable.Input("products", idemtable.Layout{}))
			must.NoError(t, err)
			store, err := idem.NewStore(db, "idempotency", idem.WithLayout(layout))
			must.NoError(t, err)
			f(t, idemadmin.Table{DB: db, Name: "idempotency", Layout: layout}, store)
		})
	}
}

func ok(status int) func(context.Context) (idem.Response, error) {
	return func(context.Context) (idem.Response, error) {
		return idem.Response{Status: status}, nil
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, tbl idemadmin.Table, store *idem.Store) {
		ctx := context.Background()
		sc, _ := idem.NewScope("POST /orders", "user-1", "k-1")
		_, err := tbl.Lookup(ctx, sc)
		must.ErrorIs(t, err, idemadmin.ErrNotFound)

		_, err = store.Run(ctx, sc, "fp-1", ok(201))
		must.NoError(t, err)
		rec, err := tbl.Lookup(ctx, sc)
		must.NoError(t, err)
		check.Equal(t, "COMPLETED", rec.Status)
		check.Equal(t, "fp-1", rec.Fingerprint)
		check.Equal(t, 201, rec.ResponseStatus)
		check.Equal(t, sc.ID(), rec.ID)
		check.False(t, rec.LeaseLive)
		check.False(t, rec.Expired)
		check.False(t, rec.CreatedAt.IsZero())
		check.False(t, rec.CompletedAt.IsZero())
		check.WithinDuration(t, time.Now().Add(24*time.Hour), rec.ExpiresAt, time.Minute)

		// A caller's own status (not HTTP), and none: Do stores a value.
		own, _ := idem.NewScope("invoice", "billing", "k-2")
		_, err = store.Run(ctx, own, "fp", ok(7))
		must.NoError(t, err)
		rec, err = tbl.Lookup(ctx, own)
		must.NoError(t, err)
		check.Equal(t, 7, rec.ResponseStatus)
		none, _ := idem.NewScope("invoice", "billing", "k-3")
		_, _, err = idem.Do(ctx, store, none, "fp", func(context.Context) (int, error) { return 1, nil })
		must.NoError(t, err)
		rec, err = tbl.Lookup(ctx, none)
		must.NoError(t, err)
		check.Zero(t, rec.ResponseStatus, "a value has no status, and none is made up")
		out, err := json.Marshal(rec)
		must.NoError(t, err)
		check.NotContains(t, string(out), "response_status")
	})
}

func TestEvictACompletedKeyRunsAgain(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, tbl idemadmin.Table, store *idem.Store) {
		ctx := context.Background()
		sc, _ := idem.NewScope("POST /orders", "user-1", "k-1")
		_, err := store.Run(ctx, sc, "fp", ok(201))
		must.NoError(t, err)
		res, err := store.Run(ctx, sc, "fp", ok(500))
		must.NoError(t, err)
		must.Equal(t, idem.OutcomeReplayed, res.Outcome)

		rec, err := tbl.Evict(ctx, sc, idemadmin.EvictOptions{})
		must.NoError(t, err)
		check.Equal(t, "COMPLETED", rec.Status)
		_, err = tbl.Lookup(ctx, sc)
		must.ErrorIs(t, err, idemadmin.ErrNotFound)

		res, err = store.Run(ctx, sc, "another payload, even", ok(202))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, res.Outcome, "the key runs again")
		check.Equal(t, 202, res.Response.Status)

		_, err = tbl.Evict(ctx, mustScope(t, "absent"), idemadmin.EvictOptions{})
		must.ErrorIs(t, err, idemadmin.ErrNotFound)
	})
}

func mustScope(t *testing.T, key string) idem.Scope {
	sc, err := idem.NewScope("POST /orders", "user-1", key)
	must.NoError(t, err)
	return sc
}

// A live holder: evicting it without force fails and leaves the record;
// with force it goes, a new claim wins, and the old holder's fenced
// completion fails with ErrLeaseLost, writing nothing.
func TestEvictALiveHolder(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, tbl idemadmin.Table, store *idem.Store) {
		ctx := context.Background()
		sc := mustScope(t, "live")
		res, err := store.Execute(ctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
			_, err := tbl.Evict(ctx, sc, idemadmin.EvictOptions{})
			must.ErrorIs(t, err, idemadmin.ErrLiveHolder)
			rec, err := tbl.Lookup(ctx, sc)
			must.NoError(t, err)
			check.Equal(t, "IN_PROGRESS", rec.Status, "the record stays")
			check.True(t, rec.LeaseLive)

			rec, err = tbl.Evict(ctx, sc, idemadmin.EvictOptions{Force: true})
			must.NoError(t, err)
			check.Equal(t, "IN_PROGRESS", rec.Status)

			second, err := store.Run(ctx, sc, "fp", ok(201))
			must.NoError(t, err)
			check.Equal(t, idem.OutcomeExecuted, second.Outcome, "a new claim wins at once")
			return idem.Effect{Response: idem.Response{Status: 200}, Writes: []types.TransactWriteItem{}}, nil
		})
		must.ErrorIs(t, err, idem.ErrLeaseLost, "the old holder's completion is fenced out")
		check.Equal(t, idem.OutcomeLeaseLost, res.Outcome)

		rec, err := tbl.Lookup(ctx, sc)
		must.NoError(t, err)
		check.Equal(t, 201, rec.ResponseStatus, "the second holder's response stands")

		// Run's effect outside DynamoDB: the completion fails the same way.
		sc = mustScope(t, "live-run")
		_, err = store.Run(ctx, sc, "fp", func(ctx context.Context) (idem.Response, error) {
			_, err := tbl.Evict(ctx, sc, idemadmin.EvictOptions{Force: true})
			must.NoError(t, err)
			return idem.Response{Status: 200}, nil
		})
		must.ErrorIs(t, err, idem.ErrLeaseLost)
		must.ErrorIs(t, err, idem.ErrNotRecorded)
	})
}

func TestInvalidScopeOrLayout(t *testing.T) {
	t.Parallel()
	db := idemtest.New(t).Client()
	_, err := idemadmin.Table{DB: db, Name: "t"}.Lookup(context.Background(), idem.Scope{Key: "k"})
	must.ErrorIs(t, err, idem.ErrInvalidKey)
	_, err = idemadmin.Table{DB: db, Name: "t", Layout: idemtable.Layout{SortKey: "SK"}}.Evict(context.Background(), mustScope(t, "k"), idemadmin.EvictOptions{})
	must.Error(t, err)
}

// A lease that ended on this machine's clock less than ClockSkew ago may
// still be live on the holder's: Evict without force leaves it; one that
// ended longer ago is evicted.
func TestEvictTrustsTheClockOnlyBeyondItsSkew(t *testing.T) {
	t.Parallel()
	db := idemtest.New(t).Client()
	ctx := context.Background()
	must.NoError(t, idemtable.Create(ctx, db, "idempotency", idemtable.Layout{}))
	tbl := idemadmin.Table{DB: db, Name: "idempotency"}
	put := func(key string, leaseEnd time.Time) idem.Scope {
		sc := mustScope(t, key)
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("idempotency"), Item: map[string]types.AttributeValue{
			"id":               &types.AttributeValueMemberS{Value: sc.ID()},
			"status":           &types.AttributeValueMemberS{Value: "IN_PROGRESS"},
			"fingerprint":      &types.AttributeValueMemberS{Value: "fp"},
			"lease_token":      &types.AttributeValueMemberS{Value: "t"},
			"lease_expires_at": &types.AttributeValueMemberN{Value: strconv.FormatInt(leaseEnd.UnixMilli(), 10)},
			"expires_at":       &types.AttributeValueMemberN{Value: strconv.FormatInt(leaseEnd.Unix(), 10)},
			"created_at":       &types.AttributeValueMemberS{Value: leaseEnd.Add(-time.Minute).UTC().Format(time.RFC3339)},
		}})
		must.NoError(t, err)
		return sc
	}
	recent := put("recent", time.Now().Add(-time.Second))
	_, err := tbl.Evict(ctx, recent, idemadmin.EvictOptions{})
	must.ErrorIs(t, err, idemadmin.ErrLiveHolder, "ended 1 s ago here: maybe not on the holder's clock")

	old := put("old", time.Now().Add(-idemadmin.ClockSkew-time.Second))
	rec, err := tbl.Evict(ctx, old, idemadmin.EvictOptions{})
	must.NoError(t, err)
	check.Equal(t, "IN_PROGRESS", rec.Status)
	_, err = tbl.Lookup(ctx, old)
	check.ErrorIs(t, err, idemadmin.ErrNotFound)
}
