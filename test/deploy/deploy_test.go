//go:build deploy

// Package deploy deploys template.yaml as committed to an AWS emulator
// (MiniStack) and sends the README's requests through the deployed API
// Gateway, signed with SigV4: the stack's own wiring (routes and
// authorizer, the Streams mapping and its INSERT filter, the relay, the
// bus, the rule and its queue, the consumer's mapping, the dead-letter
// queue, each function's environment and role) is what serves them.
//
// It is built only with -tags deploy: `make deploy-local`
// (scripts/deploy-local.sh) installs MiniStack, registers arm64 emulation
// (MiniStack runs the arm64 bootstraps as processes of this machine under
// qemu), starts it on a loopback port, points AWS_ENDPOINT_URL and dummy
// credentials at it, runs this test and stops MiniStack however it ends.
// The test builds with `sam build`, drops what the emulator refuses and
// the grant conditions it cannot evaluate, and writes a parameter's
// MaximumConcurrency as a number (emulator.Adjust), deploys with `sam
// deploy --resolve-s3` and a low CallerLimit (deployParameters), creates
// the HTTP API's routes from the OpenAPI Body SAM generated (MiniStack
// ignores it; emulator.HTTPAPI), grants its signing identity the README's
// seller as an operator does (cmd/grant), then sends the requests, a
// caller without the grant and one over its limit among them, and deletes
// the stack and the tables it keeps however it ends. docs/testing.md says
// what this proves and what it cannot.
package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigatewayv2"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/problem"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// root is the repository, where sam builds and deploys (absolute: sam
// resolves a template's path from where it runs).
var root, _ = filepath.Abs(filepath.Join("..", ".."))

// samconfig holds the project's sam deploy defaults (capabilities, the
// managed bucket, parameter overrides), which the deployment uses.
var samconfig = filepath.Join(root, "samconfig.toml")

// The README's requests (A first request): a product of the README's
// seller, its idempotency key, and the same key with another name.
const (
	readmeSeller = "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"
	readmeKey    = `"order-42"`
	readmeBody   = `{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"` + readmeSeller + `"}`
	otherBody    = `{"name":"Gadget","price_cents":999,"currency":"EUR","seller_id":"` + readmeSeller + `"}`
)

