//go:build sam

// Package sam runs the functions as `sam local invoke` runs them: the
// linux/arm64 bootstraps `sam build` makes, in Docker containers SAM builds
// on the Lambda base image, with the env files in events/env. It creates a
// product, replays it, reads it back, and relays its outbox event.
//
// It is built only with -tags sam: `make sam-test` installs the pinned SAM
// CLI, provides the base image (scripts/sam-base-image.sh: pulled, or a
// stand-in built; SAM_INVOKE_IMAGE) and runs it. It needs a Docker engine
// that runs linux/arm64 containers (natively, or with qemu-user-static
// binfmt); without one it skips and says why, and fails instead when
// CI=true (.ci/run starts Docker first). No request of the test leaves the
// machine: the functions reach an embedded store and a PutEvents endpoint
// this test serves on the Docker bridge's gateway address, and SAM's own
// AWS and HTTPS requests go to a closed loopback port.
package sam

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/streams"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// root is the repository, where sam build runs and the events live.
var root = filepath.Join("..", "..")

const (
	createID = "CreateProductFunction"
	getID    = "GetProductFunction"
	relayID  = "OutboxRelayFunction"
	// replayedHeader marks a stored response sent again.
	replayedHeader = "Idempotent-Replayed"
)

// unavailable skips the test, saying why, or fails it in CI, where .ci/run
// has started Docker and arm64 emulation before `make sam-test`.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the sam local invoke test must run in CI, so this fails instead of skipping)", msg)
	}
	t.Skipf("skipping the sam local invoke test: %s", msg)
}

// run runs a command with a deadline and returns its stdout; stderr is in
// the error.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func docker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := run(ctx, "", nil, "docker", args...)
	return strings.TrimSpace(out), err
}

// engine is what the test learns about the Docker engine.
type engine struct {
	arch, os string
	// bindHost is where this test's servers listen; containerHost is how a
	// function's container reaches them.
	bindHost, containerHost string
}

func requireEngine(t *testing.T) engine {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		unavailable(t, "no docker CLI on PATH (%v); it needs Docker Engine or Docker Desktop", err)
	}
	info, err := docker(t.Context(), "info", "--format", "{{.Architecture}}|{{.OperatingSystem}}")
	if err != nil {
		unavailable(t, "the Docker engine does not answer: %v", err)
	}
	arch, osName, _ := strings.Cut(info, "|")
	e := engine{arch: arch, os: osName}
	if strings.Contains(osName, "Docker Desktop") {
		// Desktop forwards host.docker.internal to this machine's loopback.
		e.bindHost, e.containerHost = "127.0.0.1", "host.docker.internal"
		return e
	}
	// Containers on the default bridge reach the host at its gateway
	// address: the servers listen there, not on every interface.
	gw, err := bridgeGateway(t.Context())
	if err != nil {
		t.Fatalf("Docker's bridge network: %v", err)
	}
	e.bindHost, e.containerHost = gw, gw
	return e
}

// bridgeGateway is the address of Docker's default bridge on this machine:
// the gateway in its IPAM config when set, else the address of its
// interface (a fresh dockerd records no gateway).
func bridgeGateway(ctx context.Context) (string, error) {
	gw, err := docker(ctx, "network", "inspect", "bridge", "--format", "{{range .IPAM.Config}}{{.Gateway}}{{end}}")
	if err != nil {
		return "", err
	}
	if net.ParseIP(gw) != nil {
		return gw, nil
	}
	name, err := docker(ctx, "network", "inspect", "bridge", "--format", `{{index .Options "com.docker.network.bridge.name"}}`)
	if err != nil {
		return "", err
	}
	if name == "" {
		name = "docker0"
	}
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return "", fmt.Errorf("bridge interface %s: %w", name, err)
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return "", fmt.Errorf("addresses of %s: %w", name, err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("bridge interface %s has no IPv4 address", name)
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// samEnv is the environment of every sam command: dummy credentials, and
// every AWS endpoint and HTTPS request SAM makes (STS before each invoke,
// its weekly version check) pointed at a closed loopback port.
func samEnv(closed string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || strings.EqualFold(k, "HTTP_PROXY") ||
			strings.EqualFold(k, "HTTPS_PROXY") || strings.EqualFold(k, "NO_PROXY") {
			continue
		}
		env = append(env, kv)
	}
	trap := "http://" + closed
	return append(env,
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1",
		"AWS_ENDPOINT_URL_STS="+trap, "AWS_ENDPOINT_URL="+trap,
		"HTTPS_PROXY="+trap, "https_proxy="+trap, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"SAM_CLI_TELEMETRY=0",
	)
}

// serve runs h on a free port of host until the test ends and returns its URL
// and a count of the requests it answered.
func serve(t *testing.T, host string, h http.Handler) (string, *counter) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	c := &counter{}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.add()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), c
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }

