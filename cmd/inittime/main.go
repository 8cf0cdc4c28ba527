// Command inittime measures each function's cold start as Lambda sees its
// first part: from exec of the bootstrap to its first GET of
// /runtime/invocation/next, served by a minimal runtime API on loopback,
// against the same for a hello-world aws-lambda-go bootstrap in the same
// run. `make init-time` builds the bootstraps and runs it.
//
// Usage: inittime [-n runs] [-trace top] [-env NAME=value]... hello=path/to/bootstrap name[@label]=path/to/bootstrap...
//
// Each bootstrap runs -n times, the bootstraps interleaved, in a new
// random order each round, so a busy machine, and what ran just before,
// slow them alike; the median is reported, with the quartiles
// and the ratio to hello's median, and the median CPU time the process
// took, which a busy machine inflates less. A bootstrap runs with the environment
// of the function it is named for; a label tells two builds of one
// function apart (createproduct@before=..., createproduct@after=...),
// run side by side.
//
// With -trace, each bootstrap then runs -n more times with
// GODEBUG=inittrace=1, and the packages it initialises that hello does
// not are ranked by their initialisers' median time, with the memory and
// allocations they take: what a bootstrap pays at every start for what it
// links.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemlambda/idemlambda/internal/config"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "inittime:", err)
		os.Exit(1)
	}
}

type bootstrap struct {
	name, path string
	run        string // the copy that runs (see copyAll)
	env        []string
	// samples are exec to first /next; cpu is the CPU time (user and
	// system, all threads) the process took, its exit once killed
	// included, which waiting for a CPU on a busy machine does not
	// inflate.
	samples, cpu []time.Duration
}

func run() error {
	runs := flag.Int("n", 21, "runs per bootstrap")
	top := flag.Int("trace", 0, "then rank the `top` packages each bootstrap initialises beyond hello's, by GODEBUG=inittrace=1 over -n more runs (0: no trace)")
	timeout := flag.Duration("timeout", 10*time.Second, "longest wait for one bootstrap's first /next")
	var extra envFlag
	flag.Var(&extra, "env", "NAME=value added to every function's environment, not hello's (repeatable): OTEL_TRACES_EXPORTER=otlp measures a start with the exporter built")
	flag.Parse()
	var bs []*bootstrap
	for _, arg := range flag.Args() {
		name, path, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("%q: want name=path", arg)
		}
		fn, _, _ := strings.Cut(name, "@")
		if fn != "hello" && !slices.ContainsFunc(config.Functions(), func(f config.Function) bool { return f.Name == fn }) {
			return fmt.Errorf("%q: no function is named %q, whose environment it would run with", arg, fn)
		}
		env := functionEnv(fn)
		if fn != "hello" {
			env = append(env, extra...)
		}
		bs = append(bs, &bootstrap{name: name, path: path, env: env})
	}
	if len(bs) == 0 || bs[0].name != "hello" {
		return errors.New("the first bootstrap must be hello=<path>, the yardstick")
	}

	dir, err := os.MkdirTemp("", "inittime-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := copyAll(bs, dir); err != nil {
		return err
	}
	api, err := newRuntimeAPI()
	if err != nil {
		return err
	}
	defer api.close()
	fmt.Printf("load average before: %s\n", loadAverage())
	order := slices.Clone(bs)
	for range *runs {
		// A start depends on what ran just before it (by a fifth and
		// more on a busy machine): a new order each round spreads that
		// over every bootstrap alike.
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, b := range order {
			r, err := api.measure(b, nil, *timeout)
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			b.samples, b.cpu = append(b.samples, r.wall), append(b.cpu, r.cpu)
		}
	}
	fmt.Printf("load average after:  %s\n", loadAverage())

	hello, helloCPU := median(bs[0].samples), median(bs[0].cpu)
	fmt.Printf("%-24s %9s %9s %9s %9s %8s %8s %8s %9s\n", "bootstrap", "median ms", "q1 ms", "q3 ms", "min ms", "ratio", "cpu ms", "ratio", "size MB")
	for _, b := range bs {
		m, c := median(b.samples), median(b.cpu)
		size := "?"
		if fi, err := os.Stat(b.path); err == nil {
			size = fmt.Sprintf("%.2f", float64(fi.Size())/1e6)
		}
		fmt.Printf("%-24s %9.2f %9.2f %9.2f %9.2f %7.2fx %8.2f %7.2fx %9s\n", b.name, ms(m), ms(quantile(b.samples, 1, 4)), ms(quantile(b.samples, 3, 4)),
			ms(slices.Min(b.samples)), float64(m)/float64(hello), ms(c), float64(c)/float64(helloCPU), size)
	}
	fmt.Printf("(%d runs each, interleaved in a random order per round: exec to first GET /runtime/invocation/next; cpu: the process's CPU time, median)\n", *runs)
	if *top > 0 {
		return traceInits(api, bs, *runs, *top, *timeout)
	}
	return nil
}

