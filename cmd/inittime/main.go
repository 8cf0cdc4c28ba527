// Command inittime measures each function's cold start as Lambda sees its
// first part: from exec of the bootstrap to its first GET of
// /runtime/invocation/next, served by a minimal runtime API on loopback,
// against the same for a hello-world aws-lambda-go bootstrap in the same
// run. `make init-time` builds the bootstraps and runs it.
//
// Usage: inittime [-n runs] [-env NAME=value]... hello=path/to/bootstrap name=path/to/bootstrap...
//
// Each bootstrap runs -n times, the bootstraps interleaved so a busy
// machine slows them alike; the median is reported, with the ratio to
// hello's median.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
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
	env        []string
	samples    []time.Duration
}

func run() error {
	runs := flag.Int("n", 21, "runs per bootstrap")
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
		env := functionEnv(name)
		if name != "hello" {
			env = append(env, extra...)
		}
		bs = append(bs, &bootstrap{name: name, path: path, env: env})
	}
	if len(bs) == 0 || bs[0].name != "hello" {
		return errors.New("the first bootstrap must be hello=<path>, the yardstick")
	}

	api, err := newRuntimeAPI()
	if err != nil {
		return err
	}
	defer api.close()
	for range *runs {
		for _, b := range bs {
			d, err := api.measure(b, *timeout)
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			b.samples = append(b.samples, d)
		}
	}

	hello := median(bs[0].samples)
	fmt.Printf("%-14s %10s %10s %8s %10s\n", "bootstrap", "median ms", "min ms", "ratio", "size MB")
	for _, b := range bs {
		m := median(b.samples)
		size := "?"
		if fi, err := os.Stat(b.path); err == nil {
			size = fmt.Sprintf("%.1f", float64(fi.Size())/1e6)
		}
		fmt.Printf("%-14s %10.2f %10.2f %7.2fx %10s\n", b.name, ms(m), ms(slices.Min(b.samples)), float64(m)/float64(hello), size)
	}
	fmt.Printf("(%d runs each, exec to first GET /runtime/invocation/next)\n", *runs)
	return nil
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

// measure runs b once and returns exec to its first /next.
func (a *runtimeAPI) measure(b *bootstrap, timeout time.Duration) (time.Duration, error) {
	cmd := exec.Command(b.path)
	cmd.Env = append(slices.Clone(b.env), "AWS_LAMBDA_RUNTIME_API="+a.ln.Addr().String())
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start: %w", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	select {
	case t := <-a.next:
		return t.Sub(start), nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("no GET /next within %s", timeout)
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
