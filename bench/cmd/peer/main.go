// Command peer runs make bench-peer: the same three workloads against
// idemlambda's POST /products handler, in each of pkg/idem's modes
// (reserve and transact), and against a handler made idempotent by
// Powertools for AWS Lambda (TypeScript), one process per implementation
// and workload, on one embedded DynamoDB-compatible store (cmd/local in
// store-only mode) behind a counting reverse proxy.
//
// It writes bench/results.json and bench/RESULTS.md; bench/plot.py draws
// bench/results.png from the JSON.
package main

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/idemlambda/idemlambda/bench/proxy"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
)

// workloads, by the name their tables and keys use: seq (1), dup (2a,
// in-process), dupp (2b, one process per duplicate), crash (3).
var workloads = []string{"seq", "dup", "dupp", "crash"}

// The three implementations, by the name the results and tables use:
// idemlambda in reserve mode (the default; the name predates the
// second mode), idemlambda in transact mode, and Powertools.
const (
	Ours         = "idemlambda"
	OursTransact = "idemlambda-transact"
	Powertools   = "powertools"
)

// impls is every implementation, in the order the results list them.
var impls = []string{Ours, OursTransact, Powertools}

// isOurs says whether impl is idemlambda (either mode).
func isOurs(impl string) bool { return impl == Ours || impl == OursTransact }

// idemLeaseMargin is pkg/idem's default lease margin: a lease lasts this
// long past the invocation's deadline.
const idemLeaseMargin = 2 * time.Second

// idemMode is the IDEMPOTENCY_MODE an idemlambda implementation runs in
// ("" for Powertools).
func idemMode(impl string) string {
	switch impl {
	case Ours:
		return "reserve"
	case OursTransact:
		return "transact"
	}
	return ""
}

type options struct {
	out, work, store, gorunner, goconsumer, node, ptDir, event string
	seqKeys, dupKeys, dup, crashKeys, warmup                   int
	consumerEvents                                             int
	consumerSellers, consumerProcs                             string
	crashTimeout, phaseTimeout                                 time.Duration
	waitKeys                                                   int
	waitHold                                                   time.Duration
	markdownOnly                                               bool
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bench", "where results.json and RESULTS.md go")
	flag.StringVar(&o.work, "work", "bench/.work", "logs and binaries")
	flag.StringVar(&o.store, "store", "bench/.work/local", "cmd/local binary (store-only mode)")
	flag.StringVar(&o.gorunner, "gorunner", "bench/.work/gorunner", "bench/cmd/gorunner binary")
	flag.StringVar(&o.goconsumer, "goconsumer", "bench/.work/goconsumer", "bench/cmd/goconsumer binary")
	flag.StringVar(&o.node, "node", "node", "node binary")
	flag.StringVar(&o.ptDir, "powertools", "bench/powertools", "the Powertools runner's folder (npm ci done)")
	flag.StringVar(&o.event, "event", "events/create.json", "API Gateway v2 event template")
	flag.IntVar(&o.seqKeys, "seq-keys", 1000, "workload 1: distinct keys, sequential")
	flag.IntVar(&o.dupKeys, "dup-keys", 200, "workload 2: keys")
	flag.IntVar(&o.dup, "dup", 8, "workload 2: concurrent duplicates per key")
	flag.IntVar(&o.crashKeys, "crash-keys", 20, "workload 3: keys")
	flag.IntVar(&o.consumerEvents, "consumer-events", 400, "workload 4: distinct events per run")
	flag.StringVar(&o.consumerSellers, "consumer-sellers", "1,20", "workload 4: sellers the events spread over, one run each")
	flag.StringVar(&o.consumerProcs, "consumer-procs", "2,6", "workload 4: concurrent invocations, one run each")
	flag.IntVar(&o.warmup, "warmup", 20, "warm-up keys per process (not measured)")
	flag.DurationVar(&o.crashTimeout, "crash-timeout", 2*time.Second, "workload 3: the crashed invocations' Lambda timeout")
	flag.DurationVar(&o.phaseTimeout, "phase-timeout", 3*time.Minute, "limit for one runner process")
	flag.IntVar(&o.waitKeys, "wait-keys", 5, "workload 5: keys, each held by a first call while a duplicate waits")
	flag.DurationVar(&o.waitHold, "wait-hold", time.Second, "workload 5: how long the first call holds each key")
	flag.BoolVar(&o.markdownOnly, "markdown-only", false, "rewrite RESULTS.md from results.json, without running anything")
	flag.Parse()
	run := run
	if o.markdownOnly {
		run = rewriteMarkdown
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-peer:", err)
		os.Exit(1)
	}
}

