package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// otherSeller is a seller no test caller is meant to act for.
const otherSeller = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"

// importer is the IAM caller every session of role Importer is.
const importer = "arn:aws:iam::123456789012:role/Importer"

func (f *fixture) postAs(t *testing.T, who *events.APIGatewayV2HTTPRequestContextAuthorizerDescription, key, body string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	req := postReq(jsonHeaders(key), body)
	req.RequestContext.Authorizer = who
	resp, err := f.create(context.Background(), req)
	require.NoError(t, err, "handlers never return an error to Lambda")
	return resp
}

// A token acts for the sellers its seller_ids claim lists, decided before
// any DynamoDB call: a token that does not list the seller gets 403, its
// key is never claimed, and the same key with a token that lists the
// seller creates the product.
func TestCreateTokenActsForTheSellersItLists(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		for name, sellers := range map[string]string{
			"another seller": otherSeller,
			"no claim":       "",
			"malformed":      sellerID + "," + otherSeller,
		} {
			f.env.Counter.Reset()
			p := assertProblem(t, f.postAs(t, jwtCaller("alice", sellers), "k-tok", widget), 403, "seller-forbidden")
			assert.Contains(t, p.Detail, sellerID, name)
			assert.Zero(t, f.env.Counter.Total(), "%s: refused before any DynamoDB call", name)
		}
		f.assertNothingWritten(t)

		resp := f.postAs(t, jwtCaller("alice", otherSeller+" "+sellerID), "k-tok", widget)
		require.Equal(t, 201, resp.StatusCode, "the key was never claimed: %s", resp.Body)
		assert.NotContains(t, resp.Headers, "Idempotent-Replayed")
		assert.Equal(t, 201, f.postAs(t, jwtCaller("bob", "*"), "k-tok", widget).StatusCode, "a token for every seller")
		assert.Equal(t, 2, f.count(t, f.env.Tables.Products))
	})
}

// An IAM caller acts for the sellers its grant in the callers table lists:
// a caller without one gets 403 and nothing is written, its key released
// (reserve) or never claimed (transact), so the same key creates the
// product once it is granted. Every session of a role is one caller.
func TestCreateIAMCallerNeedsAGrant(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		ctx := context.Background()
		p := assertProblem(t, f.postAs(t, iamCaller("Importer", "s1"), "k-iam", widget), 403, "seller-forbidden")
		assert.Contains(t, p.Detail, "no grant")
		f.assertNothingWritten(t)

		require.NoError(t, access.Grant(ctx, f.env.Client, f.env.Tables.Callers, importer, sellerID))
		first := f.postAs(t, iamCaller("Importer", "s1"), "k-iam", widget)
		require.Equal(t, 201, first.StatusCode, "the 403 was not the key's answer: %s", first.Body)
		assert.NotContains(t, first.Headers, "Idempotent-Replayed")
		assert.Equal(t, 201, f.postAs(t, iamCaller("Importer", "s2"), "k-iam-2", widget).StatusCode, "another session of the role")
		assertProblem(t, f.postAs(t, iamCaller("Importer", "s1"), "k-iam-3", strings.Replace(widget, sellerID, otherSeller, 1)), 403, "seller-forbidden")
		assertProblem(t, f.postAs(t, iamCaller("Other", "s1"), "k-iam-4", widget), 403, "seller-forbidden")

		require.NoError(t, access.Revoke(ctx, f.env.Client, f.env.Tables.Callers, importer, sellerID))
		assertProblem(t, f.postAs(t, iamCaller("Importer", "s1"), "k-iam-5", widget), 403, "seller-forbidden")
		// A replay is the answer to what was done when it was allowed.
		again := f.postAs(t, iamCaller("Importer", "s1"), "k-iam", widget)
		assert.Equal(t, first.Body, again.Body)
		assert.Equal(t, "true", again.Headers["Idempotent-Replayed"])
		assert.Equal(t, 2, f.count(t, f.env.Tables.Products))
		assert.Equal(t, 2, f.count(t, f.env.Tables.Outbox))

		require.NoError(t, access.Grant(ctx, f.env.Client, f.env.Tables.Callers, importer, access.AnySeller))
		assert.Equal(t, 201, f.postAs(t, iamCaller("Importer", "s3"), "k-iam-6", strings.Replace(widget, sellerID, otherSeller, 1)).StatusCode, "a grant of every seller")
	})
}

