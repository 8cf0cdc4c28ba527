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

	"github.com/aws/aws-sdk-go-v2/aws"
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
	// strong: MRSC (us-east-1, us-west-2 and eu-west-1; with witness,
	// eu-west-1 is the witness); lost is what is lost for the whole run:
	// "region" (us-west-2, where each key's second request arrives) or
	// "witness".
	strong, witness bool
	lost            string
	// execute: Store.Execute with one write (a Put), not Store.Run.
	execute bool
}

var figureModes = []figureMode{
	{short: "single", name: "single Region (no global table)"},
	{short: "single-execute", name: "single Region, Execute (one Put)", execute: true},
	{short: "local", name: "MREC, claims in the caller's Region (WithRegion)", global: true},
	{short: "homes", name: "MREC, homes (WithHomes, every key homed in us-east-1)", global: true, homes: true},
	{short: "mrsc", name: "MRSC, three replicas", strong: true},
	{short: "mrsc-execute", name: "MRSC, three replicas, Execute (one Put)", strong: true, execute: true},
	{short: "mrsc-witness", name: "MRSC, two replicas and a witness", strong: true, witness: true},
	{short: "mrsc-region-lost", name: "MRSC, three replicas, us-west-2 lost", strong: true, lost: "region"},
	{short: "mrsc-witness-lost", name: "MRSC, two replicas and a witness, the witness lost", strong: true, witness: true, lost: "witness"},
}

// strongLatency is an MRSC write's round trip in the figures: what the
// lag column holds for MRSC, where replication is synchronous.
const strongLatency = 5 * time.Millisecond

// figures are one mode's at one lag.
type figures struct {
	keys, requests, doubles int
	unavailable             int // requests answered IsUnavailable (503)
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
	p("%d keys, each requested in us-east-1 then in us-west-2 within %v (uniform); Store.Run (or Execute), an effect of %v; idemtest.NewGlobal of two Regions (MRSC: three, or two and a witness)", keys, figureSpread, figureWork)
	p("lag: MREC's replication lag; MRSC replicates synchronously (no lag), and the column holds each write's round trip across the Regions")
	p("%-56s %9s %18s %12s %9s %9s %9s %s", "table and mode", "lag", "doubles/1000 keys", "503s/1000 req", "calls/req", "RRU/req", "WRU/req", "home lease upkeep calls")
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
						t.Errorf("%d of %d keys ran more than once (want none: every claim of a key is made in one replica, or sees every Region's)", f.doubles, f.keys)
					}
				case lag >= figureSpread:
					if f.doubles == 0 {
						t.Errorf("no key ran twice at lag %v, though every second request came before the first's claim replicated", lag)
					}
				}
				want := 0
				if m.lost == "region" {
					want = f.keys // every second request, in the lost Region
				}
				if f.unavailable != want {
					t.Errorf("%d requests answered unavailable, want %d (those in a lost Region, and no other)", f.unavailable, want)
				}
			})
			lagText := "-"
			switch {
			case m.strong:
				lagText = "sync " + strongLatency.String()
			case m.global:
				lagText = lag.String()
			}
			p("%-56s %9s %18.0f %12.0f %9.3f %9.3f %9.3f %d", m.name, lagText, 1000*float64(f.doubles)/float64(f.keys),
				1000*float64(f.unavailable)/float64(f.requests),
				float64(f.calls)/float64(f.requests), f.read/float64(f.requests), f.write/float64(f.requests), f.upkeep)
		}
	}
	t.Cleanup(func() { fmt.Println(strings.Join(lines, "\n")) })
}

// measure runs the workload once, in a bubble, and counts.
func measure(t *testing.T, m figureMode, lag time.Duration, keys int) figures {
	const east, west, south = "us-east-1", "us-west-2", "eu-west-1"
	fast := func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = time.Millisecond })
	}
	servers := map[string]*idemtest.Server{}
	var g *idemtest.Global
	switch {
	case m.strong:
		cfg := idemtest.GlobalConfig{Mode: idemtest.MRSC, Regions: []string{east, west, south}, WriteLatency: strongLatency}
		if m.witness {
			cfg.Regions, cfg.Witness = []string{east, west}, south
		}
		var err error
		if g, err = idemtest.NewGlobal(cfg); err != nil {
			t.Fatal(err)
		}
	case m.global:
		var err error
		if g, err = idemtest.NewGlobal(idemtest.GlobalConfig{Regions: []string{east, west}, Lag: lag}); err != nil {
			t.Fatal(err)
		}
	default:
		s := idemtest.NewServer()
		defer s.Close()
		servers[east], servers[west] = s, s
	}
	if g != nil {
		defer g.Close()
		servers[east], servers[west] = g.Region(east), g.Region(west)
	}
	ctx := context.Background()
	if err := idemtable.Create(ctx, servers[east].HandlerClient(), "idempotency", idemtable.Layout{}); err != nil {
		t.Fatal(err)
	}
	if m.execute {
		if _, err := servers[east].HandlerClient().CreateTable(ctx, idemtable.Input("things", idemtable.Layout{})); err != nil {
			t.Fatal(err)
		}
	}
	switch m.lost {
	case "region":
		_ = g.Down(west)
	case "witness":
		_ = g.Isolate(g.Witness())
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
	var unavailable atomic.Int64
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
				if m.execute {
					_, err = stores[req.region].Execute(ctx, sc, "fp", func(context.Context) (idem.Effect, error) {
						runs[k].Add(1)
						time.Sleep(figureWork)
						return idem.Effect{Response: idem.Response{Body: []byte("ok")}, Writes: []types.TransactWriteItem{{Put: &types.Put{
							TableName:           aws.String("things"),
							Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "thing-" + strconv.Itoa(k)}},
							ConditionExpression: aws.String("attribute_not_exists(id)"),
						}}}}, nil
					})
				} else {
					_, err = stores[req.region].Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) {
						runs[k].Add(1)
						time.Sleep(figureWork)
						return idem.Response{Body: []byte("ok")}, nil
					})
				}
				switch {
				case idem.IsUnavailable(err):
					unavailable.Add(1)
				case err != nil && !errors.Is(err, idem.ErrInFlight):
					t.Errorf("%s key %d: %v", req.region, k, err)
				}
			})
		}
	}
	wg.Wait()
	f := figures{keys: keys, requests: 2 * keys, upkeep: int(upkeep.Load()), unavailable: int(unavailable.Load())}
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
