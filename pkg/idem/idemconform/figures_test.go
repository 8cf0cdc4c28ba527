package idemconform_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// The figures of docs/library.md's table for global tables: per table
// kind and mode, the keys run more than once per 1,000 keys at each
// replication lag, and what a request costs. They depend on the workload
// (below) and on timing: the test prints them, and asserts only what the
// design decides: none run twice with homes; some do without, once the
// lag is longer than the time between a key's two requests.

// figureKeys is the workload's keys in make test; docs/library.md's
// table comes from IDEM_FIGURE_KEYS=1000.
const figureKeys = 200

// The workload: each key requested twice, first in us-east-1, then in
// us-west-2 after a pause drawn uniformly below figureSpread (a client
// that retried in another Region after a timeout, or an event delivered
// in both Regions); the keys' first requests 10 ms apart; each execution
// takes figureWork.
const (
	figureSpread = 2 * time.Second
	figureGap    = 10 * time.Millisecond
	figureWork   = 50 * time.Millisecond
)

var figureLags = []time.Duration{0, 100 * time.Millisecond, time.Second, 10 * time.Second}

// figureMode is a table kind and the stores' mode on it.
type figureMode struct {
	short, name string
	global      bool
	homes       bool
}

var figureModes = []figureMode{
	{short: "single", name: "single Region (no global table)"},
	{short: "local", name: "MREC, claims in the caller's Region (WithRegion)", global: true},
	{short: "homes", name: "MREC, homes (WithHomes, every key homed in us-east-1)", global: true, homes: true},
}

// figures are one mode's at one lag.
type figures struct {
	keys, requests, doubles int
	calls                   int
	read, write             float64
	upkeep                  int // the home leases' calls, among calls
}

// TestGlobalTableFigures prints the figures ("figures:" lines) and
// asserts what the design decides.
func TestGlobalTableFigures(t *testing.T) {
	keys := figureKeys
	if v := os.Getenv("IDEM_FIGURE_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("IDEM_FIGURE_KEYS=%q: want a positive number", v)
		}
		keys = n
	}
	var lines []string
	p := func(format string, args ...any) { lines = append(lines, fmt.Sprintf("figures: "+format, args...)) }
	p("%d keys, each requested in us-east-1 then in us-west-2 within %v (uniform); Store.Run, an effect of %v; idemtest.NewGlobal of two Regions", keys, figureSpread, figureWork)
	p("%-56s %7s %18s %9s %9s %9s %s", "table and mode", "lag", "doubles/1000 keys", "calls/req", "RRU/req", "WRU/req", "home lease upkeep calls")
	for _, m := range figureModes {
		for _, lag := range figureLags {
			if !m.global && lag > 0 {
				continue
			}
			var f figures
			t.Run(fmt.Sprintf("%s/lag=%v", m.short, lag), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { f = measure(t, m, lag, keys) })
				switch {
				case m.homes || !m.global:
					if f.doubles != 0 {
						t.Errorf("%d of %d keys ran more than once (want none: every claim of a key is made in one replica)", f.doubles, f.keys)
					}
				case lag >= figureSpread:
					if f.doubles == 0 {
						t.Errorf("no key ran twice at lag %v, though every second request came before the first's claim replicated", lag)
					}
				}
			})
			lagText := "-"
			if m.global {
				lagText = lag.String()
			}
			p("%-56s %7s %18.0f %9.3f %9.3f %9.3f %d", m.name, lagText, 1000*float64(f.doubles)/float64(f.keys),
				float64(f.calls)/float64(f.requests), f.read/float64(f.requests), f.write/float64(f.requests), f.upkeep)
		}
	}
	t.Cleanup(func() { fmt.Println(strings.Join(lines, "\n")) })
}

// measure runs the workload once, in a bubble, and counts.
func measure(t *testing.T, m figureMode, lag time.Duration, keys int) figures {
	const east, west = "us-east-1", "us-west-2"
	fast := func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
	}
	servers := map[string]*idemtest.Server{}
	if m.global {
		g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{east, west}, Lag: lag})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		servers[east], servers[west] = g.Region(east), g.Region(west)
	} else {
		s := idemtest.NewServer()
		defer s.Close()
		servers[east], servers[west] = s, s
	}
	ctx := context.Background()
	if err := idemtable.Create(ctx, servers[east].HandlerClient(), "idempotency", idemtable.Layout{}); err != nil {
		t.Fatal(err)
	}
	stores := map[string]*idem.Store{}
	var upkeep atomic.Int64
	for _, r := range []string{east, west} {
		var opts []idem.Option
		switch {
		case m.homes:
			opts = append(opts, idem.WithHomes(idem.Homes{Region: r, Home: idemglobal.OneHome(east), Clients: map[string]idem.API{
				east: leaseCounter{servers[east].HandlerClient(fast), &upkeep}, west: leaseCounter{servers[west].HandlerClient(fast), &upkeep},
			}}))
		case m.global:
			opts = append(opts, idem.WithRegion(r))
		}
		s, err := idem.NewStore(servers[r].HandlerClient(fast), "idempotency", opts...)
		if err != nil {
			t.Fatal(err)
		}
		stores[r] = s
	}
	for _, s := range servers {
		s.ResetCalls()
		s.ResetConsumed()
	}
	rng := rand.New(rand.NewPCG(uint64(lag), 37))
	runs := make([]atomic.Int32, keys)
	var wg sync.WaitGroup
	for k := range keys {
		first := time.Duration(k) * figureGap
		second := first + time.Duration(rng.Int64N(int64(figureSpread)))
		for _, req := range []struct {
			region string
			at     time.Duration
		}{{east, first}, {west, second}} {
			wg.Go(func() {
				time.Sleep(req.at)
				sc, err := idem.NewScope("POST /payments", "tenant", "key-"+strconv.Itoa(k))
				if err != nil {
					t.Error(err)
					return
				}
				_, err = stores[req.region].Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) {
					runs[k].Add(1)
					time.Sleep(figureWork)
					return idem.Response{Body: []byte("ok")}, nil
				})
				if err != nil && !errors.Is(err, idem.ErrInFlight) {
					t.Errorf("%s key %d: %v", req.region, k, err)
				}
			})
		}
	}
	wg.Wait()
	f := figures{keys: keys, requests: 2 * keys, upkeep: int(upkeep.Load())}
	for k := range runs {
		if runs[k].Load() > 1 {
			f.doubles++
		}
	}
	seen := map[*idemtest.Server]bool{}
	for _, s := range servers {
		if seen[s] {
			continue
		}
		seen[s] = true
		for _, n := range s.CallCounts() {
			f.calls += n
		}
		tot := s.Consumed().Total()
		f.read += tot.Read
		f.write += tot.Write
	}
	return f
}

// leaseCounter counts the requests a store makes for its homes' leases:
// those on a promise item, whose ID starts "!home|".
type leaseCounter struct {
	idem.API
	n *atomic.Int64
}

func (c leaseCounter) count(key map[string]types.AttributeValue) {
	if id, ok := key["id"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(id.Value, "!home|") {
		c.n.Add(1)
	}
}

func (c leaseCounter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.count(in.Key)
	return c.API.GetItem(ctx, in, opts...)
}

func (c leaseCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.count(in.Key)
	return c.API.UpdateItem(ctx, in, opts...)
}
