package api_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/config"
)

// A client that persists its key, restarts and retries gets its first
// answer, though its credentials are a new session of the same role (an
// SDK names each session anew: aws-go-sdk-<time>, botocore-session-<time>,
// a web identity's every refresh). The key is the role's, as its grant
// and its limit are: a retry never creates a second product.
func TestARetryFromAnotherSessionOfTheRoleReplays(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		require.NoError(t, access.Grant(context.Background(), f.env.Client, f.env.Tables.Callers, importer, sellerID))
		first := f.postAs(t, iamCaller("Importer", "aws-go-sdk-1700000000000000001"), "k-restart", widget)
		require.Equal(t, 201, first.StatusCode, first.Body)
		retry := f.postAs(t, iamCaller("Importer", "aws-go-sdk-1700000000900000002"), "k-restart", widget)
		assert.Equal(t, 201, retry.StatusCode, retry.Body)
		assert.Equal(t, "true", retry.Headers["Idempotent-Replayed"], "the retry from a new session replays")
		assert.Equal(t, first.Body, retry.Body)
		assert.Equal(t, 1, f.count(t, f.env.Tables.Products), "one product for one key")
		assert.Equal(t, 1, f.count(t, f.env.Tables.Outbox), "one event for one key")
		assert.Equal(t, "iam:"+importer, createdBy(t, f, first), "the creator is the role, as its grant names it")
	})
}

// The identities of a Cognito identity pool all sign with the pool's role
// and one session name (CognitoIdentityCredentials): each identity is a
// caller of its own, to its keys as to its grant and its limit. One
// identity's key is never another's: neither its replay nor a 422.
func TestCognitoIdentitiesDoNotShareKeys(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelDebug)
		ctx := context.Background()
		const pool = "eu-west-1:0f7c4e9a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"
		ada, bob := cognitoCaller(pool, "eu-west-1:ada"), cognitoCaller(pool, "eu-west-1:bob")
		require.NoError(t, access.Grant(ctx, f.env.Client, f.env.Tables.Callers, "cognito-identity:"+pool+":eu-west-1:ada", sellerID))
		require.NoError(t, access.Grant(ctx, f.env.Client, f.env.Tables.Callers, "cognito-identity:"+pool+":eu-west-1:bob", sellerID))

		byAda := f.postAs(t, ada, "k-shared", widget)
		require.Equal(t, 201, byAda.StatusCode, byAda.Body)
		byBob := f.postAs(t, bob, "k-shared", widget)
		assert.Equal(t, 201, byBob.StatusCode, byBob.Body)
		assert.NotContains(t, byBob.Headers, "Idempotent-Replayed", "bob is not served ada's product")
		assert.NotEqual(t, byAda.Headers["Location"], byBob.Headers["Location"])
		other := f.postAs(t, bob, "k-bob", strings.Replace(widget, "Widget", "Gadget", 1))
		require.Equal(t, 201, other.StatusCode, other.Body)
		mine := f.postAs(t, ada, "k-bob", widget)
		assert.Equal(t, 201, mine.StatusCode, "bob's key is not ada's: %s", mine.Body)

		assert.Equal(t, `cognito-identity:"`+pool+`":"eu-west-1:ada"`, createdBy(t, f, byAda), "the creator is the identity, not the pool's role")
		assert.Equal(t, `cognito-identity:"`+pool+`":"eu-west-1:bob"`, createdBy(t, f, byBob))
	})
}

// cognitoCaller is an IAM authorizer's context for credentials a Cognito
// identity pool gave identity: the pool's role, its fixed session name.
func cognitoCaller(pool, identity string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
		AccountID: "123456789012", CallerID: "AROACOGNITO:CognitoIdentityCredentials", UserID: "AROACOGNITO:CognitoIdentityCredentials",
		UserARN:         "arn:aws:sts::123456789012:assumed-role/Cognito_PoolAuth_Role/CognitoIdentityCredentials",
		CognitoIdentity: events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{IdentityPoolID: pool, IdentityID: identity, AMR: []string{"authenticated"}},
	}}
}

// createdBy is the created_by the products table holds for the product
// resp created.
func createdBy(t *testing.T, f *fixture, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	id := strings.TrimPrefix(resp.Headers["Location"], "/products/")
	out, err := f.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.env.Tables.Products), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	})
	require.NoError(t, err)
	s, ok := out.Item["created_by"].(*types.AttributeValueMemberS)
	require.True(t, ok, "created_by of %s: %v", id, out.Item["created_by"])
	return s.Value
}