// Phase is one runner process's measured run.
type Phase struct {
	Impl     string `json:"impl"`
	Mode     string `json:"idem_mode,omitempty"` // idemlambda's IDEMPOTENCY_MODE
	Workload string `json:"workload"`            // seq, dup, crash
	Step     string `json:"step"`                // run, or crash / retry
	Label    string `json:"label"`
	Procs    int    `json:"processes"`

	Requests int            `json:"requests"`
	Outcomes map[string]int `json:"outcomes,omitempty"`
	Writes   int64          `json:"business_writes_seen_in_process"`

	P50ms  float64 `json:"p50_ms"`
	P99ms  float64 `json:"p99_ms"`
	MeanMs float64 `json:"mean_ms"`
	MaxMs  float64 `json:"max_ms"`

	CPUUserMs     float64 `json:"cpu_user_ms"`
	CPUSysMs      float64 `json:"cpu_sys_ms"`
	CPUPerReqUs   float64 `json:"cpu_us_per_request"`
	ProcessCPUMs  float64 `json:"process_cpu_ms_incl_startup"`
	WallMs        float64 `json:"wall_ms"`
	LoadAvgBefore string  `json:"loadavg_before"`

	Calls         proxy.Counts       `json:"calls"`
	CallsPerReq   map[string]float64 `json:"calls_per_request"`
	TotalPerReq   float64            `json:"calls_per_request_total"`
	StoreMsPerReq float64            `json:"store_ms_per_request"`
	OwnMsPerReq   float64            `json:"mean_ms_outside_store"`

	Keys *KeyStats `json:"keys,omitempty"`

	// Cost is the step's capacity units, as the store counted them, and
	// what they and the measured durations cost per million requests.
	Cost *Cost `json:"cost,omitempty"`
}

// KeyStats is what the products table holds for a workload's keys.
type KeyStats struct {
	Keys          int `json:"keys"`
	Products      int `json:"products"`
	OutboxEvents  int `json:"outbox_events"`
	MinPerKey     int `json:"min_products_per_key"`
	MaxPerKey     int `json:"max_products_per_key"`
	KeysDuplicate int `json:"keys_with_duplicates"`
	KeysMissing   int `json:"keys_without_product"`
}

// Results is results.json.
type Results struct {
	Date     string            `json:"date"`
	Machine  map[string]string `json:"machine"`
	Versions map[string]string `json:"versions"`
	Config   map[string]any    `json:"config"`
	Phases   []*Phase          `json:"phases"`
	Consumer []*ConsumerPhase  `json:"consumer"`
	Seconds  float64           `json:"seconds"`
	// Prices are the prices the costs were computed with.
	Prices *Prices `json:"prices,omitempty"`
	// Waiter is workload 5, a waiting duplicate (idemlambda only).
	Waiter *WaiterRun `json:"waiter,omitempty"`
}

// WaiterRun is workload 5: for each key in turn, a first call holds it
// (pkg/idem's Store.Run, HoldMs long) and a duplicate on a store of its
// own waits for its response (idem.WithWait). The waiter's store lives
// across the keys: at the first it knows nothing of the operation, at
// the others it has watched an execution complete. Calls are the
// waiter's own, counted by its client.
type WaiterRun struct {
	Keys          int            `json:"keys"`
	HoldMs        float64        `json:"hold_ms"`
	Calls         []int          `json:"waiter_calls"`
	Gets          []int          `json:"waiter_get_items"`
	WaitMs        []float64      `json:"waiter_ms"`
	Outcomes      map[string]int `json:"outcomes"`
	LoadAvgBefore string         `json:"loadavg_before"`
}