// A request whose authorizer names no caller acts for no seller.
func TestCreateWithoutCallerIs403(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	assertProblem(t, f.postAs(t, nil, "k-none", widget), 403, "forbidden")
	f.assertNothingWritten(t)
}

// The grant is checked in the creation's own transaction: while that
// transaction runs, it holds the replica of the grant it checks, so a
// revocation cannot commit in between (DynamoDB cancels it); once the
// creation has committed, the revocation does, and the next creation is
// refused.
func TestGrantRevocationCannotInterleaveWithACreation(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		if f.env.Store == nil {
			t.Skipf("holding a transaction needs the embedded backend; %s has none", f.env.Kind)
		}
		ctx := context.Background()
		require.NoError(t, access.Grant(ctx, f.env.Client, f.env.Tables.Callers, importer, sellerID))
		held := f.env.Store.Hold(idemtest.OpTransactWriteItems)
		defer held.Release() // a failed assertion below must not leave it parked
		done := make(chan events.APIGatewayV2HTTPResponse, 1)
		go func() { done <- f.postAs(t, iamCaller("Importer", "s"), "k-held", widget) }()
		<-held.Arrived()

		// What Revoke sends, once: every replica of the grant in one
		// transaction, cancelled on the replica the creation holds.
		revoke := make([]types.TransactWriteItem, access.GrantReplicas)
		for r := range revoke {
			revoke[r] = types.TransactWriteItem{Update: &types.Update{
				TableName:                 aws.String(f.env.Tables.Callers),
				Key:                       map[string]types.AttributeValue{access.AttrID: &types.AttributeValueMemberS{Value: access.GrantPrefix + importer + "|" + strconv.Itoa(r)}},
				UpdateExpression:          aws.String("DELETE #s :s"),
				ExpressionAttributeNames:  map[string]string{"#s": access.AttrSellerIDs},
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberSS{Value: []string{sellerID}}},
			}}
		}
		_, err := f.env.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: revoke})
		var tce *types.TransactionCanceledException
		require.ErrorAs(t, err, &tce, "a revocation while a creation that checked the grant commits")
		conflicts := 0
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "TransactionConflict" {
				conflicts++
			}
		}
		assert.Equal(t, 1, conflicts, "on the one replica the creation checked: %v", tce.CancellationReasons)

		held.Release()
		assert.Equal(t, 201, (<-done).StatusCode)
		require.NoError(t, access.Revoke(ctx, f.env.Client, f.env.Tables.Callers, importer, sellerID))
		assertProblem(t, f.postAs(t, iamCaller("Importer", "s"), "k-after", widget), 403, "seller-forbidden")
		assert.Equal(t, 1, f.count(t, f.env.Tables.Products))
	})
}

// Many creations by one IAM caller while its grant is revoked: each
// commits with the grant or is refused whole; none that began after the
// revocation returned commits; every 201 is one product and one event,
// and nothing else is.
func TestConcurrentCreationsAndARevocation(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelInfo)
		ctx := context.Background()
		require.NoError(t, access.Grant(ctx, f.env.Client, f.env.Tables.Callers, importer, sellerID))
		const workers, each = 8, 12
		var revoked atomic.Bool
		var created atomic.Int32
		enough := make(chan struct{})
		var once sync.Once
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					after := revoked.Load()
					resp := f.postAs(t, iamCaller("Importer", fmt.Sprintf("w%d", w)), fmt.Sprintf("k-%d-%d", w, i), widget)
					mu.Lock()
					statuses[resp.StatusCode]++
					mu.Unlock()
					switch resp.StatusCode {
					case 201:
						assert.False(t, after, "a creation that began after the revocation returned committed")
						if created.Add(1) == workers {
							once.Do(func() { close(enough) })
						}
					case 403:
						assertProblem(t, resp, 403, "seller-forbidden")
					case 503: // conflicts past the retries: retryable, nothing written
					default:
						t.Errorf("status %d: %s", resp.StatusCode, resp.Body)
					}
				}
			})
		}
		<-enough
		require.NoError(t, access.Revoke(ctx, f.env.Client, f.env.Tables.Callers, importer, sellerID))
		revoked.Store(true)
		wg.Wait()
		t.Logf("mode=%s statuses=%v", mode, statuses)
		assert.Positive(t, statuses[403], "creations after the revocation were refused")
		assert.Equal(t, statuses[201], f.count(t, f.env.Tables.Products), "one product per 201, none for a refusal")
		assert.Equal(t, statuses[201], f.count(t, f.env.Tables.Outbox), "one event per 201")
	})
}
