//go:build deploy

package deploy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/apigatewayv2"
	gwtypes "github.com/aws/aws-sdk-go-v2/service/apigatewayv2/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/testkit/emulator"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// sam runs the pinned SAM CLI in the repository, printing what it runs and
// how long it took; its output is in the error when it fails.
func sam(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("SAM")
	if bin == "" {
		bin = filepath.Join(root, ".venv", "sam", "bin", "sam")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SAM_CLI_TELEMETRY=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("sam %s: %.1f s", strings.Join(args, " "), time.Since(start).Seconds())
	require.NoError(t, err, "sam %s:\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// builtTemplate is `sam build`'s output, which `sam deploy` packages.
var builtTemplate = filepath.Join(".aws-sam", "build", "template.yaml")

// adjustedTemplate writes the built template less what the emulator
// refuses or cannot evaluate (emulator.Adjust, which says what it changed
// and why) beside the
// built one, where its CodeUri paths resolve, and returns its path and the
// template as deployed. The file is removed when the test ends, and by
// make deploy-local however it ends: it is named after the run
// (DEPLOY_LOCAL_RUN).
func adjustedTemplate(t *testing.T) (string, map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, builtTemplate))
	require.NoError(t, err)
	tpl, err := template.Document(b)
	require.NoError(t, err)
	adjusted, err := emulator.Adjust(tpl)
	require.NoError(t, err)
	for _, a := range adjusted {
		t.Logf("adjustment: %s", a)
	}
	out, err := json.MarshalIndent(tpl, "", " ")
	require.NoError(t, err)
	run := cmp.Or(os.Getenv("DEPLOY_LOCAL_RUN"), strconv.Itoa(os.Getpid()))
	path := filepath.Join(root, filepath.Dir(builtTemplate), "template.deploy-local."+run+".json")
	t.Cleanup(func() { _ = os.Remove(path) })
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path, tpl
}

// stack is the deployed stack as the test reads it back.
type stack struct {
	name    string
	outputs map[string]string
	// eval resolves the processed template's intrinsic functions.
	eval *emulator.Stack
	// processed is the template CloudFormation ran: SAM's transform
	// applied.
	processed map[string]any
}

// describe reads the stack's outputs, parameters, resources and processed
// template.
func describe(ctx context.Context, t *testing.T, cf *cloudformation.Client, name string) stack {
	t.Helper()
	d, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	require.NoError(t, err)
	require.Len(t, d.Stacks, 1)
	st := d.Stacks[0]
	require.Equal(t, cftypes.StackStatusCreateComplete, st.StackStatus, "stack %s: %s", name, aws.ToString(st.StackStatusReason))
	id, err := arn.Parse(aws.ToString(st.StackId))
	require.NoError(t, err)
	s := stack{name: name, outputs: map[string]string{}, eval: &emulator.Stack{
		Parameters: map[string]string{}, Region: id.Region, AccountID: id.AccountID, Partition: id.Partition,
		Name: name, URLSuffix: "amazonaws.com", Resources: map[string]emulator.Resource{},
	}}
	for _, o := range st.Outputs {
		s.outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	for _, p := range st.Parameters {
		s.eval.Parameters[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	res, err := cf.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
	require.NoError(t, err)
	for _, r := range res.StackResources {
		s.eval.Resources[aws.ToString(r.LogicalResourceId)] = emulator.Resource{
			Type: aws.ToString(r.ResourceType), PhysicalID: aws.ToString(r.PhysicalResourceId),
		}
	}
	tpl, err := cf.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(name), TemplateStage: cftypes.TemplateStageProcessed})
	require.NoError(t, err)
	s.processed, err = template.Document([]byte(aws.ToString(tpl.TemplateBody)))
	require.NoError(t, err)
	s.eval.Conditions, _ = s.processed["Conditions"].(map[string]any)
	return s
}

// physical returns a resource's physical id.
func (s stack) physical(t *testing.T, id string) string {
	t.Helper()
	r, ok := s.eval.Resources[id]
	require.True(t, ok, "the stack has no resource %s", id)
	return r.PhysicalID
}

// createRoutes gives each HTTP API of the stack the routes, Lambda
// integrations and authorizers of the OpenAPI Body SAM generated for it,
// which MiniStack stores but does not import; the Body, resolved against
// the stack, is the only source (emulator.HTTPAPI). An API that has routes
// already (an emulator that imports the Body) is only compared with it.
func createRoutes(ctx context.Context, t *testing.T, gw *apigatewayv2.Client, s stack) {
	t.Helper()
	resources, _ := s.processed["Resources"].(map[string]any)
	apis := 0
	for id, raw := range resources {
		r, _ := raw.(map[string]any)
		if r["Type"] != "AWS::ApiGatewayV2::Api" {
			continue
		}
		apis++
		body, ok := template.Path(r, "Properties", "Body").(map[string]any)
		require.True(t, ok, "%s has no OpenAPI Body", id)
		resolved, err := s.eval.Resolve(body)
		require.NoError(t, err, "%s's Body", id)
		want, err := emulator.HTTPAPI(resolved.(map[string]any))
		require.NoError(t, err, "%s's Body", id)
		apiID := s.physical(t, id)

		have := routes(ctx, t, gw, apiID)
		if len(have) > 0 {
			t.Logf("%s (%s) has routes already: the emulator imported the Body; comparing, creating none", id, apiID)
			requireRoutes(t, want, have)
			continue
		}
		authorizers := map[string]string{}
		for _, a := range want.Authorizers {
			in := &apigatewayv2.CreateAuthorizerInput{
				ApiId: aws.String(apiID), Name: aws.String(a.Name), AuthorizerType: gwtypes.AuthorizerType(a.Type),
				IdentitySource: a.IdentitySource,
			}
			if a.Type == "JWT" {
				in.JwtConfiguration = &gwtypes.JWTConfiguration{Issuer: aws.String(a.Issuer), Audience: a.Audience}
			} else {
				in.AuthorizerUri = aws.String(a.URI)
				in.AuthorizerPayloadFormatVersion = aws.String(a.PayloadFormatVersion)
				in.EnableSimpleResponses = aws.Bool(a.SimpleResponses)
				in.AuthorizerResultTtlInSeconds = aws.Int32(int32(a.ResultTTLSeconds))
			}
			out, err := gw.CreateAuthorizer(ctx, in)
			require.NoError(t, err, "authorizer %s", a.Name)
			authorizers[a.Name] = aws.ToString(out.AuthorizerId)
			t.Logf("adjustment: created %s authorizer %s of %s from the Body", a.Type, a.Name, id)
		}
		for _, r := range want.Routes {
			in := &apigatewayv2.CreateIntegrationInput{
				ApiId: aws.String(apiID), IntegrationType: gwtypes.IntegrationTypeAwsProxy,
				IntegrationUri: aws.String(r.Integration.URI), IntegrationMethod: aws.String(r.Integration.Method),
				PayloadFormatVersion: aws.String(r.Integration.PayloadFormatVersion),
			}
			if r.Integration.TimeoutMillis > 0 {
				in.TimeoutInMillis = aws.Int32(int32(r.Integration.TimeoutMillis))
			}
			integration, err := gw.CreateIntegration(ctx, in)
			require.NoError(t, err, "integration of %s", r.Key)
			route := &apigatewayv2.CreateRouteInput{
				ApiId: aws.String(apiID), RouteKey: aws.String(r.Key),
				Target:            aws.String("integrations/" + aws.ToString(integration.IntegrationId)),
				AuthorizationType: gwtypes.AuthorizationType(r.AuthorizationType), AuthorizationScopes: r.Scopes,
			}
			if r.Authorizer != "" {
				route.AuthorizerId = aws.String(authorizers[r.Authorizer])
			}
			_, err = gw.CreateRoute(ctx, route)
			require.NoError(t, err, "route %s", r.Key)
			t.Logf("adjustment: created route %q (%s%s) of %s from the Body, integration %s (payload %s)",
				r.Key, r.AuthorizationType, suffix(" ", r.Authorizer), id, r.Integration.URI, r.Integration.PayloadFormatVersion)
		}
		requireRoutes(t, want, routes(ctx, t, gw, apiID))
	}
	require.NotZero(t, apis, "the processed template has no AWS::ApiGatewayV2::Api")
}

func suffix(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// routes lists an API's routes as route key -> authorization type.
func routes(ctx context.Context, t *testing.T, gw *apigatewayv2.Client, apiID string) map[string]string {
	t.Helper()
	out, err := gw.GetRoutes(ctx, &apigatewayv2.GetRoutesInput{ApiId: aws.String(apiID)})
	require.NoError(t, err)
	m := map[string]string{}
	for _, r := range out.Items {
		m[aws.ToString(r.RouteKey)] = string(r.AuthorizationType)
	}
	return m
}

func requireRoutes(t *testing.T, want emulator.API, have map[string]string) {
	t.Helper()
	m := map[string]string{}
	for _, r := range want.Routes {
		m[r.Key] = r.AuthorizationType
	}
	require.Equal(t, m, have, "the API's routes and their authorization, against the Body's")
}

// deleteStack deletes the stack (sam delete: the stack, then its artifacts
// in the managed bucket), whatever the test's outcome, then the tables
// tpl, the template as deployed, keeps (DeletionPolicy: Retain, with
// deletion protection), as docs/operations.md says to remove a stack for
// good: each must have outlived the stack's delete and refuse DeleteTable
// until its protection is turned off.
func deleteStack(t *testing.T, name, region string, tpl map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), hangBound)
	defer cancel()
	cfg := awsConfig(t)
	kept := retainedTables(ctx, t, cloudformation.NewFromConfig(cfg), name, tpl)
	out := sam(ctx, t, "delete", "--stack-name", name, "--region", region, "--no-prompts", "--config-file", samconfig)
	t.Logf("teardown: %s", lastLine(out))
	db := dynamodb.NewFromConfig(cfg)
	for _, logical := range slices.Sorted(maps.Keys(kept)) {
		table := kept[logical]
		_, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if !assert.NoError(t, err, "%s (%s) is DeletionPolicy: Retain: it outlives the stack", logical, table) {
			continue
		}
		_, err = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		assert.Error(t, err, "%s (%s) has deletion protection: DeleteTable is refused", logical, table)
		_, err = db.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table), DeletionProtectionEnabled: aws.Bool(false)})
		require.NoError(t, err, table)
		_, err = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		require.NoError(t, err, table)
		t.Logf("teardown: %s (%s) kept by the stack's delete and protected; protection off, deleted", logical, table)
	}
}

