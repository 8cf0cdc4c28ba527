package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// regional is the service's configuration before it is given a Region.
type regional struct {
	create  config.CreateProduct
	get     config.GetProduct
	relay   config.OutboxRelay
	stats   config.SellerStats
	seller  config.GetSeller
	caller  string
	grant   []string
	apiAddr string
}

// runRegions runs the service in each of regions (startRegions) until
// ctx ends or a server fails.
func runRegions(ctx context.Context, regions []string, lag time.Duration, c regional) error {
	runners, stop, err := startRegions(ctx, regions, lag, c)
	if err != nil {
		return err
	}
	defer stop()
	for i, r := range runners {
		fmt.Fprintf(os.Stdout, "%s: API on %s, its replica of the tables on %s\n", regions[i], r.APIURL, r.StoreURL)
	}
	fmt.Fprintf(os.Stdout, `
One global table (MREC), replicated %s apart; every key is claimed in %[2]s, its home, from
either Region, and each Region's relay publishes only the events its own Region wrote, to its own
consumer. Create in one Region and read the seller in the other:
  curl -i -X POST %[3]s/products \
    -H 'Content-Type: application/json' -H 'Idempotency-Key: "order-42"' \
    -d '{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}'
  curl -s %[4]s/sellers/3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b
Ctrl-C stops.
`, lag, regions[0], runners[len(runners)-1].APIURL, runners[0].APIURL)
	errs := make(chan error, len(runners))
	for _, r := range runners {
		go func() {
			select {
			case err := <-r.Err():
				errs <- err
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stdout, "stopping")
		return nil
	case err := <-errs:
		return err
	}
}

// startRegions starts the service in each of regions (two or more) on a
// simulated global table with multi-Region eventual consistency
// (idemtest.NewGlobal), replication lag apart: each Region its own store
// endpoint, API port (the first on apiAddr, the next ones on the ports
// after it; each its own free port for port 0), relay fed from its own
// Region's stream of the outbox, and consumer, and every key claimed in
// the first Region, its home, as the template's HomeRegion does. stop
// stops them all and the table.
func startRegions(ctx context.Context, regions []string, lag time.Duration, c regional) (runners []*local.Runner, stop func(), err error) {
	host, port, err := net.SplitHostPort(c.apiAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("-addr %q: %w", c.apiAddr, err)
	}
	first, err := strconv.Atoi(port)
	if err != nil {
		return nil, nil, fmt.Errorf("-addr %q: -regions needs a port number", c.apiAddr)
	}
	g, err := idemtest.NewGlobal(idemtest.GlobalConfig{Regions: regions, Lag: lag})
	if err != nil {
		return nil, nil, err
	}
	g.Start()
	stop = func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, r := range runners {
			_ = r.Close(shutdown)
		}
		g.Close()
	}
	endpoints := map[string]string{}
	for _, r := range regions {
		endpoints[r] = g.Region(r).URL()
	}
	global := config.Global{Kind: config.KindMREC, Regions: regions}
	for i, region := range regions {
		apiPort := 0
		if first != 0 {
			apiPort = first + i
		}
		create, get, relayCfg, stats, seller := c.create, c.get, c.relay, c.stats, c.seller
		for _, a := range []*config.AWS{&create.AWS, &get.AWS, &relayCfg.AWS, &stats.AWS, &seller.AWS} {
			a.Region, a.Endpoint = region, endpoints[region]
		}
		create.Global, stats.Global = global, global
		create.Global.Home = regions[0]
		stream := g.Region(region).Stream(create.OutboxTable)
		r, err := local.Start(ctx, local.Config{
			APIAddr: net.JoinHostPort(host, strconv.Itoa(apiPort)), Endpoint: endpoints[region], Regions: endpoints,
			CreateProduct: create, GetProduct: get, SellerStats: stats, GetSeller: seller, OutboxRelay: relayCfg,
			Caller: c.caller, Grant: c.grant, Out: os.Stderr, Log: app.Logger(create.Common, os.Stderr),
			Publisher: outbox.NewJSONLinesPublisher(os.Stdout), ConsumeEvents: true,
			Stream: func() []events.DynamoDBEventRecord {
				var recs []events.DynamoDBEventRecord
				for _, rec := range stream.Read() {
					recs = append(recs, rec.DynamoDBEventRecord)
				}
				return recs
			},
		})
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("%s: %w", region, err)
		}
		runners = append(runners, r)
	}
	return runners, stop, nil
}

// regionList reads -regions: Region names separated by commas.
func regionList(s string) []string {
	var out []string
	for r := range strings.SplitSeq(s, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}
