// Package rie_test runs the real createproduct bootstrap under the Lambda
// runtime interface emulator, several processes against one store: the
// closest this machine gets to many Lambda instances behind API Gateway.
package rie_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/embedded"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
)

const (
	emulators = 4
	keys      = 50
)

func goBuild(t *testing.T, env []string, out string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"build", "-o", out}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %v: %s", args, b)
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// emulator is one aws-lambda-rie process running the bootstrap.
type emulator struct {
	url  string
	mode string
	out  *logbuf.Buffer // the process's output, for failure messages
}

func startEmulator(t *testing.T, rie, bootstrap, storeURL, mode string, n tables.Names) emulator {
	t.Helper()
	addr := freePort(t)
	out := &logbuf.Buffer{}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", freePort(t), bootstrap)
	cmd.Env = append(os.Environ(),
		"AWS_ENDPOINT_URL_DYNAMODB="+storeURL, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"PRODUCTS_TABLE="+n.Products, "IDEMPOTENCY_TABLE="+n.Idempotency, "OUTBOX_TABLE="+n.Outbox, "CALLERS_TABLE="+n.Callers,
		"LOG_LEVEL=warn", "IDEMPOTENCY_MODE="+mode,
	)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "emulator did not listen: %s", out)
		time.Sleep(20 * time.Millisecond)
	}
	return emulator{url: "http://" + addr + "/2015-03-31/functions/function/invocations", mode: mode, out: out}
}

// token is what a JWT authorizer says of a token that acts for the
// test's seller.
func token() *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
		Claims: map[string]string{"iss": "https://issuer.example", "sub": "rie", "seller_ids": "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"},
	}}
}

func invoke(e emulator, key string) (events.APIGatewayV2HTTPResponse, error) {
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /products", RawPath: "/products",
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": `"` + key + `"`},
		Body:    `{"name":"Widget ` + key + `","price_cents":999,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/products"},
			Authorizer: token(),
		},
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	resp, err := http.Post(e.url, "application/json", bytes.NewReader(payload))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("emulator answered %d: %s; its output: %s", resp.StatusCode, body, e.out)
	}
	var out events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(body, &out); err != nil {
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("function output %q: %w", body, err)
	}
	return out, nil
}

// TestEmulatorsShareOneStore: 4 emulator processes, two in each
// IDEMPOTENCY_MODE, 50 keys, each key sent to all 4 at once. Exactly 50
// products and 50 outbox items, no 5xx, whichever mode wins a key: the
// mixed fleet a rollout from one mode to the other runs.
func TestEmulatorsShareOneStore(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the emulator test, which builds the bootstrap and aws-lambda-rie")
	}
	t.Parallel()
	dir := t.TempDir()
	rie := filepath.Join(dir, "aws-lambda-rie")
	bootstrap := filepath.Join(dir, "bootstrap")
	goBuild(t, nil, rie, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie")
	// The emulator runs host binaries: same flags as `make build`, host arch.
	goBuild(t, []string{"CGO_ENABLED=0"}, bootstrap, "-tags", "lambda.norpc", "-trimpath", "../../functions/createproduct")

	srv := httptest.NewServer(embedded.New())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	client, err := local.Client(srv.URL)
	require.NoError(t, err)
	n := tables.Names{Products: "products", Idempotency: "idempotency", Outbox: "outbox", Callers: "callers"}
	require.NoError(t, local.EnsureTables(ctx, client, n))

	emus := make([]emulator, emulators)
	for i := range emus {
		emus[i] = startEmulator(t, rie, bootstrap, srv.URL, []string{"reserve", "transact"}[i%2], n)
	}

	statuses := map[int]int{}
	byMode := map[string]map[int]int{"reserve": {}, "transact": {}}
	var mu sync.Mutex
	for k := range keys {
		key := fmt.Sprintf("rie-key-%02d", k)
		var wg sync.WaitGroup
		for _, e := range emus {
			wg.Go(func() {
				resp, err := invoke(e, key)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("key %s: %v", key, err)
					return
				}
				statuses[resp.StatusCode]++
				byMode[e.mode][resp.StatusCode]++
				if resp.StatusCode >= 500 {
					t.Errorf("key %s: %d %s", key, resp.StatusCode, resp.Body)
				}
			})
		}
		wg.Wait()
	}
	t.Logf("%d emulators x %d keys: statuses %v, by mode %v", emulators, keys, statuses, byMode)
	assert.Equal(t, emulators*keys, statuses[201]+statuses[409], "only 201 and 409")
	assert.GreaterOrEqual(t, statuses[201], keys)

	for table, want := range map[string]int{n.Products: keys, n.Outbox: keys, n.Idempotency: keys} {
		out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		assert.Len(t, out.Items, want, table)
	}
}
