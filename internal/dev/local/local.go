// Package local runs the service on a laptop: an embedded
// DynamoDB-compatible store (or an endpoint you name), the three tables,
// and the API handlers on a port, the same handlers the Lambdas run.
package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/getproduct"
	"github.com/idemlambda/idemlambda/internal/app/getseller"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
	"github.com/idemlambda/idemlambda/internal/dev/embedded"
	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/dev/httpadapter"
	"github.com/idemlambda/idemlambda/internal/dev/streampoll"
	"github.com/idemlambda/idemlambda/internal/dev/tables"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/tracing"
)

// Config says what to run.
type Config struct {
	// APIAddr is where the API listens (":8080"); empty runs the store only.
	APIAddr string
	// StoreAddr is where the embedded store listens ("127.0.0.1:8000").
	StoreAddr string
	// Endpoint, when set, is an existing DynamoDB endpoint (DynamoDB Local,
	// moto) used instead of the embedded store.
	Endpoint string
	// CreateProduct and GetProduct configure the API functions, as their
	// Lambdas would be configured; the tables they name are created.
	CreateProduct config.CreateProduct
	GetProduct    config.GetProduct
	// SellerStats and GetSeller configure the seller statistics consumer
	// and GET /sellers/{id}. With a Publisher that is not an EventBridge
	// (ConsumeEvents), every event the relay publishes also goes, as the
	// rule and the queue would deliver it, to the consumer.
	SellerStats config.SellerStats
	GetSeller   config.GetSeller
	// OutboxRelay configures the relay's log and metrics (its publisher
	// is Publisher).
	OutboxRelay config.OutboxRelay
	// ConsumeEvents feeds the relay's events to the seller statistics
	// consumer through an in-process queue (internal/dev/eventbus).
	ConsumeEvents bool
	// Out is the functions' stdout: each one's JSON log lines and its
	// metrics lines (CloudWatch EMF), as Lambda would send them to
	// CloudWatch Logs.
	Out io.Writer
	// Log receives this runner's own log lines (the local feed, queue and
	// stream poller), which no Lambda writes.
	Log *slog.Logger
	// Publisher, when set, runs the outbox relay into it: fed from the
	// embedded store's outbox puts, or from the endpoint's stream.
	Publisher outbox.Publisher
	// Streams reads the endpoint's stream; required with Endpoint and
	// Publisher, unless Stream is set.
	Streams streampoll.Client
	// Regions, when set, runs one Region of a global table whose
	// Regions serve at these endpoints (by Region; Endpoint is this
	// Region's, CreateProduct.AWS.Region): every function's client
	// reaches each Region at its own (RegionClient), as createproduct's
	// claims at the keys' home need.
	Regions map[string]string
	// Stream, when set, is polled for the records of the outbox table's
	// stream added since its last call, and they are fed to the relay:
	// for a store with streams but no Streams API (idemtest's global
	// table).
	Stream func() []events.DynamoDBEventRecord
	// SpanProcessors also receive every function's spans, whatever its
	// exporter (tests record them).
	SpanProcessors []sdktrace.SpanProcessor
	// Caller is the IAM identity every API request comes from, as API
	// Gateway's IAM authorizer names a SigV4 caller; empty is CallerARN.
	Caller string
	// Grant lists the sellers Caller may act for (seller ids, or
	// access.AnySeller for every one), granted in the callers table at
	// start as an operator grants them (cmd/grant); none grants nothing.
	Grant []string
}

// tables names the tables the functions use.
func (c Config) tables() tables.Names {
	return tables.Names{
		Products: c.CreateProduct.ProductsTable, Idempotency: c.CreateProduct.Idempotency.Table,
		Outbox: c.CreateProduct.OutboxTable, Sellers: c.GetSeller.SellersTable, Callers: c.CreateProduct.CallersTable,
	}
}

// Runner is a started local environment.
type Runner struct {
	// APIURL is the API's base URL, empty when the API is off.
	APIURL string
	// StoreURL is the DynamoDB endpoint in use.
	StoreURL string
	// Client talks to the store.
	Client *dynamodb.Client
	// Embedded is the embedded store, nil with an external endpoint.
	Embedded *embedded.Store

	store   *http.Server // the embedded store's, nil with an endpoint
	api     *http.Server
	tracing []*tracing.Tracing // the functions', shut down last
	errs    chan error
	feed    *feed
	queue   *eventbus.Queue
	stop    context.CancelFunc
	bg      sync.WaitGroup
	caller  string   // every API request's
	grant   []string // the sellers caller was granted at start
}