// traceInits runs each bootstrap runs times with GODEBUG=inittrace=1 and
// prints, for each but hello, the packages it initialises that hello
// does not, the top costliest by median initialiser time.
func traceInits(api *runtimeAPI, bs []*bootstrap, runs, top int, timeout time.Duration) error {
	traces := make([]map[string]*pkgInit, len(bs))
	for range runs {
		for _, i := range rand.Perm(len(bs)) {
			b := bs[i]
			r, err := api.measure(b, []string{"GODEBUG=inittrace=1"}, timeout)
			if err != nil {
				return fmt.Errorf("%s with inittrace: %w", b.name, err)
			}
			if traces[i] == nil {
				traces[i] = map[string]*pkgInit{}
			}
			if err := parseInitTrace(r.stderr, traces[i]); err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
		}
	}
	for i, b := range bs[1:] {
		var extra []*pkgInit
		var total time.Duration
		var bytes, allocs int64
		for name, p := range traces[i+1] {
			if _, ok := traces[0][name]; ok {
				continue
			}
			extra = append(extra, p)
			total += median(p.clock)
			bytes += p.bytes
			allocs += p.allocs
		}
		slices.SortFunc(extra, func(a, b *pkgInit) int {
			return cmp.Or(cmp.Compare(median(b.clock), median(a.clock)), cmp.Compare(a.name, b.name))
		})
		fmt.Printf("\n%s: %d packages initialised beyond hello's, %.3f ms (sum of medians), %d bytes, %d allocations\n",
			b.name, len(extra), ms(total), bytes, allocs)
		for _, p := range extra[:min(top, len(extra))] {
			fmt.Printf("  %7.3f ms %9d B %6d allocs  %s\n", ms(median(p.clock)), p.bytes, p.allocs, p.name)
		}
	}
	fmt.Printf("(%d runs each with GODEBUG=inittrace=1; the trace's own writes slow these runs)\n", runs)
	return nil
}

