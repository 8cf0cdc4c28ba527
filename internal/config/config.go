// Package config reads each function's configuration from its environment
// into a typed value, with defaults and parsing, failing at start with
// every problem named; it builds nothing (internal/app and its packages do). The same loaders run in Lambda and under make run
// (with local defaults laid over the environment, see Overlay), and
// Functions lists what each function reads for the template drift test.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemlambda/idemlambda/internal/metrics"
)

// Var is one environment variable.
type Var struct {
	// Name is the variable's name.
	Name string
	// Default applies when the variable is unset or empty; "" means
	// required, unless Optional.
	Default string
	// Optional variables may be unset or empty, with no default: their
	// absence means something ("no exporter").
	Optional bool
	// Doc says what it is for.
	Doc string
}

// The variables; docs/operations.md documents each.
var (
	ProductsTable        = Var{Name: "PRODUCTS_TABLE", Doc: "products table name"}
	IdempotencyTable     = Var{Name: "IDEMPOTENCY_TABLE", Doc: "idempotency table name"}
	OutboxTable          = Var{Name: "OUTBOX_TABLE", Doc: "outbox table name"}
	SellersTable         = Var{Name: "SELLERS_TABLE", Doc: "seller statistics table name"}
	EventBusName         = Var{Name: "EVENT_BUS_NAME", Doc: "EventBridge bus the relay publishes to"}
	EventSource          = Var{Name: "EVENT_SOURCE", Default: "idemlambda.products", Doc: "CloudEvents source and EventBridge Source"}
	IdempotencyRetention = Var{Name: "IDEMPOTENCY_RETENTION", Default: "24h", Doc: "how long a completed key replays (Go duration)"}
	IdempotencyMode      = Var{Name: "IDEMPOTENCY_MODE", Default: "reserve", Doc: "reserve (claim, then commit: 2 DynamoDB calls) or transact (claim inside the commit: 1 call)"}
	IdempotencyCacheSize = Var{Name: "IDEMPOTENCY_CACHE_SIZE", Default: "1000", Doc: "completed records kept in memory per execution environment; 0 turns the cache off"}
	CallersTable         = Var{Name: "CALLERS_TABLE", Doc: "callers table name: grants of sellers and per-caller windows"}
	CallerLimit          = Var{Name: "CALLER_LIMIT", Default: "100", Doc: "products one caller may create per window; 0 turns the limit off"}
	CallerLimitWindow    = Var{Name: "CALLER_LIMIT_WINDOW", Default: "10s", Doc: "the per-caller limit's window, whole seconds (a Go duration such as 10s or 1m)"}
	IdempotencyTableKind = Var{Name: "IDEMPOTENCY_TABLE_KIND", Default: "regional", Doc: "regional, mrec or mrsc: whether the tables are one Region's or a global table's, and its consistency mode (docs/operations.md, Global tables)"}
	ReplicaRegions       = Var{Name: "REPLICA_REGIONS", Optional: true, Doc: "a global table's Regions, comma-separated, this function's included, listed in the same order in every Region, appended to and never reordered (empty: one Region)"}
	HomeRegion           = Var{Name: "HOME_REGION", Optional: true, Doc: "mrec: the Region every idempotency key of createproduct is claimed in, from any Region, until a failover moves it (required with mrec, empty otherwise)"}
	LogLevel             = Var{Name: "LOG_LEVEL", Default: "info", Doc: "debug, info, warn or error"}
	MetricsNamespace     = Var{Name: "METRICS_NAMESPACE", Default: metrics.DefaultNamespace, Doc: "CloudWatch namespace of the function's EMF metrics"}
)

// OpenTelemetry's own variables, with the meaning its specification gives
// them, except where Doc says otherwise: every function reads them
// (Common.Tracing), and internal/app builds the function's tracing from
// what they say.
var (
	ServiceName    = Var{Name: "OTEL_SERVICE_NAME", Optional: true, Doc: "the service.name of the function's spans (empty: the function's name)"}
	TracesExporter = Var{Name: "OTEL_TRACES_EXPORTER", Optional: true, Doc: "otlp, console or none (empty: otlp when OTEL_EXPORTER_OTLP_ENDPOINT is set, else none)"}
	OTLPEndpoint   = Var{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Optional: true, Doc: "OTLP/HTTP base URL the otlp exporter sends to, /v1/traces appended (empty: http://localhost:4318)"}
	Propagators    = Var{Name: "OTEL_PROPAGATORS", Default: "tracecontext,baggage", Doc: "the trace headers the function's AWS SDK requests carry: tracecontext, baggage, xray or none, comma-separated"}
)