func (c *counter) get() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// putEvents is an EventBridge PutEvents endpoint (JSON 1.1 protocol) that
// accepts and records every entry.
type putEvents struct {
	mu      sync.Mutex
	entries []putEventsEntry
}

type putEventsEntry struct {
	Source       string
	DetailType   string
	Detail       string
	EventBusName string
}

func (p *putEvents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("X-Amz-Target"); got != "AWSEvents.PutEvents" {
		http.Error(w, `{"__type":"UnknownOperationException"}`, http.StatusBadRequest)
		return
	}
	var in struct{ Entries []putEventsEntry }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, `{"__type":"ValidationException"}`, http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.entries = append(p.entries, in.Entries...)
	p.mu.Unlock()
	type result struct{ EventId string }
	out := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	for i := range in.Entries {
		out.Entries = append(out.Entries, result{EventId: fmt.Sprintf("sam-test-%d", i)})
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

func (p *putEvents) received() []putEventsEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.entries)
}

// sam runs the pinned SAM CLI.
type sam struct {
	bin, image string
	env        []string
	dir        string
	// template is the built template SAM invokes (invokeTemplate).
	template  string
	durations []string
}

// invokeTemplate writes the copy of the built template that `sam local
// invoke` runs: template.yaml declares no endpoint variable, and SAM passes
// a function only the variables its template declares, so the copy's
// Globals declare AWS_ENDPOINT_URL (empty), which the env files set. It
// lies beside the built template, where its CodeUri paths resolve, and is
// removed when the test ends.
func invokeTemplate(t *testing.T, dir string) string {
	t.Helper()
	// Absolute: sam resolves a relative --template from where it runs.
	built, err := filepath.Abs(filepath.Join(dir, ".aws-sam", "build", "template.yaml"))
	require.NoError(t, err)
	b, err := os.ReadFile(built)
	require.NoError(t, err)
	tpl, err := template.Document(b)
	require.NoError(t, err)
	vars := tpl
	for _, k := range []string{"Globals", "Function", "Environment", "Variables"} {
		next, ok := vars[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			vars[k] = next
		}
		vars = next
	}
	vars["AWS_ENDPOINT_URL"] = ""
	out, err := json.Marshal(tpl)
	require.NoError(t, err)
	f, err := os.CreateTemp(filepath.Dir(built), "template.sam-test.*.json")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Remove(f.Name()) })
	_, err = f.Write(out)
	require.NoError(t, errors.Join(err, f.Close()))
	return f.Name()
}

// invocation is one `sam local invoke`: the function's response on stdout,
// SAM's and the function's logs on stderr.
type invocation struct {
	stdout, stderr string
	took           time.Duration
}

// noResponse is SAM's message when its request never reached the emulator
// in the container.
const noResponse = "No response from invoke container"

func (s *sam) invoke(t *testing.T, id, event, envFile string) invocation {
	t.Helper()
	for attempt := 1; ; attempt++ {
		inv := s.invokeOnce(t, id, event, envFile)
		// Under arm64 emulation SAM can post the event before the emulator
		// listens (Docker's userland proxy accepts the connection for it):
		// the function never started, so invoking again is safe. .ci/run
		// runs dockerd without that proxy, where SAM waits for the emulator.
		if strings.Contains(inv.stderr, noResponse) && !strings.Contains(inv.stderr, "START RequestId") && attempt < 3 {
			t.Logf("%s: attempt %d: %q, the function never started; invoking again", id, attempt, noResponse)
			continue
		}
		return inv
	}
}

func (s *sam) invokeOnce(t *testing.T, id, event, envFile string) invocation {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, "local", "invoke", id,
		"--template", s.template,
		"--event", event, "--env-vars", envFile,
		"--invoke-image", s.image, "--skip-pull-image")
	cmd.Dir, cmd.Env = s.dir, s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	inv := invocation{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	require.NoError(t, err, "sam local invoke %s: stderr:\n%s", id, inv.stderr)
	s.durations = append(s.durations, fmt.Sprintf("%s %.1fs", id, inv.took.Seconds()))
	t.Logf("sam local invoke %s (%s): %.2f s", id, filepath.Base(event), inv.took.Seconds())
	return inv
}