func run(o options) error {
	began := time.Now()
	ctx := context.Background()
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return err
	}
	res := &Results{
		Date: began.UTC().Format(time.RFC3339), Machine: machine(), Versions: map[string]string{}, Prices: &prices,
		Config: map[string]any{
			"seq_keys": o.seqKeys, "dup_keys": o.dupKeys, "dup": o.dup, "crash_keys": o.crashKeys,
			"warmup_keys": o.warmup, "crash_lambda_timeout": o.crashTimeout.String(),
			"lambda_timeout": "30s", "idemlambda_lease_margin": idemLeaseMargin.String(),
			"implementations": impls, "idemlambda_cache_size": 0,
			"consumer_implementations": consumerImpls, "consumer_events": o.consumerEvents,
			"consumer_sellers": o.consumerSellers, "consumer_concurrent_invocations": o.consumerProcs,
			"consumer_batch_size": batchSize, "consumer_max_receives": maxReceives,
		},
	}
	for k, v := range storeVersions(o.store) {
		res.Versions[k] = v
	}

	// The store, in its own process, and the counting proxy in this one.
	storeAddr, err := freeAddr()
	if err != nil {
		return err
	}
	storeLog, err := os.Create(filepath.Join(o.work, "store.log"))
	if err != nil {
		return err
	}
	defer storeLog.Close()
	store := exec.Command(o.store, "-addr", "", "-store-addr", storeAddr)
	store.Env = cleanEnv()
	store.Stdout, store.Stderr = storeLog, storeLog
	if err := store.Start(); err != nil {
		return fmt.Errorf("start store: %w", err)
	}
	defer func() { _ = store.Process.Kill(); _, _ = store.Process.Wait() }()
	if err := waitTCP(storeAddr, 15*time.Second); err != nil {
		return fmt.Errorf("store: %w (see %s)", err, storeLog.Name())
	}
	storeURL := "http://" + storeAddr
	target, _ := url.Parse(storeURL)
	px := proxy.New(target)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: px, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	proxyURL := "http://" + ln.Addr().String()
	sdkLog, err := os.Create(filepath.Join(o.work, "driver-sdk.log"))
	if err != nil {
		return err
	}
	defer sdkLog.Close()
	direct, err := directClient(storeURL, sdkLog) // setup and scans: not counted
	if err != nil {
		return err
	}
	fmt.Printf("bench-peer: store %s (pid %d), counting proxy %s; load %s\n", storeURL, store.Process.Pid, proxyURL, loadavg())

	b := &bench{o: o, px: px, proxyURL: proxyURL, storeURL: storeURL, direct: direct, res: res}
	for _, impl := range impls {
		for _, w := range workloads {
			if err := b.createTables(ctx, impl, w); err != nil {
				return err
			}
		}
	}
	// Vary the order, so no implementation always runs on the machine
	// another just warmed (or loaded): two orders and their reverses, so
	// each implementation runs before each other one in two workloads of
	// the four and after it in the other two (and reserve and Powertools
	// alternate as before).
	for _, w := range []struct {
		name  string
		order []string
	}{
		{"seq", []string{Ours, Powertools, OursTransact}}, {"dup", []string{OursTransact, Powertools, Ours}},
		{"dupp", []string{Ours, OursTransact, Powertools}}, {"crash", []string{Powertools, OursTransact, Ours}},
	} {
		for _, impl := range w.order {
			if err := b.workload(ctx, impl, w.name); err != nil {
				return fmt.Errorf("%s %s: %w", impl, w.name, err)
			}
		}
	}
	if err := b.consumers(ctx); err != nil {
		return err
	}
	if err := b.waiter(ctx); err != nil {
		return fmt.Errorf("wait: %w", err)
	}
	res.Seconds = time.Since(began).Seconds()
	res.Machine["loadavg_end"] = loadavg()
	if err := writeJSON(filepath.Join(o.out, "results.json"), res); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "RESULTS.md"), []byte(markdown(res)), 0o644); err != nil {
		return err
	}
	fmt.Printf("bench-peer: wrote %s and %s in %.0fs\n", filepath.Join(o.out, "results.json"), filepath.Join(o.out, "RESULTS.md"), res.Seconds)
	return nil
}