// DefaultOTLPEndpoint is the OTLP/HTTP endpoint of the specification, and
// where the ADOT collector layer listens.
const DefaultOTLPEndpoint = "http://localhost:4318"

// Exporter is where a function's spans go (OTEL_TRACES_EXPORTER).
type Exporter string

// The exporters.
const (
	// ExporterNone records and exports nothing: a no-op tracer provider,
	// which still passes the trace Lambda began on to the events.
	ExporterNone Exporter = "none"
	// ExporterOTLP sends spans over OTLP/HTTP (protobuf) to Endpoint, in
	// batches flushed at the end of each invocation.
	ExporterOTLP Exporter = "otlp"
	// ExporterConsole writes each span as a JSON line to the function's
	// stdout (make run: stderr, with the logs).
	ExporterConsole Exporter = "console"
)

// The propagators OTEL_PROPAGATORS may name.
const (
	PropagatorTraceContext = "tracecontext"
	PropagatorBaggage      = "baggage"
	PropagatorXRay         = "xray"
	PropagatorNone         = "none"
)

// The functions' names: the Function dimension of their metrics, and
// template.yaml's logical ids in CamelCase plus "Function".
const (
	NameCreateProduct = "createproduct"
	NameGetProduct    = "getproduct"
	NameOutboxRelay   = "outboxrelay"
	NameSellerStats   = "sellerstats"
	NameGetSeller     = "getseller"
	NameSweeper       = "sweeper"
)

// The AWS SDK's endpoint variables, with the SDK's names and meaning: a
// function resolves its clients' endpoint from them exactly as the SDK's
// configuration loader (config.LoadDefaultConfig) does, though app.Client
// builds the clients without it. A client of a service calls the endpoint
// its service's variable names, else AWS_ENDPOINT_URL's, else the service's
// regional endpoint; AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true ignores both.
// template.yaml sets none of them: Lambda sets none either, so a deployed
// function calls the regional endpoints, and an emulator that injects
// AWS_ENDPOINT_URL (MiniStack, LocalStack) moves every client at once.
var (
	EndpointURL                  = Var{Name: "AWS_ENDPOINT_URL", Optional: true, Doc: "every service's endpoint where the service's own variable is unset (unset: the regional endpoints)"}
	IgnoreConfiguredEndpointURLs = Var{Name: "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", Optional: true, Doc: "true: ignore the endpoint variables, call the regional endpoints (true or false)"}
	EndpointDynamoDB             = Var{Name: "AWS_ENDPOINT_URL_DYNAMODB", Optional: true, Doc: "DynamoDB endpoint (unset: AWS_ENDPOINT_URL's, else the regional endpoint)"}
	EndpointEventBridge          = Var{Name: "AWS_ENDPOINT_URL_EVENTBRIDGE", Optional: true, Doc: "EventBridge endpoint (unset: AWS_ENDPOINT_URL's, else the regional endpoint)"}
	// EndpointDynamoDBStreams is read by no function: make run polls the
	// Streams API there when it is set.
	EndpointDynamoDBStreams = Var{Name: "AWS_ENDPOINT_URL_DYNAMODB_STREAMS", Optional: true, Doc: "DynamoDB Streams endpoint (unset: AWS_ENDPOINT_URL's, else the regional endpoint)"}
)

// The variables Lambda sets in every function's environment: the region
// and the execution role's credentials, from which app.Client builds the
// AWS clients. A loader reads them without requiring them, so make run and
// tests load a configuration without them; building a client needs them.
var (
	Region          = Var{Name: "AWS_REGION", Doc: "the function's region, set by Lambda"}
	AccessKeyID     = Var{Name: "AWS_ACCESS_KEY_ID", Doc: "the execution role's access key id, set by Lambda"}
	SecretAccessKey = Var{Name: "AWS_SECRET_ACCESS_KEY", Doc: "the execution role's secret access key, set by Lambda"}
	SessionToken    = Var{Name: "AWS_SESSION_TOKEN", Doc: "the execution role's session token, set by Lambda"}
)

// MaxCacheSize bounds IDEMPOTENCY_CACHE_SIZE; the memory the cache holds
// is bounded apart from it by pkg/idem's default byte budget (16 MB).
const MaxCacheSize = 1_000_000