// retainedTables returns the physical names, by logical id, of the stack's
// tables that tpl keeps on delete; none when the stack is not there (the
// deployment failed before creating it).
func retainedTables(ctx context.Context, t *testing.T, cf *cloudformation.Client, name string, tpl map[string]any) map[string]string {
	t.Helper()
	res, err := cf.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
	if err != nil {
		t.Logf("teardown: no resources of stack %s to keep track of: %v", name, err)
		return nil
	}
	resources, _ := tpl["Resources"].(map[string]any)
	kept := map[string]string{}
	for _, r := range res.StackResources {
		logical := aws.ToString(r.LogicalResourceId)
		declared, _ := resources[logical].(map[string]any)
		if aws.ToString(r.ResourceType) == "AWS::DynamoDB::Table" && declared["DeletionPolicy"] == "Retain" {
			kept[logical] = aws.ToString(r.PhysicalResourceId)
		}
	}
	return kept
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// hangBound bounds every wait of the test: far beyond what any step takes
// on a loaded machine (the event reaches the sellers table in about 1.5 s
// here, the poison message the dead-letter queue in about 6 s), so only a
// real hang exceeds it. No outcome depends on how fast the machine is.
const hangBound = 5 * time.Minute

// poll calls done every interval until it reports true, failing the test
// with what if hangBound passes first, and returns how long it took.
func poll(ctx context.Context, t *testing.T, what string, done func() (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(hangBound)
	for {
		ok, err := done()
		require.NoError(t, err, what)
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			require.FailNow(t, fmt.Sprintf("%s: not within %s, far beyond any step's time on this machine: a hang", what, hangBound))
		}
		select {
		case <-ctx.Done():
			require.FailNow(t, fmt.Sprintf("%s: %v", what, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
