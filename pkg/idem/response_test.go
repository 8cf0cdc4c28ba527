package idem_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A caller that is not HTTP has a status of its own too: every way in
// stores it, and every replay (from the table, from the cache) gives it
// back with the rest, as the record holds it.
func TestAResponsesStatusIsStoredByEveryWayIn(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx := context.Background()
	resp := idem.Response{Status: 7, Meta: map[string]string{"kind": "invoice"}, Body: []byte("inv-1")}
	for _, cache := range []bool{false, true} {
		opts := []idem.Option{}
		if cache {
			opts = append(opts, idem.WithCache(16, 0))
		}
		s := newStore(t, env, opts...)
		prefix := map[bool]string{false: "table-", true: "cache-"}[cache]
		ways := map[string]func(idem.Scope) (idem.Result, error){
			"Run": func(sc idem.Scope) (idem.Result, error) {
				return s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return resp, nil })
			},
			"Execute": func(sc idem.Scope) (idem.Result, error) {
				return s.Execute(ctx, sc, "fp", func(context.Context) (idem.Effect, error) { return idem.Effect{Response: resp}, nil })
			},
			"Transact": func(sc idem.Scope) (idem.Result, error) {
				return s.Transact(ctx, sc, "fp", func(context.Context) (idem.Effect, error) { return idem.Effect{Response: resp}, nil })
			},
			"ExecuteBatch": func(sc idem.Scope) (idem.Result, error) {
				res, err := s.ExecuteBatch(ctx, []idem.BatchItem{{Scope: sc, Fingerprint: "fp", Response: resp}},
					func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })
				if err != nil {
					return idem.Result{}, err
				}
				return res[0].Result, res[0].Err
			},
		}
		for name, call := range ways {
			sc := scope(t, prefix+name)
			first, err := call(sc)
			must.NoError(t, err, name)
			check.Equal(t, resp, first.Response, name)
			again, err := call(sc)
			must.NoError(t, err, name)
			check.Equal(t, idem.OutcomeReplayed, again.Outcome, name)
			check.Equal(t, resp, again.Response, "%s: the replay (cache %v)", name, cache)
			rec, ok, err := s.Get(ctx, sc)
			must.NoError(t, err)
			must.True(t, ok)
			check.Equal(t, resp, idem.Response(rec.Result), "%s: the record", name)
		}
	}
}

// Metadata keys that begin with ':' are the library's (the status and
// Omitted are stored under them): a response that uses one is not
// storable. Run records a stand-in with its status, so its effect runs
// once; Execute and Transact refuse it before their writes are sent.
func TestMetadataKeysOfTheLibraryAreNotStorable(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env)
	ctx := context.Background()
	bad := idem.Response{Status: 201, Meta: map[string]string{":status": "500", "X": "y"}, Body: []byte("b")}
	runs := 0
	for range 2 {
		_, err := s.Run(ctx, scope(t, "reserved-run"), "fp", func(context.Context) (idem.Response, error) {
			runs++
			return bad, nil
		})
		must.NoError(t, err)
	}
	check.Equal(t, 1, runs, "the effect ran once")
	again, err := s.Run(ctx, scope(t, "reserved-run"), "fp", mustNotRun(t))
	must.NoError(t, err)
	check.Equal(t, 201, again.Response.Status)
	check.Equal(t, "not storable", again.Response.Omitted)
	check.Empty(t, again.Response.Meta)
	check.Empty(t, again.Response.Body)

	for _, call := range []func(context.Context, idem.Scope, string, func(context.Context) (idem.Effect, error), ...idem.CallOption) (idem.Result, error){s.Execute, s.Transact} {
		sc := scope(t, "reserved-writes")
		_, err := call(ctx, sc, "fp", func(context.Context) (idem.Effect, error) {
			_, writes := businessWrites(env)
			return idem.Effect{Response: bad, Writes: writes}, nil
		})
		must.ErrorIs(t, err, idem.ErrInvalidResponse)
	}
	check.Zero(t, countItems(t, env, env.Tables.Products), "no write was sent")
}