// Common is what every function reads.
type Common struct {
	// LogLevel is the level of the function's JSON log.
	LogLevel slog.Level
	// MetricsNamespace is the CloudWatch namespace of its metrics;
	// empty is metrics.DefaultNamespace.
	MetricsNamespace string
	// Tracing is where its spans go.
	Tracing Tracing
}

// Shared returns what every function's configuration has, whichever
// function's it is (each embeds Common): what app.Main builds the log and
// the tracing from.
func (c Common) Shared() Common { return c }

// Tracing is how a function exports its spans. The zero value exports
// nothing.
type Tracing struct {
	// ServiceName is the spans' service.name; "" is the function's name.
	ServiceName string
	// Exporter is where the spans go; "" is ExporterNone.
	Exporter Exporter
	// Endpoint is the OTLP/HTTP base URL of ExporterOTLP.
	Endpoint string
	// Propagators name the trace headers the AWS SDK requests carry, in
	// order; none for "none".
	Propagators []string
}

// AWS is what a function's AWS clients are built from.
type AWS struct {
	// Region is the region the clients call.
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken are the execution
	// role's temporary credentials, valid for the execution environment's
	// life.
	AccessKeyID, SecretAccessKey, SessionToken string
	// Endpoint replaces the service's regional endpoint; "" keeps it.
	// The loaders resolve it from the SDK's endpoint variables as the
	// SDK's own loader does (see EndpointURL).
	Endpoint string
}

// Mode is how a function claims idempotency keys (IDEMPOTENCY_MODE).
type Mode string

// The modes: both read and write the same records, so functions of either
// mode can share a table and a key.
const (
	// ModeReserve claims a key with a conditional PutItem before the work,
	// then commits the work with the completion (idem.Store.Execute): a
	// duplicate in flight gets 409.
	ModeReserve Mode = "reserve"
	// ModeTransact claims the key in the work's own transaction
	// (idem.Store.Transact): one call, and a duplicate gets the winner's
	// response once it has committed (409 while it commits).
	ModeTransact Mode = "transact"
)

// ParseMode reads a mode name ("reserve" or "transact").
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case ModeReserve, ModeTransact:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: want %q or %q", s, ModeReserve, ModeTransact)
}

// TableKind is what kind of table the stack's tables are
// (IDEMPOTENCY_TABLE_KIND): one Region's, or a global table in one of
// DynamoDB's two consistency modes.
type TableKind string

// The table kinds.
const (
	// KindRegional is a table in one Region: no replica.
	KindRegional TableKind = "regional"
	// KindMREC is a global table with multi-Region eventual consistency:
	// a condition sees only its Region's replica, and concurrent writes
	// of an item in two Regions resolve by last writer wins.
	KindMREC TableKind = "mrec"
	// KindMRSC is a global table with multi-Region strong consistency:
	// three Regions (or two and a witness), no transactions, no TTL.
	KindMRSC TableKind = "mrsc"
)

// Global is where a function stands on a global table: the kind of
// table, its Regions, and, on MREC, the Region that claims createproduct's
// keys.
type Global struct {
	// Kind is the tables' kind.
	Kind TableKind
	// Regions are the tables' Regions in the order every Region lists
	// them (the sellers' shard ranges follow it); nil for KindRegional.
	Regions []string
	// Home is the Region every key is claimed in (KindMREC, createproduct).
	Home string
}

// Idempotency configures a function's idempotency store.
type Idempotency struct {
	// Table is the idempotency table's name.
	Table string
	// Retention is how long a completed key replays.
	Retention time.Duration
	// Mode is how keys are claimed.
	Mode Mode
	// CacheSize is how many completed records the process keeps; 0 is none.
	CacheSize int
}

// MaxCallerLimit bounds CALLER_LIMIT.
const MaxCallerLimit = 1_000_000

// Limit bounds each caller's creations (CALLER_LIMIT per
// CALLER_LIMIT_WINDOW).
type Limit struct {
	// Creates is the most products one caller creates per window; 0
	// turns the limit off.
	Creates int
	// Window is the window's length, whole seconds.
	Window time.Duration
}

// CreateProduct is the createproduct function's configuration.
type CreateProduct struct {
	Common
	// AWS builds its DynamoDB client.
	AWS                        AWS
	ProductsTable, OutboxTable string
	EventSource                string
	Idempotency                Idempotency
	// CallersTable holds the callers' grants of sellers and their windows.
	CallersTable string
	// Limit bounds each caller's creations.
	Limit Limit
	// Global is the tables' kind, their Regions and the keys' home.
	Global Global
}

