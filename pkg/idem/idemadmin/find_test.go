package idemadmin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// An operator finds the record of the scope hash a span shows, in every
// layout, with the span's operation or without; with another key, or
// once the record has gone, nothing; without a key, an error.
func TestFindTheRecordOfASpansScopeHash(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, tbl idemadmin.Table, store *idem.Store) {
		ctx := context.Background()
		hasher, err := idemtrace.NewScopeHasher([]byte("the operators' 32-byte trace key"))
		must.NoError(t, err)
		var scopes []idem.Scope
		for i := range 30 {
			op := []string{"POST /orders", "POST /refunds"}[i%2]
			sc, err := idem.NewScope(op, fmt.Sprintf("user-%d", i%3), fmt.Sprintf("order-%04d", i))
			if i%5 == 0 {
				sc, err = idem.NewAnonymousScope(op, fmt.Sprintf("order-%04d", i))
			}
			must.NoError(t, err)
			_, err = store.Run(ctx, sc, "fp", ok(201))
			must.NoError(t, err)
			scopes = append(scopes, sc)
		}
		// Other items of a shared table, whose keys have the records'
		// prefix but are no scope's ID: one small, and 1.2 MB more, which
		// take Find past its first page (DynamoDB's, and the strict
		// store's, is 1 MB of items read).
		l := tbl.Layout.WithDefaults()
		put := func(id string, size int) {
			junk := l.Key(id)
			junk["x"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", size)}
			_, err := tbl.DB.(*dynamodb.Client).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: junk})
			must.NoError(t, err)
		}
		put("v1|garbage", 10)
		for i := range 4 {
			put(fmt.Sprintf("v1|0filler-%d", i), 300<<10)
		}

		tbl.ScopeHasher = hasher
		for _, sc := range scopes { // every one, on whichever page
			recs, err := tbl.Find(ctx, "", hasher.Hash(sc.ID()))
			must.NoError(t, err)
			must.Len(t, recs, 1, "%s", sc.ID())
		}

		tbl.ScopeHasher = hasher
		for _, sc := range []idem.Scope{scopes[0], scopes[7], scopes[29]} {
			hash := hasher.Hash(sc.ID())
			for _, op := range []string{sc.Operation, ""} {
				recs, err := tbl.Find(ctx, op, hash)
				must.NoError(t, err)
				must.Len(t, recs, 1, "operation %q", op)
				check.Equal(t, sc.ID(), recs[0].ID)
				check.Equal(t, sc.Key, recs[0].Key)
				check.Equal(t, sc.Principal, recs[0].Principal)
				check.Equal(t, sc.Anonymous(), recs[0].Anonymous)
				check.Equal(t, hash, recs[0].ScopeHash)
				check.Equal(t, "COMPLETED", recs[0].Status)
			}
			other := map[string]string{"POST /orders": "POST /refunds", "POST /refunds": "POST /orders"}[sc.Operation]
			recs, err := tbl.Find(ctx, other, hash)
			must.NoError(t, err)
			check.Empty(t, recs, "another operation's records")
		}

		recs, err := tbl.Find(ctx, "", hasher.Hash("v1|garbage"))
		must.NoError(t, err)
		check.Empty(t, recs, "an item that is no scope's record")

		sc := scopes[7]
		otherKey, err := idemtrace.NewScopeHasher([]byte("another key, of 32 bytes or more"))
		must.NoError(t, err)
		recs, err = tbl.Find(ctx, sc.Operation, otherKey.Hash(sc.ID()))
		must.NoError(t, err)
		check.Empty(t, recs, "a hash made with another key")

		_, err = tbl.Evict(ctx, sc, idemadmin.EvictOptions{})
		must.NoError(t, err)
		recs, err = tbl.Find(ctx, sc.Operation, hasher.Hash(sc.ID()))
		must.NoError(t, err)
		check.Empty(t, recs, "gone")

		for _, bad := range []string{"", "xyz", "0123456789abcdeg", "0123456789abcdef0"} {
			_, err = tbl.Find(ctx, "", bad)
			check.Error(t, err, "%q", bad)
		}
		tbl.ScopeHasher = nil
		_, err = tbl.Find(ctx, "", hasher.Hash(sc.ID()))
		check.ErrorIs(t, err, idemadmin.ErrNoScopeHasher)
	})
}

// With a ScopeHasher, Lookup says the scope's hash: the one a span of the
// key carries.
func TestLookupSaysTheScopeHash(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, tbl idemadmin.Table, store *idem.Store) {
		ctx := context.Background()
		sc := mustScope(t, "k-1")
		_, err := store.Run(ctx, sc, "fp", ok(201))
		must.NoError(t, err)
		rec, err := tbl.Lookup(ctx, sc)
		must.NoError(t, err)
		check.Equal(t, "", rec.ScopeHash, "no hasher, no hash")
		tbl.ScopeHasher, err = idemtrace.NewScopeHasher([]byte("the operators' 32-byte trace key"))
		must.NoError(t, err)
		rec, err = tbl.Lookup(ctx, sc)
		must.NoError(t, err)
		check.Equal(t, tbl.ScopeHasher.Hash(sc.ID()), rec.ScopeHash)
	})
}