// rewriteMarkdown writes RESULTS.md from the results.json of a run.
func rewriteMarkdown(o options) error {
	b, err := os.ReadFile(filepath.Join(o.out, "results.json"))
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "RESULTS.md"), []byte(markdown(&res)), 0o644)
}

type bench struct {
	o        options
	px       *proxy.Proxy
	proxyURL string
	storeURL string // the store itself, for its consumed capacity
	direct   *dynamodb.Client
	res      *Results
}

func names(impl, workload string) tables.Names {
	p := impl + "-" + workload + "-"
	return tables.Names{Products: p + "products", Idempotency: p + "idempotency", Outbox: p + "outbox"}
}

// createTables creates the implementation's tables for a workload: the
// products and outbox tables from internal/dev/tables for all three;
// idemlambda's idempotency table (either mode) from internal/dev/tables, and
// Powertools' with the key its DynamoDBPersistenceLayer expects (id, S)
// and TTL on its own attribute (expiration).
func (b *bench) createTables(ctx context.Context, impl, workload string) error {
	n := names(impl, workload)
	for _, t := range []tables.Table{tables.Products, tables.Outbox} {
		if err := t.Create(ctx, b.direct, n.Of(t), tables.CreateOptions{}); err != nil {
			return err
		}
	}
	if isOurs(impl) {
		return tables.Idempotency.Create(ctx, b.direct, n.Idempotency, tables.CreateOptions{})
	}
	return b.createPowertoolsTable(ctx, n.Idempotency)
}

func (b *bench) workload(ctx context.Context, impl, w string) error {
	var (
		p   *Phase
		err error
	)
	switch w {
	case "seq":
		if p, err = b.phase(impl, w, "run", b.o.seqKeys, 1, nil); err != nil {
			return err
		}
		p.Label = fmt.Sprintf("1. %d distinct keys, sequential", b.o.seqKeys)
		p.Keys, err = b.scan(ctx, impl, w, b.o.seqKeys)
		return err
	case "dup":
		if p, err = b.phase(impl, w, "run", b.o.dupKeys, 1, []string{fmt.Sprintf("--dup=%d", b.o.dup)}); err != nil {
			return err
		}
		p.Label = fmt.Sprintf("2a. %d keys x %d concurrent duplicates, in one process", b.o.dupKeys, b.o.dup)
		p.Keys, err = b.scan(ctx, impl, w, b.o.dupKeys)
		return err
	case "dupp":
		if p, err = b.phase(impl, w, "run", b.o.dupKeys, b.o.dup, nil); err != nil {
			return err
		}
		p.Label = fmt.Sprintf("2b. %d keys x %d concurrent duplicates, one process each", b.o.dupKeys, b.o.dup)
		p.Keys, err = b.scan(ctx, impl, w, b.o.dupKeys)
		return err
	}
	// 3. Crash after the business write, then retry after the lease ends.
	crash, err := b.phase(impl, w, "crash", b.o.crashKeys, 1, []string{"--timeout=" + b.o.crashTimeout.String()})
	if err != nil {
		return err
	}
	crash.Label = fmt.Sprintf("3a. %d keys, crash after the business write", b.o.crashKeys)
	if crash.Keys, err = b.scan(ctx, impl, w, b.o.crashKeys); err != nil {
		return err
	}
	// Every crashed invocation started before the crash report, so every
	// lease (Powertools: in_progress_expiration = start + remaining time;
	// idemlambda reserve: deadline + lease margin) has ended after this
	// wait. Transact mode leaves no lease (its record lands COMPLETED) but
	// waits the same, so its retry runs as late as the others'.
	wait := b.o.crashTimeout + idemLeaseMargin + 500*time.Millisecond
	fmt.Printf("  waiting %v for the crashed invocations' leases to end\n", wait)
	time.Sleep(wait)
	retry, err := b.phase(impl, w, "retry", b.o.crashKeys, 1, nil)
	if err != nil {
		return err
	}
	retry.Label = fmt.Sprintf("3b. retry of the %d crashed keys after the lease", b.o.crashKeys)
	retry.Keys, err = b.scan(ctx, impl, w, b.o.crashKeys)
	return err
}