// GetProduct is the getproduct function's configuration.
type GetProduct struct {
	Common
	// AWS builds its DynamoDB client.
	AWS           AWS
	ProductsTable string
}

// OutboxRelay is the outboxrelay function's configuration.
type OutboxRelay struct {
	Common
	// AWS builds its EventBridge client.
	AWS                       AWS
	EventBusName, EventSource string
}

// SellerStats is the sellerstats consumer's configuration. Its
// idempotency store always runs in transact mode: the counter's writes are
// computed from the event alone.
type SellerStats struct {
	Common
	// AWS builds its DynamoDB client.
	AWS          AWS
	SellersTable string
	// EventSource is the only source whose events are counted.
	EventSource string
	Idempotency Idempotency
	// Global is the tables' kind and Regions: each Region counts on
	// shards of its own (sellers.RegionShards).
	Global Global
}

// GetSeller is the getseller function's configuration.
type GetSeller struct {
	Common
	// AWS builds its DynamoDB client.
	AWS          AWS
	SellersTable string
}

// Sweeper is the sweeper function's configuration: the tables whose
// expired items it deletes where DynamoDB's TTL does not (a global table
// with multi-Region strong consistency has none).
type Sweeper struct {
	Common
	// AWS builds its DynamoDB client.
	AWS AWS
	// IdempotencyTable, OutboxTable and CallersTable are the tables it
	// sweeps: the idempotency records, the outbox items and the
	// callers' window counters.
	IdempotencyTable, OutboxTable, CallersTable string
	// Global is the tables' kind and Regions: the idempotency store is
	// told them, as the functions that write its records are.
	Global Global
}

// LoadCreateProduct reads createproduct's configuration through getenv.
func LoadCreateProduct(getenv func(string) string) (CreateProduct, error) {
	return load(NameCreateProduct, getenv, readCreateProduct)
}

// LoadGetProduct reads getproduct's configuration through getenv.
func LoadGetProduct(getenv func(string) string) (GetProduct, error) {
	return load(NameGetProduct, getenv, readGetProduct)
}

// LoadOutboxRelay reads outboxrelay's configuration through getenv.
func LoadOutboxRelay(getenv func(string) string) (OutboxRelay, error) {
	return load(NameOutboxRelay, getenv, readOutboxRelay)
}

// LoadSellerStats reads sellerstats' configuration through getenv.
func LoadSellerStats(getenv func(string) string) (SellerStats, error) {
	return load(NameSellerStats, getenv, readSellerStats)
}

// LoadGetSeller reads getseller's configuration through getenv.
func LoadGetSeller(getenv func(string) string) (GetSeller, error) {
	return load(NameGetSeller, getenv, readGetSeller)
}

// LoadSweeper reads the sweeper's configuration through getenv.
func LoadSweeper(getenv func(string) string) (Sweeper, error) {
	return load(NameSweeper, getenv, readSweeper)
}

func readCommon(e *env) Common {
	return Common{LogLevel: e.level(LogLevel), MetricsNamespace: e.namespace(MetricsNamespace), Tracing: readTracing(e)}
}

// readTracing reads OpenTelemetry's variables. An endpoint alone turns
// the otlp exporter on; the exporter alone sends to the default endpoint.
func readTracing(e *env) Tracing {
	t := Tracing{ServiceName: e.opt(ServiceName)}
	endpoint := e.opt(OTLPEndpoint)
	if endpoint != "" {
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			e.errs = append(e.errs, fmt.Errorf("%w: %s=%q: want an http or https URL such as %s", ErrInvalid, OTLPEndpoint.Name, endpoint, DefaultOTLPEndpoint))
		}
	}
	switch x := Exporter(e.opt(TracesExporter)); x {
	case "":
		t.Exporter = ExporterNone
		if endpoint != "" {
			t.Exporter = ExporterOTLP
		}
	case ExporterNone, ExporterOTLP, ExporterConsole:
		t.Exporter = x
	default:
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%q: want %s, %s or %s", ErrInvalid, TracesExporter.Name, x, ExporterOTLP, ExporterConsole, ExporterNone))
	}
	if t.Exporter == ExporterOTLP {
		t.Endpoint = cmp.Or(endpoint, DefaultOTLPEndpoint)
	}
	t.Propagators = parse(e, Propagators, func(s string) ([]string, error) {
		var names []string
		for name := range strings.SplitSeq(s, ",") {
			switch name = strings.TrimSpace(name); name {
			case PropagatorNone:
				if s = strings.TrimSpace(s); s != PropagatorNone {
					return nil, errors.New(`"none" stands alone`)
				}
				return nil, nil
			case PropagatorTraceContext, PropagatorBaggage, PropagatorXRay:
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			default:
				return nil, fmt.Errorf("%q is not one of tracecontext, baggage, xray, none", name)
			}
		}
		return names, nil
	})
	return t
}

