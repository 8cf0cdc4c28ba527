// Command local runs the service on this machine: an embedded
// DynamoDB-compatible store (or the endpoint AWS_ENDPOINT_URL_DYNAMODB
// names), the tables, the API handlers on a port and the outbox relay,
// each function configured by the same loader as its Lambda, with the
// local defaults below laid over the environment, and traced as its
// Lambda is: OTEL_TRACES_EXPORTER=console prints each span on stderr,
// OTEL_EXPORTER_OTLP_ENDPOINT sends them to a collector. `make run`
// starts it.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/local"
	"github.com/idemlambda/idemlambda/internal/outbox"
)

// localDefaults fill what the environment leaves unset: table names for
// the embedded store; a bus name, a region and dummy credentials that only
// matter when AWS_ENDPOINT_URL_EVENTBRIDGE points the relay at an
// EventBridge, or AWS_ENDPOINT_URL_DYNAMODB the runner at an endpoint
// with Streams (the store's own client always has dummy credentials).
var localDefaults = map[string]string{
	config.ProductsTable.Name:    "products",
	config.IdempotencyTable.Name: "idempotency",
	config.OutboxTable.Name:      "outbox",
	config.SellersTable.Name:     "sellers",
	config.CallersTable.Name:     "callers",
	config.EventBusName.Name:     "idemlambda-local",
	config.Region.Name:           "us-east-1",
	config.AccessKeyID.Name:      "local",
	config.SecretAccessKey.Name:  "local",
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

func run() error {
	apiAddr := flag.String("addr", ":8080", "API listen address; empty runs the store only")
	storeAddr := flag.String("store-addr", "127.0.0.1:8000", "embedded DynamoDB-compatible store listen address")
	relayOn := flag.Bool("relay", true, "relay outbox events (JSON lines on stdout, or EventBridge when AWS_ENDPOINT_URL_EVENTBRIDGE is set)")
	caller := flag.String("caller", local.CallerARN, "the IAM identity every API request comes from, as API Gateway's IAM authorizer names a SigV4 caller")
	sellers := flag.String("sellers", access.AnySeller, "the sellers -caller may act for, granted in the callers table at start: * for every seller, or seller ids separated by commas; empty grants none")
	regions := flag.String("regions", "", "run the service in each of these Regions (two or more, separated by commas) on a simulated global table (MREC, keys homed in the first), the APIs on -addr's port and the ports after it; empty: one Region on the embedded store")
	lag := flag.Duration("lag", time.Second, "with -regions: the replication lag between the Regions")
	flag.Parse()

	getenv := config.Overlay(os.Getenv, localDefaults)
	create, err := config.LoadCreateProduct(getenv)
	if err != nil {
		return err
	}
	get, err := config.LoadGetProduct(getenv)
	if err != nil {
		return err
	}
	relayCfg, err := config.LoadOutboxRelay(getenv)
	if err != nil {
		return err
	}
	stats, err := config.LoadSellerStats(getenv)
	if err != nil {
		return err
	}
	seller, err := config.LoadGetSeller(getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *regions != "" {
		list := regionList(*regions)
		if len(list) < 2 {
			return fmt.Errorf("-regions %q: name two Regions or more", *regions)
		}
		return runRegions(ctx, list, *lag, regional{
			create: create, get: get, relay: relayCfg, stats: stats, seller: seller,
			caller: *caller, grant: grantList(*sellers), apiAddr: *apiAddr,
		})
	}
	cfg := local.Config{
		APIAddr:       *apiAddr,
		StoreAddr:     *storeAddr,
		Endpoint:      create.AWS.Endpoint,
		CreateProduct: create,
		GetProduct:    get,
		SellerStats:   stats,
		GetSeller:     seller,
		OutboxRelay:   relayCfg,
		Caller:        *caller,
		Grant:         grantList(*sellers),
		// Each function's JSON log and metrics lines, as Lambda would
		// send them to CloudWatch Logs.
		Out: os.Stderr,
		Log: app.Logger(create.Common, os.Stderr),
	}
	where, err := relayTo(&cfg, relayCfg, getenv, *relayOn)
	if err != nil {
		return err
	}
	r, err := local.Start(ctx, cfg)
	if err != nil {
		return err
	}
	local.Banner(os.Stdout, r)
	fmt.Fprintln(os.Stdout, where)
	fmt.Fprintln(os.Stdout, spansTo(create.Tracing))
	select {
	case <-ctx.Done():
	case err = <-r.Err():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Fprintln(os.Stdout, "stopping")
	if cerr := r.Close(shutdown); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// grantList reads -sellers: ids separated by commas, none when empty.
func grantList(s string) []string {
	var out []string
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// relayTo sets the relay's publisher and, with an endpoint, its Streams
// client, and says where events go. Both clients are built as the
// functions build theirs (app.Client), from the variables the relay's
// loader read and the SDK's Streams endpoint variable.
func relayTo(cfg *local.Config, rc config.OutboxRelay, getenv func(string) string, on bool) (string, error) {
	if !on || cfg.APIAddr == "" {
		return "outbox relay: off", nil
	}
	where := "outbox relay: ProductCreated events are printed below as CloudEvents JSON lines, " +
		"and delivered as the EventBridge rule and the SQS queue would to the seller statistics consumer"
	cfg.Publisher = outbox.NewJSONLinesPublisher(os.Stdout)
	cfg.ConsumeEvents = true
	if rc.AWS.Endpoint != "" {
		// A real bus: its rule and queue, not this process, feed the consumer.
		cfg.ConsumeEvents = false
		client, err := app.Client(rc.AWS, nil, eventbridge.NewFromConfig)
		if err != nil {
			return "", err
		}
		pub, err := outboxrelay.Bridge(client, rc)
		if err != nil {
			return "", err
		}
		cfg.Publisher = pub
		where = "outbox relay: publishing to EventBridge bus " + rc.EventBusName + " at " + rc.AWS.Endpoint
	}
	if cfg.Endpoint == "" {
		return where + " (fed from the embedded store's outbox writes: it has no Streams API)", nil
	}
	// The SDK's own Streams variable, or the DynamoDB endpoint, where
	// emulators serve both.
	streams, err := config.LoadAWS(getenv, config.EndpointDynamoDBStreams)
	if err != nil {
		return "", err
	}
	streams.Endpoint = cmp.Or(streams.Endpoint, cfg.Endpoint)
	client, err := app.Client(streams, nil, dynamodbstreams.NewFromConfig)
	if err != nil {
		return "", err
	}
	cfg.Streams = client
	return where + " (polling the outbox table's stream at the endpoint)", nil
}

// spansTo says where the functions' spans go (each function reads the
// same OTEL_* variables here).
func spansTo(t config.Tracing) string {
	switch t.Exporter {
	case config.ExporterConsole:
		return "spans: one JSON line each on stderr, with the logs, when each request or batch ends"
	case config.ExporterOTLP:
		return "spans: OTLP/HTTP to " + t.Endpoint + ", when each request or batch ends"
	}
	return "spans: off (OTEL_TRACES_EXPORTER=console prints them on stderr; OTEL_EXPORTER_OTLP_ENDPOINT sends them to a collector)"
}
