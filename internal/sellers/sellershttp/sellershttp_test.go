package sellershttp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/getseller"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/problem"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
)

type handler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// iamReader is an IAM caller: its route policy decided which sellers it
// reads before the request got here.
var iamReader = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
	UserARN: "arn:aws:sts::123456789012:assumed-role/Reporting/s", AccountID: "123456789012",
}}

func getSeller(t *testing.T, h handler, id string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return getSellerAs(t, h, iamReader, id)
}

func getSellerAs(t *testing.T, h handler, who *events.APIGatewayV2HTTPRequestContextAuthorizerDescription, id string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := h(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: "GET /sellers/{id}", RawPath: "/sellers/" + id, PathParameters: map[string]string{"id": id},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"},
			Authorizer: who,
		},
	})
	require.NoError(t, err)
	return resp
}

// A token reads the statistics of the sellers its seller_ids lists, and
// is refused the others' before any DynamoDB call; an IAM caller reads
// what its route policy lets it; a request no authorizer names a caller
// for reads none.
func TestGetSellerOnlyForTheTokensSellers(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	h, err := getseller.New(env.Client, config.GetSeller{SellersTable: env.Tables.Sellers}, app.Runtime{Out: &logbuf.Buffer{}})
	require.NoError(t, err)
	mine, theirs := uuid.New(), uuid.New()
	token := func(sellers string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
		return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
			Claims: map[string]string{"iss": "https://idp", "sub": "seller-user", "seller_ids": sellers},
		}}
	}
	assertProblem(t, getSellerAs(t, h, token(mine.String()), mine.String()), 404, "not-found")
	assertProblem(t, getSellerAs(t, h, token("*"), theirs.String()), 404, "not-found")
	env.Counter.Reset()
	assertProblem(t, getSellerAs(t, h, token(mine.String()), theirs.String()), 403, "seller-forbidden")
	assertProblem(t, getSellerAs(t, h, token(""), mine.String()), 403, "seller-forbidden")
	assertProblem(t, getSellerAs(t, h, nil, mine.String()), 403, "forbidden")
	assert.Zero(t, env.Counter.Total(), "refused before any DynamoDB call")
	assertProblem(t, getSellerAs(t, h, iamReader, theirs.String()), 404, "not-found")
}

func TestGetSeller(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	logs := &logbuf.Buffer{}
	h, err := getseller.New(env.Client, config.GetSeller{SellersTable: env.Tables.Sellers}, app.Runtime{Out: logs})
	require.NoError(t, err)
	seller := uuid.New()

	assertProblem(t, getSeller(t, h, seller.String()), 404, "not-found")
	assertProblem(t, getSeller(t, h, "not-a-uuid"), 400, "bad-request")
	assertProblem(t, getSeller(t, h, "{"+seller.String()+"}"), 400, "bad-request")

	// Two of the seller's shards, as the consumer writes them: the body
	// is their sum.
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	for _, item := range []map[string]types.AttributeValue{
		{"shard": n("0"), "product_count": n("2"), "cents_USD": n("500"), "cents_EUR": n("998"),
			"updated_at": &types.AttributeValueMemberS{Value: "2026-12-01T09:00:00Z"}},
		{"shard": n("4"), "product_count": n("1"), "cents_EUR": n("1000"), "cents_JPY": n("300"),
			"updated_at": &types.AttributeValueMemberS{Value: "2026-12-01T10:11:12.345678Z"}},
	} {
		item["seller_id"] = &types.AttributeValueMemberS{Value: seller.String()}
		_, err = env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Sellers), Item: item})
		require.NoError(t, err)
	}
	resp := getSeller(t, h, seller.String())
	require.Equal(t, 200, resp.StatusCode, resp.Body)
	assert.Equal(t, "application/json", resp.Headers["Content-Type"])
	assert.Equal(t, `{"seller_id":"`+seller.String()+`","product_count":3,"listed":[`+
		`{"cents":1998,"currency":"EUR"},{"cents":300,"currency":"JPY"},{"cents":500,"currency":"USD"}],`+
		`"updated_at":"2026-12-01T10:11:12.345Z"}`, resp.Body, "one total per currency, summed over the shards, sorted, each through pkg/money; the latest shard's time")
	assert.Contains(t, logs.String(), `"msg":"get seller"`)
}

// assertProblem checks an RFC 9457 response of the kind.
func assertProblem(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int, kind string) {
	t.Helper()
	assert.Equal(t, status, resp.StatusCode, resp.Body)
	assert.Equal(t, "application/problem+json", resp.Headers["Content-Type"])
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &p), resp.Body)
	assert.Equal(t, problem.TypeBase+kind, p["type"])
	assert.EqualValues(t, status, p["status"])
	assert.NotEmpty(t, p["title"])
	assert.NotEmpty(t, p["detail"])
}