// waiter runs workload 5 (see WaiterRun) in one idemlambda runner.
func (b *bench) waiter(ctx context.Context) error {
	if b.o.waitKeys < 1 {
		return nil
	}
	if err := b.createTables(ctx, Ours, "wait"); err != nil {
		return err
	}
	n := names(Ours, "wait")
	args := []string{
		"--endpoint=" + b.proxyURL, "--products=" + n.Products, "--idempotency=" + n.Idempotency, "--outbox=" + n.Outbox,
		"--workload=wait", "--prefix=wait", fmt.Sprintf("--keys=%d", b.o.waitKeys), "--hold=" + b.o.waitHold.String(),
		fmt.Sprintf("--warmup=%d", b.o.warmup), "--event=" + b.o.event,
	}
	w := &WaiterRun{Keys: b.o.waitKeys, HoldMs: float64(b.o.waitHold.Milliseconds()), LoadAvgBefore: loadavg()}
	fmt.Printf("  %-19s %-5s %-5s keys=%d hold=%v load %s ... ", Ours, "wait", "run", w.Keys, b.o.waitHold, w.LoadAvgBefore)
	x, _, err := b.start(Ours, args, "idemlambda-wait-run-0.log")
	if err != nil {
		return err
	}
	defer func() { x.kill(); x.log.Close() }()
	timer := time.AfterFunc(b.o.phaseTimeout, func() { _ = x.cmd.Process.Kill() })
	defer timer.Stop()
	if err := x.send("go"); err != nil {
		return err
	}
	m, err := x.next()
	if err != nil || m.Phase != "done" {
		return fmt.Errorf("runner: %v %q (see %s)", err, m.Phase, x.log.Name())
	}
	if len(m.WaiterCalls) != w.Keys || len(m.LatencyUS) != w.Keys || m.Outcomes["replayed"] != w.Keys {
		return fmt.Errorf("runner: %d waiters' calls, %d latencies, outcomes %v for %d keys", len(m.WaiterCalls), len(m.LatencyUS), m.Outcomes, w.Keys)
	}
	w.Calls, w.Gets, w.Outcomes = m.WaiterCalls, m.WaiterGets, m.Outcomes
	for _, us := range m.LatencyUS {
		w.WaitMs = append(w.WaitMs, float64(us)/1000)
	}
	b.res.Waiter = w
	fmt.Printf("waiter calls %v, of them GetItem %v\n", w.Calls, w.Gets)
	return nil
}

type runnerMsg struct {
	Phase     string            `json:"phase"`
	Versions  map[string]string `json:"versions"`
	Requests  int               `json:"requests"`
	LatencyUS []int64           `json:"latency_us"`
	Outcomes  map[string]int    `json:"outcomes"`
	Writes    int64             `json:"writes"`
	CPUUserMs float64           `json:"cpu_user_ms"`
	CPUSysMs  float64           `json:"cpu_sys_ms"`
	WallMs    float64           `json:"wall_ms"`
	// The wait workload: each waiter's calls, and of them GetItems.
	WaiterCalls []int `json:"waiter_calls"`
	WaiterGets  []int `json:"waiter_gets"`
	// One invocation in serve mode.
	Latency int64  `json:"us"`
	Outcome string `json:"outcome"`
	// One consumer invocation: the indexes of the messages it reported
	// failed (batchItemFailures, or the whole batch for an error).
	Failed []int `json:"failed"`
}

// proc is one runner process.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	log   *os.File
	ended bool
}

func (p *proc) next() (runnerMsg, error) {
	var m runnerMsg
	for p.lines.Scan() {
		if err := json.Unmarshal(p.lines.Bytes(), &m); err != nil || m.Phase == "" {
			continue
		}
		return m, nil
	}
	return m, fmt.Errorf("runner ended without a result (see %s): %v", p.log.Name(), p.lines.Err())
}