func readIdempotency(e *env) Idempotency {
	i := readIdempotencyFixedMode(e, "")
	i.Mode = parse(e, IdempotencyMode, ParseMode)
	return i
}

// readGlobalWithHome reads the tables' kind and Regions, and the home
// Region createproduct claims its keys in on MREC.
func readGlobalWithHome(e *env) Global {
	g := readGlobal(e)
	g.Home = e.opt(HomeRegion)
	switch {
	case g.Kind == KindMREC && g.Home == "":
		e.errs = append(e.errs, fmt.Errorf("%w: %s is required with %s=%s: a key claimed in two Regions within the replication lag would run in both", ErrInvalid, HomeRegion.Name, IdempotencyTableKind.Name, KindMREC))
	case g.Kind == KindMREC && !slices.Contains(g.Regions, g.Home):
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%q is not one of %s %v", ErrInvalid, HomeRegion.Name, g.Home, ReplicaRegions.Name, g.Regions))
	case g.Kind != KindMREC && g.Home != "":
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%q: a home Region is for %s=%s only", ErrInvalid, HomeRegion.Name, g.Home, IdempotencyTableKind.Name, KindMREC))
	}
	return g
}

// readGlobal reads the tables' kind and Regions: a global table lists its
// Regions, this one among them when Lambda names it; a regional one none.
func readGlobal(e *env) Global {
	g := Global{Kind: parse(e, IdempotencyTableKind, func(s string) (TableKind, error) {
		switch k := TableKind(strings.ToLower(s)); k {
		case KindRegional, KindMREC, KindMRSC:
			return k, nil
		}
		return "", fmt.Errorf("want %s, %s or %s", KindRegional, KindMREC, KindMRSC)
	})}
	for r := range strings.SplitSeq(e.opt(ReplicaRegions), ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if slices.Contains(g.Regions, r) {
			e.errs = append(e.errs, fmt.Errorf("%w: %s lists %q twice", ErrInvalid, ReplicaRegions.Name, r))
		}
		g.Regions = append(g.Regions, r)
	}
	region := e.optional(&e.lambda, Region)
	switch {
	case g.Kind == KindRegional && len(g.Regions) > 0:
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%v with %s=%s: a regional table has no other Region", ErrInvalid, ReplicaRegions.Name, g.Regions, IdempotencyTableKind.Name, KindRegional))
	case g.Kind != KindRegional && g.Kind != "" && len(g.Regions) < 2:
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%s needs %s, two Regions or more", ErrInvalid, IdempotencyTableKind.Name, g.Kind, ReplicaRegions.Name))
	case g.Kind == KindMRSC && len(g.Regions) > 3:
		// Three members in all: three replicas, or two and a witness.
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%v with %s=%s: three Regions at most", ErrInvalid, ReplicaRegions.Name, g.Regions, IdempotencyTableKind.Name, KindMRSC))
	case g.Kind != KindRegional && region != "" && !slices.Contains(g.Regions, region):
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%v does not list this function's Region %s", ErrInvalid, ReplicaRegions.Name, g.Regions, region))
	}
	return g
}

// readIdempotencyFixedMode reads the store's settings for a function whose
// mode is not configurable.
func readIdempotencyFixedMode(e *env, mode Mode) Idempotency {
	return Idempotency{
		Table:     e.str(IdempotencyTable),
		Retention: e.duration(IdempotencyRetention),
		Mode:      mode,
		CacheSize: e.integer(IdempotencyCacheSize, MaxCacheSize),
	}
}