// copyAll copies each bootstrap into dir, written as any file is, and
// runs the copy: how a file came to be weighs on its start. The go
// linker writes its output through a memory mapping, and a bootstrap
// straight from go build started here 0.3 to 0.6 ms later than a copy
// of the same bytes (hello-world in 2.3 ms against 2.0 ms); a deployed
// bootstrap is a copy, unpacked from its zip. Copied alike, the
// bootstraps compare alike however each was made.
func copyAll(bs []*bootstrap, dir string) error {
	for i, b := range bs {
		b.run = filepath.Join(dir, strconv.Itoa(i))
		if err := copyFile(b.path, b.run); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pkgInit is one package's initialisers across runs.
type pkgInit struct {
	name          string
	clock         []time.Duration
	bytes, allocs int64
}

// parseInitTrace adds the runtime's inittrace lines in stderr to inits:
// "init <package> @<start> ms, <clock> ms clock, <bytes> bytes, <allocs> allocs".
func parseInitTrace(stderr []byte, inits map[string]*pkgInit) error {
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		clock, err1 := strconv.ParseFloat(f[4], 64)
		by, err2 := strconv.ParseInt(f[7], 10, 64)
		allocs, err3 := strconv.ParseInt(f[9], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("inittrace line %q: %w", sc.Text(), err)
		}
		p := inits[f[1]]
		if p == nil {
			p = &pkgInit{name: f[1], bytes: by, allocs: allocs}
			inits[f[1]] = p
		}
		p.clock = append(p.clock, time.Duration(clock*float64(time.Millisecond)))
	}
	return sc.Err()
}

// functionEnv is what Lambda would give the named function: its region
// and credentials, and its configuration (every variable its loader reads,
// a placeholder where the variable has no default). Hello gets the same
// Lambda variables.
func functionEnv(name string) []string {
	env := []string{
		"AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_SESSION_TOKEN=token",
		"AWS_LAMBDA_FUNCTION_NAME=" + name, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"_HANDLER=bootstrap", "TZ=:UTC", "LANG=en_US.UTF-8", "PATH=/usr/bin:/bin",
		// Lambda has no home directory with AWS shared files; neither do these runs.
		"HOME=/nonexistent",
	}
	for _, f := range config.Functions() {
		if f.Name != name {
			continue
		}
		for _, v := range slices.Concat(f.Vars, f.SDKVars) {
			val := v.Default
			if val == "" && !v.Optional && !slices.Contains(f.SDKVars, v) {
				val = "placeholder"
			}
			env = append(env, v.Name+"="+val)
		}
	}
	return env
}

// envFlag collects -env NAME=value flags.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }

func (e *envFlag) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return fmt.Errorf("%q: want NAME=value", v)
	}
	*e = append(*e, v)
	return nil
}

// runtimeAPI answers the first GET /next of each bootstrap by noting the
// time and closing the connection, which ends the bootstrap.
type runtimeAPI struct {
	ln   net.Listener
	srv  *http.Server
	next chan time.Time
}

func newRuntimeAPI() (*runtimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	api := &runtimeAPI{ln: ln, next: make(chan time.Time, 1)}
	api.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		if strings.HasSuffix(r.URL.Path, "/runtime/invocation/next") {
			select {
			case api.next <- now:
			default:
			}
		}
		// No invocation: the bootstrap's wait fails and it exits.
		http.Error(w, "inittime: no invocations", http.StatusGone)
	}), ReadHeaderTimeout: 5 * time.Second}
	go api.srv.Serve(ln) //nolint:errcheck // ends with close
	return api, nil
}

func (a *runtimeAPI) close() { _ = a.srv.Shutdown(context.Background()) }

// result is one run of a bootstrap.
type result struct {
	wall, cpu time.Duration // exec to first /next; the process's CPU time
	stderr    []byte
}

// measure runs b once, with env added to its environment: exec to its
// first /next, the CPU time it took (it is killed once it has asked for
// work) and what it wrote to stderr. A bootstrap that exits first (its
// configuration refused, say) is an error with its stderr.
func (a *runtimeAPI) measure(b *bootstrap, env []string, timeout time.Duration) (result, error) {
	cmd := exec.Command(b.run)
	cmd.Env = slices.Concat(b.env, env, []string{"AWS_LAMBDA_RUNTIME_API=" + a.ln.Addr().String()})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("start: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Once it has asked for work, it is killed; the wait ends with it, and
	// stderr holds all it wrote.
	done := func(t time.Time) result {
		return result{wall: t.Sub(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), stderr: stderr.Bytes()}
	}
	select {
	case t := <-a.next:
		_ = cmd.Process.Kill()
		<-exited
		return done(t), nil
	case err := <-exited:
		// It asks for work before it can exit of the answer.
		select {
		case t := <-a.next:
			return done(t), nil
		default:
		}
		return result{}, fmt.Errorf("exited before its first GET /next (%v): %s", err, bytes.TrimSpace(stderr.Bytes()))
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-exited
		return result{}, fmt.Errorf("no GET /next within %s", timeout)
	}
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, or why
// not.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func median(d []time.Duration) time.Duration { return quantile(d, 1, 2) }

// quantile is the k/n-th quantile of d, the nearest sample.
func quantile(d []time.Duration, k, n int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*k/n]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