func (p *proc) send(line string) error {
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// kill ends the process if it still runs and reaps it.
func (p *proc) kill() {
	if !p.ended {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
		p.ended = true
	}
}

// start runs one runner process and waits for its warm-up to end.
func (b *bench) start(impl string, args []string, logName string) (*proc, map[string]string, error) {
	const fn = "createproduct"
	if isOurs(impl) {
		return b.startCmd(fn, b.o.gorunner, append(args, "--mode="+idemMode(impl)), logName)
	}
	return b.startCmd(fn, b.o.node, append([]string{filepath.Join(b.o.ptDir, "runner.mjs")}, args...), logName)
}

// startCmd runs one runner process and waits for its warm-up to end.
// function is the Lambda function's name it runs as.
func (b *bench) startCmd(function, name string, args []string, logName string) (*proc, map[string]string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(cleanEnv(), "AWS_LAMBDA_FUNCTION_NAME="+function, "AWS_REGION=us-east-1")
	logf, err := os.Create(filepath.Join(b.o.work, logName))
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	p := &proc{cmd: cmd, stdin: stdin, lines: lines, log: logf}
	ready, err := p.next()
	if err != nil || ready.Phase != "ready" {
		p.kill()
		return nil, nil, fmt.Errorf("waiting for ready: %v %q", err, ready.Phase)
	}
	return p, ready.Versions, nil
}

// phase runs one measured step: procs runner processes (one per Lambda
// execution environment) each warm up, then run the workload. With more
// than one process, this driver sends each key to every process at once
// and waits for all of their answers before the next key.
func (b *bench) phase(impl, workload, step string, keys, procs int, extra []string) (*Phase, error) {
	n := names(impl, workload)
	mode := workload
	switch {
	case workload == "crash":
		mode = step
	case procs > 1:
		mode = "serve"
	}
	args := []string{
		"--endpoint=" + b.proxyURL, "--products=" + n.Products, "--idempotency=" + n.Idempotency, "--outbox=" + n.Outbox,
		"--workload=" + mode, "--prefix=" + workload, fmt.Sprintf("--keys=%d", keys),
		fmt.Sprintf("--warmup=%d", b.o.warmup), "--event=" + b.o.event,
	}
	args = append(args, extra...)
	p := &Phase{Impl: impl, Mode: idemMode(impl), Workload: workload, Step: step, LoadAvgBefore: loadavg(), Outcomes: map[string]int{}}
	fmt.Printf("  %-19s %-5s %-5s keys=%d procs=%d load %s ... ", impl, workload, step, keys, procs, p.LoadAvgBefore)
	var ps []*proc
	defer func() {
		for _, x := range ps {
			x.kill()
			x.log.Close()
		}
	}()
	for i := range procs {
		x, v, err := b.start(impl, args, fmt.Sprintf("%s-%s-%s-%d.log", impl, workload, step, i))
		if err != nil {
			return nil, err
		}
		ps = append(ps, x)
		for k, val := range v {
			b.res.Versions[k] = val
		}
	}
	timer := time.AfterFunc(b.o.phaseTimeout, func() {
		for _, x := range ps {
			_ = x.cmd.Process.Kill()
		}
	})
	defer timer.Stop()

	before, err := consumedCapacity(b.storeURL)
	if err != nil {
		return nil, err
	}
	b.px.Reset()
	for _, x := range ps {
		if err := x.send("go"); err != nil {
			return nil, err
		}
	}
	var lat []int64
	if mode == "serve" {
		for i := range keys {
			key := fmt.Sprintf("%s-k%04d", workload, i)
			for _, x := range ps {
				if err := x.send("invoke " + key); err != nil {
					return nil, err
				}
			}
			for _, x := range ps {
				m, err := x.next()
				if err != nil || m.Phase != "invoked" {
					return nil, fmt.Errorf("invoke %s: %v %q", key, err, m.Phase)
				}
			}
		}
		for _, x := range ps {
			if err := x.send("end"); err != nil {
				return nil, err
			}
		}
	}
	for _, x := range ps {
		m, err := x.next()
		if err != nil {
			return nil, err
		}
		switch m.Phase {
		case "crashed":
			// The process dies as a crashed Lambda does: SIGKILL, nothing
			// after the crash point runs.
			x.kill()
		case "done":
			_ = x.stdin.Close()
			err := x.cmd.Wait()
			x.ended = true
			if err != nil {
				return nil, fmt.Errorf("runner: %w (see %s)", err, x.log.Name())
			}
		default:
			return nil, fmt.Errorf("unexpected runner message %q", m.Phase)
		}
		p.Requests += m.Requests
		p.Writes += m.Writes
		p.CPUUserMs += m.CPUUserMs
		p.CPUSysMs += m.CPUSysMs
		p.WallMs = max(p.WallMs, m.WallMs)
		for k, v := range m.Outcomes {
			p.Outcomes[k] += v
		}
		lat = append(lat, m.LatencyUS...)
		if st := x.cmd.ProcessState; st != nil {
			p.ProcessCPUMs += float64((st.UserTime() + st.SystemTime()).Microseconds()) / 1000
		}
	}
	p.Calls = b.px.Snapshot()
	after, err := consumedCapacity(b.storeURL)
	if err != nil {
		return nil, err
	}
	p.Procs = procs
	if p.Requests > 0 {
		p.CPUPerReqUs = (p.CPUUserMs + p.CPUSysMs) * 1000 / float64(p.Requests)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		p.P50ms, p.P99ms = pct(lat, 0.50), pct(lat, 0.99)
		p.MaxMs = float64(lat[len(lat)-1]) / 1000
		var sum int64
		for _, v := range lat {
			sum += v
		}
		p.MeanMs = float64(sum) / float64(len(lat)) / 1000
	}
	p.CallsPerReq = map[string]float64{}
	if p.Requests > 0 {
		for op, c := range p.Calls.Ops {
			p.CallsPerReq[op] = float64(c) / float64(p.Requests)
		}
		p.TotalPerReq = float64(p.Calls.Total()) / float64(p.Requests)
		p.StoreMsPerReq = float64(p.Calls.TotalMicros()) / 1000 / float64(p.Requests)
		if p.MeanMs > 0 {
			p.OwnMsPerReq = p.MeanMs - p.StoreMsPerReq
		}
	}
	if err := checkReads(p.Calls); err != nil {
		return nil, err
	}
	units, storeRequests := stepUnits(before, after, []string{n.Products, n.Idempotency, n.Outbox})
	if err := checkUnits(p.Calls, storeRequests); err != nil {
		return nil, err
	}
	p.Cost = newCost("request", units, p.Requests, p.Requests, billedMs(lat), prices)
	b.res.Phases = append(b.res.Phases, p)
	fmt.Printf("%d requests, %s, p50 %.2f ms p99 %.2f ms, cpu %.0f us/req%s\n",
		p.Requests, opsString(p.Calls.Ops), p.P50ms, p.P99ms, p.CPUPerReqUs, unitsString(p.Cost))
	return p, nil
}

// checkReads fails loudly if an implementation may have read its record
// back for want of the item a failed condition returns on AWS. The store
// returns it (ReturnValuesOnConditionCheckFailure=ALL_OLD) with a failed
// write and in a cancelled transaction's reasons, as DynamoDB does; the
// proxy counts every failed condition answered without it, and that count
// must be zero. No workload reads anything itself, so the GetItems must be
// zero too, except where a running transaction refused or cancelled a
// write (TransactionConflict): those carry no item on AWS either, and
// pkg/idem then reads the record as last committed (Store.follow,
// transaction.settle), a read DynamoDB would see too.
func checkReads(c proxy.Counts) error {
	var noItem, conflicts int
	for k, n := range c.Errors {
		switch {
		case strings.HasSuffix(k, " "+proxy.NoItem):
			noItem += n
		case strings.HasSuffix(k, " TransactionConflictException"), strings.HasSuffix(k, " "+proxy.ReasonConflict):
			conflicts += n
		}
	}
	switch g := c.Ops["GetItem"]; {
	case noItem > 0:
		return fmt.Errorf("%d failed conditions answered without the item: the store no longer behaves as DynamoDB, and the %d GetItems may be fallback reads (errors: %v)", noItem, g, c.Errors)
	case g > 0 && conflicts == 0:
		return fmt.Errorf("%d GetItems at the endpoint without a transaction conflict to explain them: no workload reads (calls: %s; errors: %v)", g, opsString(c.Ops), c.Errors)
	}
	return nil
}

// scan counts the products (by the key in their name) and outbox events of
// a workload's tables, straight from the store.
func (b *bench) scan(ctx context.Context, impl, workload string, keys int) (*KeyStats, error) {
	n := names(impl, workload)
	per := map[string]int{}
	warm := 0
	err := scanAll(ctx, b.direct, n.Products, func(item map[string]types.AttributeValue) {
		name, _ := item["name"].(*types.AttributeValueMemberS)
		if name == nil {
			return
		}
		k := strings.TrimPrefix(name.Value, "Widget ")
		if strings.HasPrefix(k, "warm-") {
			warm++
			return
		}
		per[k]++
	})
	if err != nil {
		return nil, err
	}
	outbox := 0
	err = scanAll(ctx, b.direct, n.Outbox, func(item map[string]types.AttributeValue) {
		payload, _ := item["payload"].(*types.AttributeValueMemberS)
		if payload != nil && !strings.Contains(payload.Value, `Widget warm-`) {
			outbox++
		}
	})
	if err != nil {
		return nil, err
	}
	ks := &KeyStats{Keys: keys, OutboxEvents: outbox, MinPerKey: math.MaxInt}
	for i := range keys {
		c := per[fmt.Sprintf("%s-k%04d", workload, i)]
		ks.Products += c
		ks.MinPerKey = min(ks.MinPerKey, c)
		ks.MaxPerKey = max(ks.MaxPerKey, c)
		switch {
		case c == 0:
			ks.KeysMissing++
		case c > 1:
			ks.KeysDuplicate++
		}
	}
	return ks, nil
}

func scanAll(ctx context.Context, c *dynamodb.Client, table string, fn func(map[string]types.AttributeValue)) error {
	var start map[string]types.AttributeValue
	for {
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("scan %s: %w", table, err)
		}
		for _, it := range out.Items {
			fn(it)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		start = out.LastEvaluatedKey
	}
}

// pct is the nearest-rank percentile of sorted microseconds, in ms.
func pct(sorted []int64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return float64(sorted[max(0, min(i, len(sorted)-1))]) / 1000
}

func opsString(ops map[string]int) string {
	keys := make([]string, 0, len(ops))
	for k := range ops {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, ops[k])
	}
	return strings.Join(parts, " ")
}