func readCreateProduct(e *env) CreateProduct {
	return CreateProduct{
		ProductsTable: e.str(ProductsTable),
		OutboxTable:   e.str(OutboxTable),
		EventSource:   e.str(EventSource),
		Idempotency:   readIdempotency(e),
		CallersTable:  e.str(CallersTable),
		Limit:         Limit{Creates: e.integer(CallerLimit, MaxCallerLimit), Window: e.seconds(CallerLimitWindow)},
		Global:        readGlobalWithHome(e),
		Common:        readCommon(e),
		AWS:           readAWS(e, EndpointDynamoDB),
	}
}

func readGetProduct(e *env) GetProduct {
	return GetProduct{ProductsTable: e.str(ProductsTable), Common: readCommon(e), AWS: readAWS(e, EndpointDynamoDB)}
}

func readSellerStats(e *env) SellerStats {
	return SellerStats{
		SellersTable: e.str(SellersTable),
		EventSource:  e.str(EventSource),
		Idempotency:  readIdempotencyFixedMode(e, ModeTransact),
		Global:       readGlobal(e),
		Common:       readCommon(e),
		AWS:          readAWS(e, EndpointDynamoDB),
	}
}

func readGetSeller(e *env) GetSeller {
	return GetSeller{SellersTable: e.str(SellersTable), Common: readCommon(e), AWS: readAWS(e, EndpointDynamoDB)}
}

func readSweeper(e *env) Sweeper {
	return Sweeper{
		IdempotencyTable: e.str(IdempotencyTable),
		OutboxTable:      e.str(OutboxTable),
		CallersTable:     e.str(CallersTable),
		Global:           readGlobal(e),
		Common:           readCommon(e),
		AWS:              readAWS(e, EndpointDynamoDB),
	}
}

func readOutboxRelay(e *env) OutboxRelay {
	return OutboxRelay{
		EventBusName: e.str(EventBusName), EventSource: e.str(EventSource),
		Common: readCommon(e), AWS: readAWS(e, EndpointEventBridge),
	}
}

// LoadAWS reads through getenv what a client of service (the service's
// endpoint variable, one of the SDK's endpoint variables above) is built
// from, as a function's loader does: for callers outside a function, make
// run and the endpoint test backend. A malformed
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is an error, as it is to the SDK's
// loader.
func LoadAWS(getenv func(string) string, service Var) (AWS, error) {
	e := &env{getenv: getenv}
	a := readAWS(e, service)
	if err := errors.Join(e.errs...); err != nil {
		return AWS{}, err
	}
	return a, nil
}

// readAWS reads what the function's client of service is built from.
func readAWS(e *env, service Var) AWS {
	return AWS{
		Region:          e.optional(&e.lambda, Region),
		AccessKeyID:     e.optional(&e.lambda, AccessKeyID),
		SecretAccessKey: e.optional(&e.lambda, SecretAccessKey),
		SessionToken:    e.optional(&e.lambda, SessionToken),
		Endpoint:        e.endpoint(service),
	}
}

// endpoint resolves the endpoint of service's clients as the SDK's
// configuration loader does from the environment: nothing when
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true (case aside), else the
// service's variable, else AWS_ENDPOINT_URL; a variable set to "" is
// unset, and values are taken as they are, untrimmed, as the SDK takes
// them.
func (e *env) endpoint(service Var) string {
	for _, v := range []Var{service, EndpointURL, IgnoreConfiguredEndpointURLs} {
		if !slices.Contains(e.sdk, v) {
			e.sdk = append(e.sdk, v)
		}
	}
	switch ignore := e.getenv(IgnoreConfiguredEndpointURLs.Name); {
	case strings.EqualFold(ignore, "true"):
		return ""
	case ignore != "" && !strings.EqualFold(ignore, "false"):
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%q: want true or false", ErrInvalid, IgnoreConfiguredEndpointURLs.Name, ignore))
		return ""
	}
	return cmp.Or(e.getenv(service.Name), e.getenv(EndpointURL.Name))
}

// Function is one Lambda function and what its loader reads: its own
// variables, which template.yaml sets; the AWS SDK endpoint variables of
// the clients it builds, which template.yaml never sets; and the
// variables Lambda sets. Its name's CamelCase form plus "Function" is its
// logical id in template.yaml.
type Function struct {
	Name       string
	Vars       []Var
	SDKVars    []Var
	LambdaVars []Var
}

// Functions lists every function with exactly the variables its loader
// reads (found by running the loader), so the list cannot drift from the
// code; template.yaml must set exactly these.
func Functions() []Function {
	return []Function{
		spec(NameCreateProduct, readCreateProduct),
		spec(NameGetProduct, readGetProduct),
		spec(NameOutboxRelay, readOutboxRelay),
		spec(NameSellerStats, readSellerStats),
		spec(NameGetSeller, readGetSeller),
		spec(NameSweeper, readSweeper),
	}
}