// TestDeployedStack deploys the stack and drives the README's requests
// through it.
func TestDeployedStack(t *testing.T) {
	endpoint := emulatorEndpoint(t)
	ctx := t.Context()
	region := os.Getenv(config.Region.Name)
	require.NotEmpty(t, region, "%s is not set (make deploy-local sets it)", config.Region.Name)
	name := os.Getenv("DEPLOY_LOCAL_STACK")
	if name == "" {
		name = "idemlambda-local"
	}

	// Build, adjust, deploy.
	sam(ctx, t, "build", "--build-in-source")
	deployed, tpl := adjustedTemplate(t)
	if os.Getenv("DEPLOY_LOCAL_KEEP") == "" {
		t.Cleanup(func() { deleteStack(t, name, region, tpl) })
	} else {
		t.Logf("DEPLOY_LOCAL_KEEP is set: the stack %s stays (make deploy-local keeps MiniStack up until Ctrl-C)", name)
	}
	start := time.Now()
	out := sam(ctx, t, "deploy", "--template-file", deployed, "--stack-name", name, "--region", region,
		"--config-file", samconfig, "--parameter-overrides", deployParameters(t), "--no-confirm-changeset", "--no-progressbar")
	t.Logf("sam deploy: %s (%.1f s)", lastLine(out), time.Since(start).Seconds())

	cfg := awsConfig(t)
	cf := cloudformation.NewFromConfig(cfg)
	s := describe(ctx, t, cf, name)
	t.Logf("stack %s: %d resources; outputs: %v", name, len(s.eval.Resources), s.outputs)
	createRoutes(ctx, t, apigatewayv2.NewFromConfig(cfg), s)

	// The API's URL is the stack's output, whose host names the API.
	apiURL, err := url.Parse(s.outputs["ApiUrl"])
	require.NoError(t, err)
	apiID := s.physical(t, "HttpApi")
	require.Equal(t, apiID+".execute-api."+region+".amazonaws.com", apiURL.Host, "ApiUrl names the stack's HTTP API")
	a := newAPI(t, endpoint, apiID, region, cfg.Credentials)
	t.Logf("ApiUrl %s is, on MiniStack, %s; every request is printed with its answer", apiURL, a.base)

	// The signing identity acts for the README's seller: an operator
	// grants it in the stack's callers table (docs/operations.md,
	// Security), as the test does here. The rest of the requests need it.
	stsClient := sts.NewFromConfig(cfg)
	signer := signingIdentity(ctx, t, stsClient)
	grantSeller(ctx, t, s.outputs["CallersTableName"], signer, readmeSeller)

	// 1. Create: 201 with the product and its Location.
	create := call{name: "create", method: "POST", path: "/products", body: readmeBody,
		header: map[string]string{"Content-Type": "application/json", "Idempotency-Key": readmeKey}}
	created := a.do(t, create)
	createdAt := time.Now()
	require.Equal(t, 201, created.status, "create")
	var newProduct struct {
		ID       string `json:"id"`
		SellerID string `json:"seller_id"`
	}
	require.NoError(t, json.Unmarshal(created.body, &newProduct))
	assert.Equal(t, "/products/"+newProduct.ID, created.header.Get("Location"))
	assert.Empty(t, created.header.Get("Idempotent-Replayed"))

	// 2. The same request again: the stored answer, byte for byte, marked.
	replayed := a.do(t, create.named("replay"))
	require.Equal(t, 201, replayed.status, "replay")
	assert.Equal(t, string(created.body), string(replayed.body), "the replay's body is the stored bytes")
	want := created.functionHeaders()
	want.Set("Idempotent-Replayed", "true")
	assert.Equal(t, want, replayed.functionHeaders(), "the stored headers plus Idempotent-Replayed (the gateway's own %v aside)", gatewayHeaders)

	// 3. The same key with another payload: 422.
	reused := a.do(t, create.named("same key, another payload").withBody(otherBody))
	assert.Equal(t, 422, reused.status)
	assert.Equal(t, "application/problem+json", reused.header.Get("Content-Type"))

	// 4. The product.
	got := a.do(t, call{name: "get the product", method: "GET", path: "/products/" + newProduct.ID})
	assert.Equal(t, 200, got.status)
	assert.JSONEq(t, string(created.body), string(got.body), "GET returns what POST created")

	// The product records its creator: the IAM identity the request was
	// signed as, which the route's IAM authorization passes to createproduct
	// (it refuses a request without one).
	db := dynamodb.NewFromConfig(cfg)
	stored, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.physical(t, "ProductsTable")),
		Key:       map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: newProduct.ID}},
	})
	require.NoError(t, err)
	p, err := product.FromItem(stored.Item)
	require.NoError(t, err)
	assert.Equal(t, "iam:"+signer, p.CreatedBy(), "created_by is the signing identity, as the route's IAM authorization names it")
	t.Logf("the product's created_by: %s (MiniStack's requestContext.authorizer.iam.userArn for the signing key)", p.CreatedBy())

	// 5. The seller's count, once the event has gone through the deployed
	// Streams mapping (INSERT filter), relay, bus, rule, queue and consumer.
	reached := waitForSellerCount(ctx, t, db, s.outputs["SellersTableName"], readmeSeller)
	t.Logf("the ProductCreated event reached the sellers table %d ms after the 201 (outbox stream -> relay -> bus -> rule -> queue -> consumer)",
		reached.Sub(createdAt).Milliseconds())
	seller := a.do(t, call{name: "the seller's statistics", method: "GET", path: "/sellers/" + readmeSeller})
	require.Equal(t, 200, seller.status)
	// The body's numbers are exact integers of any size (sellers.Number):
	// read as the JSON carries them.
	var stats struct {
		ProductCount json.Number `json:"product_count"`
		Listed       []struct {
			Cents    json.Number `json:"cents"`
			Currency string      `json:"currency"`
		} `json:"listed"`
	}
	require.NoError(t, json.Unmarshal(seller.body, &stats))
	assert.Equal(t, json.Number("1"), stats.ProductCount, "one product, counted once")
	require.Len(t, stats.Listed, 1)
	assert.Equal(t, json.Number("999"), stats.Listed[0].Cents)
	assert.Equal(t, "EUR", stats.Listed[0].Currency)

	// 6. Unsigned: the route's IAM authorization refuses it.
	unsigned := a.do(t, create.named("no signature").withoutSignature())
	assert.Equal(t, 403, unsigned.status)

	// 7. Another IAM caller, signed with its own credentials, allowed the
	// route (the stack's ProductCreatorPolicy, as docs/operations.md says
	// to attach) but without a grant of the seller: 403 seller-forbidden.
	strangerARN, strangerCreds := federatedCaller(ctx, t, stsClient, "ungranted", s.outputs["ProductCreatorPolicyArn"])
	stranger := newAPI(t, endpoint, apiID, region, strangerCreds)
	forbidden := stranger.do(t, create.named("a caller without the seller's grant ("+strangerARN+")").withKey(`"order-43"`))
	assert.Equal(t, 403, forbidden.status)
	assert.Equal(t, problem.TypeBase+"seller-forbidden", forbidden.problemType(t), "%s", forbidden.body)

	// 8. The signing identity over its limit (CallerLimit per
	// CallerLimitWindow, limitParameters): 429 with Retry-After. Its first
	// product counted; a window may end once among these requests, so
	// the limit is reached within twice the limit's creations.
	limit, err := strconv.Atoi(s.eval.Parameters["CallerLimit"])
	require.NoError(t, err, "the deployed CallerLimit")
	creations, limited := 1, answer{}
	for i := 1; limited.status == 0 && creations <= 2*limit; i++ {
		ans := a.do(t, create.named(fmt.Sprintf("toward the limit of %d per %s, #%d", limit, s.eval.Parameters["CallerLimitWindow"], i)).
			withKey(fmt.Sprintf(`"limit-%d"`, i)))
		switch ans.status {
		case 201:
			creations++
		case 429:
			limited = ans
		default:
			t.Fatalf("a creation toward the limit answered %d: %s", ans.status, ans.body)
		}
	}
	require.Equal(t, 429, limited.status, "a caller that created %d products with a limit of %d per window is refused", creations, limit)
	assert.Equal(t, problem.TypeBase+"too-many-requests", limited.problemType(t), "%s", limited.body)
	retryAfter, err := strconv.Atoi(limited.header.Get("Retry-After"))
	assert.NoError(t, err, "Retry-After %q is whole seconds", limited.header.Get("Retry-After"))
	assert.Positive(t, retryAfter, "Retry-After")

	// 9. A message the consumer can never count goes to the dead-letter queue.
	poisonReachesTheDeadLetterQueue(ctx, t, sqs.NewFromConfig(cfg), s, tpl)

	if os.Getenv("DEPLOY_LOCAL_KEEP") != "" {
		t.Logf("kept: curl --aws-sigv4 aws:amz:%s:execute-api --user test:test %s/sellers/%s", region, a.base, readmeSeller)
	}
}