// Start brings the store, tables and API up and returns once they serve.
func Start(ctx context.Context, cfg Config) (*Runner, error) {
	r := &Runner{errs: make(chan error, 4), caller: cmp.Or(cfg.Caller, CallerARN), grant: cfg.Grant}
	bgCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = stop
	if cfg.Endpoint == "" {
		ln, err := net.Listen("tcp", cfg.StoreAddr)
		if err != nil {
			return nil, fmt.Errorf("embedded store: %w", err)
		}
		r.Embedded = embedded.New()
		if cfg.Publisher != nil {
			r.feed = newFeed(cfg.CreateProduct.OutboxTable, streampoll.DefaultBatchSize, cfg.Log)
			r.Embedded.OnPut(r.feed.put)
		}
		r.store = r.serve(ln, r.Embedded)
		r.StoreURL = "http://" + ln.Addr().String()
	} else {
		r.StoreURL = cfg.Endpoint
	}
	client, err := r.client(cfg, nil)
	if err != nil {
		return nil, errors.Join(err, r.Close(ctx))
	}
	r.Client = client
	if err := EnsureTables(ctx, client, cfg.tables()); err != nil {
		return nil, errors.Join(err, r.Close(ctx))
	}
	if len(cfg.Grant) > 0 {
		caller, err := access.IAMCaller(r.caller)
		if err == nil {
			err = access.Grant(ctx, client, cfg.CreateProduct.CallersTable, caller.ID(), cfg.Grant...)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("grant the local caller: %w", err), r.Close(ctx))
		}
	}
	if cfg.Publisher != nil {
		if err := r.startRelay(ctx, bgCtx, cfg); err != nil {
			return nil, errors.Join(err, r.Close(ctx))
		}
	}
	if cfg.APIAddr == "" {
		return r, nil
	}
	routes, err := r.apiRoutes(cfg)
	if err != nil {
		return nil, errors.Join(err, r.Close(ctx))
	}
	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("api: %w", err), r.Close(ctx))
	}
	r.api = r.serve(ln, httpadapter.New(routes...))
	r.APIURL = "http://" + hostPort(ln.Addr())
	return r, nil
}

// apiRoutes are the HTTP API's routes, each served by its function's
// handler as the Lambda main assembles it, with its own tracing and
// DynamoDB client.
func (r *Runner) apiRoutes(cfg Config) ([]httpadapter.Route, error) {
	rt, client, err := r.function(cfg, config.NameCreateProduct, cfg.CreateProduct.Common)
	if err != nil {
		return nil, err
	}
	// Every route has the stack's IAM authorizer, and every request is
	// from the one local caller.
	authorizer := func(*http.Request) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
		return iamAuthorizer(r.caller)
	}
	create, err := createproduct.New(client, cfg.CreateProduct, rt)
	if err != nil {
		return nil, err
	}
	createRoute := httpadapter.Route{Method: http.MethodPost, Pattern: "/products", Handler: flushed(rt.Tracing, httpadapter.Handler(create)), Authorizer: authorizer}
	if rt, client, err = r.function(cfg, config.NameGetProduct, cfg.GetProduct.Common); err != nil {
		return nil, err
	}
	get, err := getproduct.New(client, cfg.GetProduct, rt)
	if err != nil {
		return nil, err
	}
	getRoute := httpadapter.Route{Method: http.MethodGet, Pattern: "/products/{id}", Handler: flushed(rt.Tracing, httpadapter.Handler(get)), Authorizer: authorizer}
	if rt, client, err = r.function(cfg, config.NameGetSeller, cfg.GetSeller.Common); err != nil {
		return nil, err
	}
	seller, err := getseller.New(client, cfg.GetSeller, rt)
	if err != nil {
		return nil, err
	}
	sellerRoute := httpadapter.Route{Method: http.MethodGet, Pattern: "/sellers/{id}", Handler: flushed(rt.Tracing, httpadapter.Handler(seller)), Authorizer: authorizer}
	return []httpadapter.Route{createRoute, getRoute, sellerRoute}, nil
}

// CallerARN is who every request to the local API comes from unless
// Config.Caller names another: make run stands in for the template's IAM
// authorizer, which has checked a request's SigV4 signature by the time
// it reaches a function, and lets every request in as this one local
// caller, an IAM user of the account id LocalStack, moto and MiniStack
// use, so nothing here looks like a real account.
const CallerARN = "arn:aws:iam::000000000000:user/local-developer"

// iamAuthorizer is the IAM authorizer's description of the caller arn,
// as API Gateway fills a SigV4 request's context in.
func iamAuthorizer(arn string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			AccountID: "000000000000", CallerID: "AIDALOCALDEVELOPER", UserARN: arn, UserID: "AIDALOCALDEVELOPER",
		},
	}
}