func spec[T any](name string, read func(*env) T) Function {
	e := &env{getenv: func(string) string { return "" }}
	read(e)
	return Function{Name: name, Vars: e.read, SDKVars: e.sdk, LambdaVars: e.lambda}
}

// Overlay returns a getenv that reads getenv first and, where it has
// nothing, defaults: for make run, which names local tables the
// environment does not.
func Overlay(getenv func(string) string, defaults map[string]string) func(string) string {
	return func(k string) string {
		if v := getenv(k); strings.TrimSpace(v) != "" {
			return v
		}
		return defaults[k]
	}
}

// ErrInvalid reports a missing or malformed variable.
var ErrInvalid = errors.New("config: invalid environment")

func load[T any](name string, getenv func(string) string, read func(*env) T) (T, error) {
	e := &env{getenv: getenv}
	v := read(e)
	if err := errors.Join(e.errs...); err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// env reads variables through getenv, recording what it read, by kind,
// and every problem.
type env struct {
	getenv      func(string) string
	read        []Var // the function's own
	sdk, lambda []Var // the SDK's endpoint variables; Lambda's
	errs        []error
}

// optional returns the variable's value, "" when unset, recording it in
// kind.
func (e *env) optional(kind *[]Var, v Var) string {
	if !slices.Contains(*kind, v) {
		*kind = append(*kind, v)
	}
	return strings.TrimSpace(e.getenv(v.Name))
}

// opt returns an Optional variable's value, "" when unset.
func (e *env) opt(v Var) string {
	if !slices.Contains(e.read, v) {
		e.read = append(e.read, v)
	}
	return strings.TrimSpace(e.getenv(v.Name))
}

// str returns the variable's value or its default; a required variable
// that is unset is an error.
func (e *env) str(v Var) string {
	if !slices.Contains(e.read, v) {
		e.read = append(e.read, v)
	}
	s := strings.TrimSpace(e.getenv(v.Name))
	if s == "" {
		s = v.Default
	}
	if s == "" {
		e.errs = append(e.errs, fmt.Errorf("%w: %s is required (%s)", ErrInvalid, v.Name, v.Doc))
	}
	return s
}

// duration parses the variable as a positive Go duration.
func (e *env) duration(v Var) time.Duration {
	return parse(e, v, func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, errors.New("not a positive duration such as 24h or 90m")
		}
		return d, nil
	})
}

// seconds parses the variable as a positive Go duration of whole seconds.
func (e *env) seconds(v Var) time.Duration {
	return parse(e, v, func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d%time.Second != 0 {
			return 0, errors.New("not a duration of whole seconds such as 10s or 1m")
		}
		return d, nil
	})
}

// integer parses the variable as a whole number from 0 to max.
func (e *env) integer(v Var, max int) int {
	return parse(e, v, func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > max {
			return 0, fmt.Errorf("not a whole number from 0 to %d", max)
		}
		return n, nil
	})
}

// level parses the variable as a slog level.
func (e *env) level(v Var) slog.Level {
	return parse(e, v, func(s string) (slog.Level, error) {
		var l slog.Level
		if err := l.UnmarshalText([]byte(s)); err != nil {
			return slog.LevelInfo, errors.New("want debug, info, warn or error")
		}
		return l, nil
	})
}

// namespace parses the variable as a CloudWatch namespace: 1 to 255 of
// the characters CloudWatch allows, not in the AWS/ space.
func (e *env) namespace(v Var) string {
	return parse(e, v, func(s string) (string, error) {
		if len(s) > 255 || strings.HasPrefix(s, "AWS/") || strings.HasPrefix(s, ":") {
			return "", errors.New("want 1 to 255 characters, not starting with AWS/ or a colon")
		}
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/#: ", r)) {
				return "", fmt.Errorf("%q is not allowed: letters, digits and . _ - / # : and space are", r)
			}
		}
		return s, nil
	})
}

// parse reads the variable through p, recording its error.
func parse[T any](e *env, v Var, p func(string) (T, error)) T {
	var zero T
	s := e.str(v)
	if s == "" {
		return zero
	}
	t, err := p(s)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%q: %w", ErrInvalid, v.Name, s, err))
		return zero
	}
	return t
}