// emulatorEndpoint is AWS_ENDPOINT_URL, which make deploy-local points at
// MiniStack: a loopback URL, never anything that could be an account.
func emulatorEndpoint(t *testing.T) *url.URL {
	t.Helper()
	raw := os.Getenv(config.EndpointURL.Name)
	if raw == "" {
		// Only make deploy-local builds this file, and it always sets it:
		// a missing one is a broken script, not a reason to skip.
		t.Fatalf("%s is not set: run `make deploy-local`, which starts MiniStack and points the test at it", config.EndpointURL.Name)
	}
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Contains(t, []string{"127.0.0.1", "localhost", "::1"}, u.Hostname(),
		"%s=%s: the test deploys to an emulator on loopback only", config.EndpointURL.Name, raw)
	return u
}

// awsConfig is the SDK configuration of every client of the test, built as
// the functions build theirs (app.Client), from the environment make
// deploy-local sets: the emulator's endpoint and dummy credentials.
func awsConfig(t *testing.T) aws.Config {
	t.Helper()
	a, err := config.LoadAWS(os.Getenv, config.EndpointURL)
	require.NoError(t, err)
	cfg, err := app.AWSConfig(a, nil)
	require.NoError(t, err)
	return cfg
}

// waitForSellerCount polls the sellers table, as getseller reads it, until
// the seller's count is there, and returns when it first was.
func waitForSellerCount(ctx context.Context, t *testing.T, db *dynamodb.Client, table, seller string) time.Time {
	t.Helper()
	r, err := sellers.NewReader(db, table)
	require.NoError(t, err)
	id := uuid.MustParse(seller)
	poll(ctx, t, "the seller's count in "+table, func() (bool, error) {
		stats, err := r.Get(ctx, id)
		if err != nil {
			if errors.Is(err, sellers.ErrNotFound) {
				return false, nil
			}
			return false, err
		}
		return stats.ProductCount != sellers.Number{}, nil
	})
	return time.Now()
}