// function is what the named function runs with: its tracing, from its
// configuration (c), its output, and a DynamoDB client of its own on the
// store, traced as its Lambda's is.
func (r *Runner) function(cfg Config, name string, c config.Common) (app.Runtime, *dynamodb.Client, error) {
	rt, err := r.runtime(cfg, name, c)
	if err != nil {
		return app.Runtime{}, nil, err
	}
	client, err := r.client(cfg, rt.Tracing)
	if err != nil {
		return app.Runtime{}, nil, err
	}
	return rt, client, nil
}

// client is a DynamoDB client of the store, traced by t: of this Region's
// replica, reaching the others' at their endpoints, with Regions.
func (r *Runner) client(cfg Config, t *tracing.Tracing) (*dynamodb.Client, error) {
	if len(cfg.Regions) > 0 {
		return RegionClient(cfg.Regions, cfg.CreateProduct.AWS.Region, t)
	}
	return app.Client(storeAWS(r.StoreURL), t, dynamodb.NewFromConfig, ddb.CountPerContext)
}

// runtime is the named function's tracing, from its configuration (c),
// and its output.
func (r *Runner) runtime(cfg Config, name string, c config.Common) (app.Runtime, error) {
	t, err := app.Tracing(c.Tracing, name, cfg.Out, cfg.SpanProcessors...)
	if err != nil {
		return app.Runtime{}, err
	}
	if t.On() {
		r.tracing = append(r.tracing, t)
	}
	return app.Runtime{Out: cfg.Out, Tracing: t}, nil
}

// flushed exports t's spans once h has answered, as app.Flushed does at
// the end of each Lambda invocation: each request's spans show up when
// it ends.
func flushed[E, R any](t *tracing.Tracing, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	if !t.On() {
		return h
	}
	return func(ctx context.Context, e E) (R, error) {
		r, err := h(ctx, e)
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), app.FlushTimeout)
		defer cancel()
		_ = t.Flush(fctx) // the exporter reports its own failures
		return r, err
	}
}

// startRelay runs the outbox relay into cfg.Publisher (and, with
// ConsumeEvents, into the seller statistics consumer's queue), fed by the
// embedded store's puts or by the endpoint's stream.
func (r *Runner) startRelay(ctx, bgCtx context.Context, cfg Config) error {
	pub := cfg.Publisher
	if cfg.ConsumeEvents {
		rt, client, err := r.function(cfg, config.NameSellerStats, cfg.SellerStats.Common)
		if err != nil {
			return err
		}
		consumer, err := sellerstats.New(client, cfg.SellerStats, rt)
		if err != nil {
			return err
		}
		r.queue = eventbus.NewQueue(flushed(rt.Tracing, consumer.Handle), cfg.Log)
		r.background(func() { r.queue.Run(bgCtx) })
		pub = tee{pub, r.queue}
	}
	rt, err := r.runtime(cfg, config.NameOutboxRelay, cfg.OutboxRelay.Common)
	if err != nil {
		return err
	}
	h, err := outboxrelay.New(pub, cfg.OutboxRelay, rt)
	if err != nil {
		return err
	}
	handle := flushed(rt.Tracing, h.Handle)
	if r.feed == nil && cfg.Stream != nil {
		r.feed = newFeed(cfg.CreateProduct.OutboxTable, streampoll.DefaultBatchSize, cfg.Log)
		r.background(func() { r.feed.poll(bgCtx, cfg.Stream) })
	}
	if r.feed != nil {
		r.background(func() { r.feed.run(bgCtx, handle) })
		return nil
	}
	return r.pollStream(ctx, bgCtx, cfg, handle)
}

// tee publishes to first, then hands what first accepted to also, as the
// bus's rule would: not the events it refused, nor those from the first
// failed one on. The result of also does not count (the in-process queue
// never refuses).
type tee struct{ first, also outbox.Publisher }

func (t tee) Publish(ctx context.Context, evs []outbox.Event) (outbox.Result, error) {
	res, err := t.first.Publish(ctx, evs)
	n := len(evs)
	if err != nil {
		n = 0
		if pe, ok := errors.AsType[*outbox.PublishError](err); ok {
			n = min(max(pe.Index, 0), len(evs))
		}
	}
	refused := map[int]bool{}
	for _, r := range res.Rejected {
		refused[r.Index] = true
	}
	accepted := make([]outbox.Event, 0, n)
	for i, e := range evs[:n] {
		if !refused[i] {
			accepted = append(accepted, e)
		}
	}
	if len(accepted) > 0 {
		_, _ = t.also.Publish(ctx, accepted)
	}
	return res, err
}

func (r *Runner) serve(ln net.Listener, h http.Handler) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.errs <- err
		}
	}()
	return srv
}