// cleanEnv is this environment without the AWS endpoint and credential
// variables, so nothing reaches past the proxy or a real account.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "AWS_EC2_METADATA_DISABLED=true")
}

// directClient talks to the store without the proxy, for table setup and
// the scans. Its SDK log lines go to a file: now and then the SDK warns
// there that it could not discard the rest of a response body (the
// embedded store ends every response with a newline after the JSON) and
// that the partial checksum did not match; the response itself had
// decoded in full.
func directClient(endpoint string, log io.Writer) (*dynamodb.Client, error) {
	return app.Client(config.AWS{Region: "us-east-1", AccessKeyID: "local", SecretAccessKey: "local", Endpoint: endpoint}, nil,
		dynamodb.NewFromConfig, func(o *dynamodb.Options) { o.Logger = logging.NewStandardLogger(log) })
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitTCP(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func machine() map[string]string {
	m := map[string]string{"nproc": fmt.Sprint(runtime.NumCPU()), "os": runtime.GOOS + "/" + runtime.GOARCH, "loadavg_start": loadavg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				var kb int64
				fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:")), "%d", &kb)
				m["memory"] = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = strings.TrimSpace(string(b))
	}
	return m
}

// storeVersions reads the store binary's build info: which library
// module the strict store came from.
func storeVersions(bin string) map[string]string {
	v := map[string]string{}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return v
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/idemlambda/idemlambda/pkg" {
			where := d.Version
			if d.Replace != nil {
				where = "this checkout"
			}
			v["embedded store"] = "its own storage, github.com/idemlambda/idemlambda/pkg " + where
		}
	}
	return v
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