// poisonReachesTheDeadLetterQueue puts a message the consumer cannot
// decode on the seller statistics queue and waits for it in the
// dead-letter queue, after the receives the template's redrive policy
// allows. The queue's visibility timeout (180 s in the template, six times
// the consumer's) is lowered first on the deployed queue, so those
// receives take seconds instead of 12 minutes: the one change the test
// makes to a deployed resource, and it says so.
func poisonReachesTheDeadLetterQueue(ctx context.Context, t *testing.T, q *sqs.Client, s stack, tpl map[string]any) {
	t.Helper()
	queue, dlq := s.outputs["SellerStatsQueueUrl"], s.outputs["SellerStatsDeadLetterQueueUrl"]
	maxReceives, ok := template.Path(tpl, "Resources", "SellerStatsQueue", "Properties", "RedrivePolicy", "maxReceiveCount").(int)
	require.True(t, ok, "the template's SellerStatsQueue has no RedrivePolicy.maxReceiveCount")

	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queue), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	require.NoError(t, err)
	dlqAttrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(dlq), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	require.NoError(t, err)
	var redrive struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	require.NoError(t, json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &redrive))
	assert.Equal(t, dlqAttrs.Attributes["QueueArn"], redrive.DeadLetterTargetArn, "the deployed queue redrives to the dead-letter queue")
	assert.Equal(t, strconv.Itoa(maxReceives), fmt.Sprint(redrive.MaxReceiveCount), "the deployed redrive policy is the template's")

	const visibility = "1"
	t.Logf("adjustment: SellerStatsQueue VisibilityTimeout %s s -> %s s on the deployed queue, so the %d receives before the dead-letter queue take seconds",
		attrs.Attributes["VisibilityTimeout"], visibility, maxReceives)
	_, err = q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(queue), Attributes: map[string]string{"VisibilityTimeout": visibility},
	})
	require.NoError(t, err)

	poison := "not a ProductCreated event " + uuid.NewString()
	sent, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(poison)})
	require.NoError(t, err)
	t.Logf("\n> SQS SendMessage to %s (poison)\n> %s\n< MessageId %s", queue, poison, aws.ToString(sent.MessageId))
	var dead sqstypes.Message
	took := poll(ctx, t, "the poison message in "+dlq, func() (bool, error) {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return false, err
		}
		for _, m := range out.Messages {
			if aws.ToString(m.Body) == poison {
				dead = m
				return true, nil
			}
		}
		return false, nil
	})
	receives, _ := strconv.Atoi(dead.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	t.Logf("\n> SQS ReceiveMessage from %s\n< %s (ApproximateReceiveCount %d, source %s), %d ms after it was sent",
		dlq, aws.ToString(dead.Body), receives, dead.Attributes["DeadLetterQueueSourceArn"], took.Milliseconds())
	assert.Equal(t, aws.ToString(sent.MessageId), aws.ToString(dead.MessageId), "the message itself, moved")
	assert.GreaterOrEqual(t, receives, maxReceives, "received maxReceiveCount times before it moved")
}
