package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/config"
)

// Every request's log line names its caller, the principal its
// idempotency scope uses, and a create's line the product it created or
// replayed: who did what. No line carries the idempotency key, nor any
// prefix of its unkeyed SHA-256 (the old key_hash), which anyone could
// compute from a guessed key such as "order-42".
func TestEveryRequestLogsItsCallerAndNeverTheKey(t *testing.T) {
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelInfo)
		const key = "order-42-of-alice@example.com"
		created := f.post(t, jsonHeaders(`"`+key+`"`), widget)
		require.Equal(t, 201, created.StatusCode, created.Body)
		replayed := f.post(t, jsonHeaders(`"`+key+`"`), widget)
		require.Equal(t, 201, replayed.StatusCode)
		reused := f.post(t, jsonHeaders(`"`+key+`"`), strings.Replace(widget, "Widget", "Gadget", 1))
		require.Equal(t, 422, reused.StatusCode)
		id := strings.TrimPrefix(created.Headers["Location"], "/products/")
		require.Equal(t, 200, f.getProduct(t, id).StatusCode)
		anon := postReq(jsonHeaders(`"`+key+`"`), widget)
		anon.RequestContext.Authorizer = nil
		refused, err := f.create(context.Background(), anon)
		require.NoError(t, err)
		require.Equal(t, 403, refused.StatusCode)

		var lines []map[string]any
		for _, l := range f.logs.Logs() {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m), l)
			lines = append(lines, m)
		}
		require.Len(t, lines, 5, "one line per request")
		for i, want := range []struct{ principal, productID string }{
			{testCaller, id}, {testCaller, id}, {testCaller, ""}, {testCaller, ""}, {"", ""},
		} {
			assert.Equal(t, want.principal, lines[i]["principal"], "line %d: %v", i, lines[i])
			if want.productID != "" {
				assert.Equal(t, want.productID, lines[i]["product_id"], "line %d", i)
			} else {
				assert.NotContains(t, lines[i], "product_id", "line %d", i)
			}
		}
		all := f.logs.String()
		assert.NotContains(t, all, "order-42", "the key, or any part of it, is never logged")
		sum := sha256.Sum256([]byte(key))
		assert.NotContains(t, all, hex.EncodeToString(sum[:4]), "nor its unkeyed hash")
	})
}

// A product records who created it: the caller's principal, the scope
// its key was claimed in, as created_by in the products table, in both
// modes. The API's bodies do not carry it: any caller allowed to read
// the product would learn another caller's identity (an IAM ARN names
// the account and the role, a JWT subject a person).
func TestAProductRecordsItsCreator(t *testing.T) {
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelInfo)
		created := f.post(t, jsonHeaders(`"creator-key"`), widget)
		require.Equal(t, 201, created.StatusCode, created.Body)
		id := strings.TrimPrefix(created.Headers["Location"], "/products/")
		out, err := f.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String(f.env.Tables.Products), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		})
		require.NoError(t, err)
		assert.Equal(t, &types.AttributeValueMemberS{Value: testCaller}, out.Item["created_by"])
		assert.NotContains(t, created.Body, "created_by")
		assert.NotContains(t, f.getProduct(t, id).Body, "created_by")
	})
}
