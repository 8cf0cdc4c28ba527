package rie_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/idemlambda/idemlambda/internal/dev/embedded"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
)

// collector is an OTLP/HTTP receiver: the spans each export request
// carried, by trace id.
type collector struct {
	mu    sync.Mutex
	spans map[string][]string // trace id (hex) -> span names
	calls int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				id := hex.EncodeToString(s.GetTraceId())
				c.spans[id] = append(c.spans[id], s.GetName())
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

// traces returns the span names of each trace received so far.
func (c *collector) traces() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]string, len(c.spans))
	for id, names := range c.spans {
		out[id] = append([]string(nil), names...)
	}
	return out
}

// bootstrap is the real createproduct bootstrap under aws-lambda-rie, its
// OTLP exporter pointed at otlpURL, against a store of its own.
type bootstrap struct {
	url string         // the emulator's invocation URL
	out *logbuf.Buffer // the processes' output
}

func startCreateProduct(t *testing.T, otlpURL string) bootstrap {
	t.Helper()
	dir := t.TempDir()
	rie := filepath.Join(dir, "aws-lambda-rie")
	bin := filepath.Join(dir, "bootstrap")
	goBuild(t, nil, rie, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie")
	goBuild(t, []string{"CGO_ENABLED=0"}, bin, "-tags", "lambda.norpc", "-trimpath", "../../functions/createproduct")

	store := httptest.NewServer(embedded.New())
	t.Cleanup(store.Close)
	client, err := local.Client(store.URL)
	require.NoError(t, err)
	n := tables.Names{Products: "products", Idempotency: "idempotency", Outbox: "outbox", Callers: "callers"}
	require.NoError(t, local.EnsureTables(t.Context(), client, n))

	addr := freePort(t)
	out := &logbuf.Buffer{}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", freePort(t), bin)
	cmd.Env = append(os.Environ(),
		"AWS_ENDPOINT_URL_DYNAMODB="+store.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"PRODUCTS_TABLE="+n.Products, "IDEMPOTENCY_TABLE="+n.Idempotency, "OUTBOX_TABLE="+n.Outbox, "CALLERS_TABLE="+n.Callers, "LOG_LEVEL=warn",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+otlpURL, "OTEL_PROPAGATORS=xray",
	)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return bootstrap{url: "http://" + addr + "/2015-03-31/functions/function/invocations", out: out}
}

// create invokes the bootstrap with a POST /products under key and
// returns the API answer.
func (b bootstrap) create(t *testing.T, key string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	payload, err := json.Marshal(events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /products", RawPath: "/products",
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": fmt.Sprintf("%q", key)},
		Body:    `{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/products"},
			Authorizer: token(),
		},
	})
	require.NoError(t, err)
	var resp *http.Response
	require.Eventually(t, func() bool { // the emulator listens a moment after it starts
		resp, err = http.Post(b.url, "application/json", bytes.NewReader(payload))
		return err == nil
	}, time.Minute, 20*time.Millisecond, "the emulator: %s", b.out)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s; output: %s", body, b.out)
	var answer events.APIGatewayV2HTTPResponse
	require.NoError(t, json.Unmarshal(body, &answer))
	return answer
}

// TestTheBootstrapExportsEachInvocationsSpans runs the real createproduct
// bootstrap, its OTLP exporter pointed at a receiver here: by the time an
// invocation has answered, its spans are at the collector (the batch is
// flushed before the answer, not 5 s later, when Lambda may have frozen
// the environment). The emulator passes no trace header to the runtime,
// so each invocation begins a trace of its own; continuing Lambda's is
// internal/tracing's and internal/api's tests.
func TestTheBootstrapExportsEachInvocationsSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the emulator test, which builds the bootstrap and aws-lambda-rie")
	}
	t.Parallel()
	col := &collector{spans: map[string][]string{}}
	otlp := httptest.NewServer(col)
	t.Cleanup(otlp.Close)
	b := startCreateProduct(t, otlp.URL)

	seen := map[string]bool{}
	for i := range 3 {
		answer := b.create(t, fmt.Sprintf("otel-%d", i))
		require.Equal(t, 201, answer.StatusCode, answer.Body)

		traces := col.traces()
		require.Len(t, traces, i+1, "invocation %d's trace is at the collector when it answers; output: %s", i, b.out)
		for id, names := range traces {
			if seen[id] {
				continue
			}
			seen[id] = true
			assert.ElementsMatch(t, []string{"POST /products", "idem.execute", "idem.claim", "idem.effect", "idem.commit", "create ProductCreated", "DynamoDB.PutItem", "DynamoDB.TransactWriteItems"},
				names, "invocation %d's spans", i)
		}
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	assert.Equal(t, 3, col.calls, "one export per invocation")
}

// A collector that is down (nothing listens on its port) or refuses every
// export costs the invocation a warning in its log, never its answer.
func TestACollectorDownNeverFailsAnInvocation(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the emulator test, which builds the bootstrap and aws-lambda-rie")
	}
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	t.Cleanup(refusing.Close)
	for name, url := range map[string]string{"down": downURL, "refusing": refusing.URL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := startCreateProduct(t, url)
			for i := range 2 {
				answer := b.create(t, fmt.Sprintf("down-%d", i))
				require.Equal(t, 201, answer.StatusCode, answer.Body)
			}
			assert.Contains(t, b.out.String(), `"msg":"spans not exported"`)
		})
	}
}
