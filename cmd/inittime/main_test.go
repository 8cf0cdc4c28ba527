package main

import (
	"strings"
	"testing"
	"time"
)

// Lines as the Go runtime writes them with GODEBUG=inittrace=1, among
// other stderr output.
const trace = `init internal/bytealg @0 ms, 0 ms clock, 0 bytes, 0 allocs
init github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas @2.4 ms, 0.45 ms clock, 586696 bytes, 3151 allocs
2026/12/06 02:10:41 failed to get the next invoke: 410
init runtime @0.037 ms, 0.062 ms clock, 0 bytes, 0 allocs
`

func TestParseInitTrace(t *testing.T) {
	inits := map[string]*pkgInit{}
	for range 2 {
		if err := parseInitTrace([]byte(trace), inits); err != nil {
			t.Fatal(err)
		}
	}
	if len(inits) != 3 {
		t.Fatalf("%d packages, want 3: %v", len(inits), inits)
	}
	p := inits["github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas"]
	if p == nil || p.bytes != 586696 || p.allocs != 3151 || len(p.clock) != 2 || p.clock[1] != 450*time.Microsecond {
		t.Fatalf("schemas: %+v", p)
	}
	if err := parseInitTrace([]byte("init x @1 ms, y ms clock, 1 bytes, 1 allocs\n"), inits); err == nil {
		t.Fatal("a malformed trace line passed")
	}
}

func TestQuantile(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3}
	if q1, m, q3 := quantile(d, 1, 4), median(d), quantile(d, 3, 4); q1 != 2 || m != 3 || q3 != 4 {
		t.Fatalf("quartiles %v %v %v, want 2 3 4", q1, m, q3)
	}
	if d[0] != 5 {
		t.Fatal("quantile sorted its argument")
	}
}

// FuzzParseInitTrace: any stderr parses or fails, never panics, and what
// it records is a named package with one time per line.
func FuzzParseInitTrace(f *testing.F) {
	f.Add(trace)
	f.Add("init a @ ms, 1 ms clock, 2 bytes, 3 allocs")
	f.Add("init  @0 ms, -1 ms clock, 9999999999999999999 bytes, 0 allocs\n")
	f.Fuzz(func(t *testing.T, stderr string) {
		inits := map[string]*pkgInit{}
		if err := parseInitTrace([]byte(stderr), inits); err != nil {
			return
		}
		lines := strings.Count(stderr, "\n") + 1
		n := 0
		for name, p := range inits {
			if name == "" || p.name != name || len(p.clock) == 0 {
				t.Fatalf("recorded %q as %+v", name, p)
			}
			n += len(p.clock)
		}
		if n > lines {
			t.Fatalf("%d times from %d lines", n, lines)
		}
	})
}