// apiResponse decodes an API function's answer.
func apiResponse(t *testing.T, inv invocation) events.APIGatewayV2HTTPResponse {
	t.Helper()
	var r events.APIGatewayV2HTTPResponse
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(inv.stdout)), &r),
		"function output %q; stderr:\n%s", inv.stdout, inv.stderr)
	return r
}

// writeJSON writes v under dir and returns the path.
func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// envFile reads events/env/<fn>.json and sets the given variables in it.
func envFile(t *testing.T, dir, fn, id string, set map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "events", "env", fn+".json"))
	require.NoError(t, err)
	var file map[string]map[string]string
	require.NoError(t, json.Unmarshal(b, &file))
	vars, ok := file[id]
	require.True(t, ok, "events/env/%s.json has no %s section", fn, id)
	for k, v := range set {
		_, declared := vars[k]
		require.True(t, declared, "events/env/%s.json does not set %s", fn, k)
		vars[k] = v
	}
	return writeJSON(t, dir, fn+"-env.json", file)
}

func suffix(t *testing.T) string {
	t.Helper()
	var b [4]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

func TestSamLocalInvoke(t *testing.T) {
	e := requireEngine(t)
	samBin := os.Getenv("SAM")
	if samBin == "" {
		samBin = filepath.Join(root, ".venv", "sam", "bin", "sam")
	}
	samBin, err := filepath.Abs(samBin)
	require.NoError(t, err)
	if _, err := os.Stat(samBin); err != nil {
		t.Fatalf("no sam CLI at %s (%v): run `make sam-test`, which installs the pinned aws-sam-cli into .venv/sam", samBin, err)
	}
	closed := closedPort(t)
	s := &sam{bin: samBin, env: samEnv(closed), dir: root}
	ctx := t.Context()

	// The base image (real or stand-in): make sam-test provides it before
	// the test, so that the test's own traffic stays on this machine.
	s.image = os.Getenv("SAM_INVOKE_IMAGE")
	if s.image == "" {
		t.Logf("SAM_INVOKE_IMAGE is not set (make sam-test sets it): running scripts/sam-base-image.sh")
		baseImage, err := run(ctx, root, nil, filepath.Join("scripts", "sam-base-image.sh"))
		require.NoError(t, err)
		s.image = strings.TrimSpace(baseImage)
	}
	// Proof the engine runs arm64.
	if out, err := docker(ctx, "run", "--rm", "--platform", "linux/arm64", "--entrypoint", "/bin/sh", s.image, "-c", "uname -m"); err != nil || out != "aarch64" {
		unavailable(t, "the %s engine (%s) cannot run linux/arm64 containers (uname -m: %q, %v); "+
			"on x86 Linux install qemu-user-static and binfmt-support and enable qemu-aarch64 with the F flag", e.arch, e.os, out, err)
	}
	buildStart := time.Now()
	_, err = run(ctx, root, s.env, samBin, "build", "--build-in-source")
	require.NoError(t, err)
	s.template = invokeTemplate(t, root)
	t.Logf("docker engine %s (%s); base image %s; sam build %.1f s; functions reach this test at %s; SAM's AWS and HTTPS calls go to closed %s",
		e.arch, e.os, s.image, time.Since(buildStart).Seconds(), e.containerHost, closed)

	// The store and the event bus the functions talk to.
	storeURL, storeRequests := serve(t, e.bindHost, embedded.New())
	client, err := local.Client(storeURL)
	require.NoError(t, err)
	sfx := suffix(t)
	names := tables.Names{Products: "products-" + sfx, Idempotency: "idempotency-" + sfx, Outbox: "outbox-" + sfx, Callers: "callers-" + sfx}
	require.NoError(t, local.EnsureTables(ctx, client, names))
	bus := &putEvents{}
	busURL, busRequests := serve(t, e.bindHost, bus)
	inContainer := func(u string) string { return strings.Replace(u, e.bindHost, e.containerHost, 1) }

	dir := t.TempDir()
	createEnv := envFile(t, dir, "createproduct", createID, map[string]string{
		"PRODUCTS_TABLE": names.Products, "IDEMPOTENCY_TABLE": names.Idempotency, "OUTBOX_TABLE": names.Outbox,
		"CALLERS_TABLE": names.Callers, "AWS_ENDPOINT_URL": inContainer(storeURL),
	})
	getEnv := envFile(t, dir, "getproduct", getID, map[string]string{
		"PRODUCTS_TABLE": names.Products, "AWS_ENDPOINT_URL": inContainer(storeURL),
	})
	const busName = "sam-test-bus"
	relayEnv := envFile(t, dir, "outboxrelay", relayID, map[string]string{
		"EVENT_BUS_NAME": busName, "AWS_ENDPOINT_URL": inContainer(busURL),
	})

	// 1. Create: 201 with the product.
	created := apiResponse(t, s.invoke(t, createID, filepath.Join("events", "create.json"), createEnv))
	require.Equal(t, 201, created.StatusCode, "create: %s", created.Body)
	assert.NotContains(t, created.Headers, replayedHeader)
	var product map[string]any
	require.NoError(t, json.Unmarshal([]byte(created.Body), &product))
	id, _ := product["id"].(string)
	require.NotEmpty(t, id, "created product %s", created.Body)
	assert.Equal(t, "/products/"+id, created.Headers["Location"])

	// 2. The same request again: the stored response, byte for byte, marked.
	replayed := apiResponse(t, s.invoke(t, createID, filepath.Join("events", "replay.json"), createEnv))
	assert.Equal(t, 201, replayed.StatusCode)
	assert.Equal(t, created.Body, replayed.Body, "the replay's body is the stored bytes")
	assert.Equal(t, "true", replayed.Headers[replayedHeader])
	want := maps.Clone(created.Headers)
	want[replayedHeader] = "true"
	assert.Equal(t, want, replayed.Headers, "the stored headers plus %s", replayedHeader)

	// 3. Read it back.
	var get events.APIGatewayV2HTTPRequest
	b, err := os.ReadFile(filepath.Join(root, "events", "get.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &get))
	get.RawPath = "/products/" + id
	get.PathParameters = map[string]string{"id": id}
	get.RequestContext.HTTP.Path = get.RawPath
	got := apiResponse(t, s.invoke(t, getID, writeJSON(t, dir, "get.json", get), getEnv))
	require.Equal(t, 200, got.StatusCode, "get: %s", got.Body)
	var read map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.Body), &read))
	assert.Equal(t, product, read, "GET returns the product POST created")

	// Exactly one product and one outbox event behind the two creates.
	for table, n := range map[string]int{names.Products: 1, names.Outbox: 1, names.Idempotency: 1} {
		out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		assert.Len(t, out.Items, n, table)
	}

	// 4. The relay, given the stream record of that outbox item.
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(names.Outbox), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Len(t, out.Items, 1)
	wantEvent, err := outboxitem.Decode(out.Items[0])
	require.NoError(t, err)
	newImage, err := streams.Image(out.Items[0])
	require.NoError(t, err)
	const seq = "100000000000000000001"
	stream := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{
		EventID: "sam-test-" + sfx, EventName: "INSERT", EventVersion: "1.1", EventSource: "aws:dynamodb",
		AWSRegion: "us-east-1", EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/" + names.Outbox + "/stream/2026-12-01T00:00:00.000",
		Change: events.DynamoDBStreamRecord{
			Keys:     map[string]events.DynamoDBAttributeValue{"aggregate_id": newImage["aggregate_id"], "event_id": newImage["event_id"]},
			NewImage: newImage, SequenceNumber: seq, StreamViewType: "NEW_IMAGE",
		},
	}}}
	relayed := s.invoke(t, relayID, writeJSON(t, dir, "stream.json", stream), relayEnv)
	var resp events.DynamoDBEventResponse
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(relayed.stdout)), &resp),
		"relay output %q; stderr:\n%s", relayed.stdout, relayed.stderr)
	assert.Empty(t, resp.BatchItemFailures, "the relay published the record; stderr:\n%s", relayed.stderr)
	entries := bus.received()
	require.Len(t, entries, 1, "one PutEvents entry for the one INSERT")
	assert.Equal(t, busName, entries[0].EventBusName)
	assert.Equal(t, "idemlambda.products", entries[0].Source)
	assert.Equal(t, "ProductCreated", entries[0].DetailType)
	var ce outbox.Event
	require.NoError(t, json.Unmarshal([]byte(entries[0].Detail), &ce))
	assert.Equal(t, wantEvent.ID, ce.ID, "the CloudEvent of the outbox item")
	assert.Equal(t, id, ce.Subject)
	var data map[string]any
	require.NoError(t, json.Unmarshal(ce.Data, &data))
	assert.Equal(t, product, data, "the event carries the product")

	t.Logf("sam local invoke: %s; store answered %d requests, the bus %d",
		strings.Join(s.durations, ", "), storeRequests.get(), busRequests.get())
}
