package idemadmin_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// createProduct is an effect whose writes are DynamoDB's: a product put
// only if it is not there yet, as createproduct writes it.
func createProduct(id string) func(context.Context) (idem.Effect, error) {
	return func(context.Context) (idem.Effect, error) {
		return idem.Effect{
			Response: idem.Response{Status: 201},
			Writes: []types.TransactWriteItem{{Put: &types.Put{
				TableName:           aws.String("products"),
				Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
				ConditionExpression: aws.String("attribute_not_exists(id)"),
			}}},
		}, nil
	}
}

// Evicting a completed key whose first execution committed DynamoDB
// writes would run them again over the writes that landed (the retry
// then fails with "business condition failed"): Evict refuses it and
// says why, on every way that commits writes, unless the operator asks
// for it (RerunWrites), and Force alone does not. A Run record has no
// writes to run again, and goes.
func TestEvictRefusesToRunLandedWritesAgain(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, tbl idemadmin.Table, store *idem.Store) {
		ctx := context.Background()
		ways := map[string]func(idem.Scope) error{
			"Execute": func(sc idem.Scope) error {
				_, err := store.Execute(ctx, sc, "fp", createProduct("p-"+sc.Key))
				return err
			},
			"Transact": func(sc idem.Scope) error {
				_, err := store.Transact(ctx, sc, "fp", createProduct("p-"+sc.Key))
				return err
			},
			"ExecuteBatch": func(sc idem.Scope) error {
				eff, _ := createProduct("p-" + sc.Key)(ctx)
				res, err := store.ExecuteBatch(ctx, []idem.BatchItem{{Scope: sc, Fingerprint: "fp", Response: eff.Response}},
					func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return eff.Writes, nil })
				if err == nil {
					err = res[0].Err
				}
				return err
			},
		}
		for name, way := range ways {
			sc := mustScope(t, "k-"+name)
			must.NoError(t, way(sc), name)

			rec, err := tbl.Evict(ctx, sc, idemadmin.EvictOptions{})
			must.ErrorIs(t, err, idemadmin.ErrWritesLanded, name)
			check.Equal(t, 1, rec.Writes, name)
			_, err = tbl.Evict(ctx, sc, idemadmin.EvictOptions{Force: true})
			must.ErrorIs(t, err, idemadmin.ErrWritesLanded, "%s: Force is for live holders", name)
			rec, err = tbl.Lookup(ctx, sc)
			must.NoError(t, err, "%s: the record stays", name)
			check.Equal(t, 1, rec.Writes)
			must.NoError(t, way(sc), "%s: the retry replays", name)

			rec, err = tbl.Evict(ctx, sc, idemadmin.EvictOptions{RerunWrites: true})
			must.NoError(t, err, name)
			check.Equal(t, "COMPLETED", rec.Status)
			// What the operator was warned of: the writes run again,
			// over those that landed.
			must.ErrorIs(t, way(sc), idem.ErrConditionFailed, name)
		}

		sc := mustScope(t, "k-run")
		_, err := store.Run(ctx, sc, "fp", ok(202))
		must.NoError(t, err)
		rec, err := tbl.Evict(ctx, sc, idemadmin.EvictOptions{})
		must.NoError(t, err, "a Run record has no writes to run again")
		check.Equal(t, 0, rec.Writes)
	})
}

// A record completed before records counted their writes may have some:
// it is refused the same, and the error says so; an expired one goes.
func TestEvictRefusesARecordThatDoesNotCountItsWrites(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, tbl idemadmin.Table, store *idem.Store) {
		ctx := context.Background()
		l := tbl.Layout.WithDefaults()
		put := func(key string, expires time.Time) idem.Scope {
			sc := mustScope(t, key)
			item := l.Key(sc.ID())
			for name, v := range map[string]string{
				l.Attributes.Status: "COMPLETED", l.Attributes.Fingerprint: "fp", l.Attributes.LeaseToken: "t",
				l.Attributes.CompletionID: "c", l.Attributes.ResponseBody: "",
			} {
				item[name] = &types.AttributeValueMemberS{Value: v}
			}
			item[l.Attributes.Format] = &types.AttributeValueMemberN{Value: "2"}
			item[l.Attributes.ExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(expires.Unix(), 10)}
			item[l.Attributes.LeaseExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(expires.Add(-24*time.Hour).UnixMilli(), 10)}
			_, err := tbl.DB.(*dynamodb.Client).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: item})
			must.NoError(t, err)
			return sc
		}
		old := put("before", time.Now().Add(time.Hour))
		rec, err := tbl.Lookup(ctx, old)
		must.NoError(t, err)
		check.Equal(t, idemadmin.WritesUnknown, rec.Writes)
		_, err = tbl.Evict(ctx, old, idemadmin.EvictOptions{})
		must.ErrorIs(t, err, idemadmin.ErrWritesLanded)
		check.ErrorContains(t, err, "did not count its writes")
		_, err = tbl.Evict(ctx, old, idemadmin.EvictOptions{RerunWrites: true})
		must.NoError(t, err)

		expired := put("expired", time.Now().Add(-idemadmin.ClockSkew-2*time.Second))
		_, err = tbl.Evict(ctx, expired, idemadmin.EvictOptions{})
		must.NoError(t, err, "the store counts it absent already")
	})
}