// pollStream reads the endpoint's outbox stream into the relay, as the
// event source mapping would.
func (r *Runner) pollStream(ctx, bgCtx context.Context, cfg Config, handle streampoll.Handler) error {
	if cfg.Streams == nil {
		return errors.New("local: an endpoint relay needs a Streams client")
	}
	arn, err := streampoll.LatestStreamARN(ctx, r.Client, cfg.CreateProduct.OutboxTable)
	if err != nil {
		return err
	}
	p, err := streampoll.NewPoller(cfg.Streams, arn, handle, streampoll.Options{Logger: cfg.Log})
	if err != nil {
		return err
	}
	r.background(func() {
		if err := p.Run(bgCtx); err != nil {
			r.errs <- fmt.Errorf("stream poller: %w", err)
		}
	})
	return nil
}

func (r *Runner) background(fn func()) { r.bg.Go(fn) }

// RelayIdle reports whether the embedded feed has delivered every outbox
// put so far, and the consumer's queue every event (true without them).
func (r *Runner) RelayIdle() bool {
	return (r.feed == nil || r.feed.idle()) && (r.queue == nil || r.queue.Idle())
}

// Err delivers a server's failure while running.
func (r *Runner) Err() <-chan error { return r.errs }

// Close shuts the API down, letting requests in progress finish until ctx
// ends, then stops the relay and the embedded store, which no request
// needs any more, and last the functions' tracing, flushing what spans
// are left. (A graceful shutdown of the store would wait 5 s for the
// SDK's spare connections, which never carry a request.)
func (r *Runner) Close(ctx context.Context) error {
	var err error
	if r.api != nil {
		if err = r.api.Shutdown(ctx); err != nil {
			err = errors.Join(err, r.api.Close())
		}
	}
	r.stop()
	r.bg.Wait()
	if r.store != nil {
		err = errors.Join(err, r.store.Close())
	}
	for _, t := range r.tracing {
		err = errors.Join(err, t.Shutdown(ctx))
	}
	return err
}

// storeAWS is what clients of a local endpoint are built from: dummy
// credentials, so nothing here may touch a real account by accident.
func storeAWS(endpoint string) config.AWS {
	return config.AWS{Region: "us-east-1", AccessKeyID: "local", SecretAccessKey: "local", Endpoint: endpoint}
}

// Client returns a DynamoDB client for a local endpoint with dummy
// credentials: nothing here may touch a real account by accident. It
// counts its calls per context, as the functions' clients do.
func Client(endpoint string) (*dynamodb.Client, error) {
	return app.Client(storeAWS(endpoint), nil,
		dynamodb.NewFromConfig, ddb.CountPerContext)
}

// EnsureTables creates any of the tables that do not exist yet. A table
// n leaves unnamed is one the caller does not use: it is not created (a
// table name cannot be empty).
func EnsureTables(ctx context.Context, client *dynamodb.Client, n tables.Names) error {
	for _, t := range tables.All() {
		name := n.Of(t)
		if name == "" {
			continue
		}
		_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		var notFound *types.ResourceNotFoundException
		switch {
		case err == nil:
			continue
		case !errors.As(err, &notFound):
			return fmt.Errorf("describe %s: %w", name, err)
		}
		if err := t.Create(ctx, client, name, tables.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// hostPort shows a wildcard listen address as localhost.
func hostPort(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// grantText says which sellers a grant lists.
func grantText(g []string) string {
	switch {
	case len(g) == 0:
		return "no seller: every POST /products gets 403"
	case slices.Contains(g, access.AnySeller):
		return "every seller"
	}
	return "seller " + strings.Join(g, ", ")
}

// Banner prints where things run and a first request to try.
func Banner(w io.Writer, r *Runner) {
	if r.APIURL != "" {
		fmt.Fprintf(w, "idemlambda API on %s (POST /products, GET /products/{id}, GET /sellers/{id})\n", r.APIURL)
	}
	fmt.Fprintf(w, "DynamoDB-compatible store on %s\n", r.StoreURL)
	if r.APIURL == "" {
		return
	}
	fmt.Fprintf(w, `
Try it:
  curl -i -X POST %[1]s/products \
    -H 'Content-Type: application/json' -H 'Idempotency-Key: "order-42"' \
    -d '{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}'
Send it again for the stored response (Idempotent-Replayed: true).
Every request comes from the IAM caller %[2]s, granted %[3]s
(-caller and -sellers change them: go run ./cmd/local -help).
`, r.APIURL, r.caller, grantText(r.grant))
	if r.queue != nil {
		fmt.Fprintf(w, `Then the seller's numbers, counted once per product however often the event is delivered:
  curl -s %s/sellers/3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b
`, r.APIURL)
	} else {
		fmt.Fprintln(w, "GET /sellers/{id} shows what a seller statistics consumer counted; none runs in this process (events go to the bus).")
	}
	fmt.Fprintln(w, `Each function's JSON log lines and its metrics (one CloudWatch EMF line per invocation, "_aws"
first: what CloudWatch would publish) go to stderr. Ctrl-C stops.`)
}
