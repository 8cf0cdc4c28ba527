package config_test

import (
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadCreateProduct(t *testing.T) {
	t.Parallel()
	vals := map[string]string{
		"PRODUCTS_TABLE": "p", "IDEMPOTENCY_TABLE": "i", "OUTBOX_TABLE": "o", "CALLERS_TABLE": "c",
		"IDEMPOTENCY_RETENTION": "2h", "LOG_LEVEL": "warn",
	}
	c, err := config.LoadCreateProduct(env(vals))
	require.NoError(t, err)
	assert.Equal(t, config.CreateProduct{
		Common: config.Common{LogLevel: slog.LevelWarn, MetricsNamespace: "idemlambda",
			Tracing: config.Tracing{Exporter: config.ExporterNone, Propagators: []string{"tracecontext", "baggage"}}},
		ProductsTable: "p", OutboxTable: "o", EventSource: "idemlambda.products",
		Idempotency:  config.Idempotency{Table: "i", Retention: 2 * time.Hour, Mode: config.ModeReserve, CacheSize: 1000},
		CallersTable: "c", Limit: config.Limit{Creates: 100, Window: 10 * time.Second},
		Global: config.Global{Kind: config.KindRegional},
	}, c)

	vals["IDEMPOTENCY_MODE"], vals["IDEMPOTENCY_CACHE_SIZE"] = "transact", "0"
	vals["CALLER_LIMIT"], vals["CALLER_LIMIT_WINDOW"] = "0", "1m"
	c, err = config.LoadCreateProduct(env(vals))
	require.NoError(t, err)
	assert.Equal(t, config.ModeTransact, c.Idempotency.Mode)
	assert.Zero(t, c.Idempotency.CacheSize)
	assert.Equal(t, config.Limit{Creates: 0, Window: time.Minute}, c.Limit, "0 turns the limit off")
}

// A bad value stops the function at start, naming every problem.
func TestLoadFailsWithEveryProblemNamed(t *testing.T) {
	t.Parallel()
	_, err := config.LoadCreateProduct(env(map[string]string{
		"IDEMPOTENCY_RETENTION": "-1h", "LOG_LEVEL": "loud", "IDEMPOTENCY_MODE": "fast", "IDEMPOTENCY_CACHE_SIZE": "-1",
		"METRICS_NAMESPACE": "AWS/Lambda", "CALLER_LIMIT": "-5", "CALLER_LIMIT_WINDOW": "1500ms",
	}))
	require.ErrorIs(t, err, config.ErrInvalid)
	for _, want := range []string{
		"createproduct: ",
		"PRODUCTS_TABLE is required", "OUTBOX_TABLE is required", "IDEMPOTENCY_TABLE is required", "CALLERS_TABLE is required",
		`CALLER_LIMIT="-5": not a whole number from 0 to 1000000`,
		`CALLER_LIMIT_WINDOW="1500ms": not a duration of whole seconds`,
		`IDEMPOTENCY_RETENTION="-1h": not a positive duration`,
		`LOG_LEVEL="loud": want debug, info, warn or error`,
		`IDEMPOTENCY_MODE="fast": unknown mode "fast": want "reserve" or "transact"`,
		`IDEMPOTENCY_CACHE_SIZE="-1": not a whole number from 0 to 1000000`,
		`METRICS_NAMESPACE="AWS/Lambda": want 1 to 255 characters, not starting with AWS/ or a colon`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	// getproduct reads only its own table: the others may be absent.
	g, err := config.LoadGetProduct(env(map[string]string{"PRODUCTS_TABLE": "p"}))
	require.NoError(t, err)
	assert.Equal(t, "p", g.ProductsTable)
	_, err = config.LoadOutboxRelay(env(nil))
	assert.ErrorContains(t, err, "outboxrelay: config: invalid environment: EVENT_BUS_NAME is required")

	// sellerstats claims in transact mode, whatever the environment says.
	s, err := config.LoadSellerStats(env(map[string]string{"SELLERS_TABLE": "s", "IDEMPOTENCY_TABLE": "i", "IDEMPOTENCY_MODE": "reserve"}))
	require.NoError(t, err)
	assert.Equal(t, config.ModeTransact, s.Idempotency.Mode)
	assert.Equal(t, "idemlambda.products", s.EventSource)
}

// A global table's settings are read together and checked against each
// other: the kind, its Regions (this one among them) and, on MREC, the
// Region createproduct claims its keys in.
func TestLoadGlobalTableSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"PRODUCTS_TABLE": "p", "IDEMPOTENCY_TABLE": "i", "OUTBOX_TABLE": "o", "CALLERS_TABLE": "c", "SELLERS_TABLE": "s", "AWS_REGION": "eu-west-1"}
	with := func(kv ...string) func(string) string {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return env(m)
	}
	c, err := config.LoadCreateProduct(with("IDEMPOTENCY_TABLE_KIND", "MREC", "REPLICA_REGIONS", "us-east-1, eu-west-1", "HOME_REGION", "us-east-1"))
	require.NoError(t, err)
	assert.Equal(t, config.Global{Kind: config.KindMREC, Regions: []string{"us-east-1", "eu-west-1"}, Home: "us-east-1"}, c.Global)
	s, err := config.LoadSellerStats(with("IDEMPOTENCY_TABLE_KIND", "mrsc", "REPLICA_REGIONS", "us-east-1,eu-west-1,us-west-2"))
	require.NoError(t, err)
	assert.Equal(t, config.Global{Kind: config.KindMRSC, Regions: []string{"us-east-1", "eu-west-1", "us-west-2"}}, s.Global)

	for vars, want := range map[[6]string]string{
		{"IDEMPOTENCY_TABLE_KIND", "mrec", "REPLICA_REGIONS", "us-east-1,eu-west-1"}:                             "HOME_REGION is required with IDEMPOTENCY_TABLE_KIND=mrec",
		{"IDEMPOTENCY_TABLE_KIND", "mrec", "REPLICA_REGIONS", "us-east-1,eu-west-1", "HOME_REGION", "us-west-2"}: `HOME_REGION="us-west-2" is not one of REPLICA_REGIONS`,
		{"IDEMPOTENCY_TABLE_KIND", "mrsc", "REPLICA_REGIONS", "us-east-1,eu-west-1", "HOME_REGION", "us-east-1"}: "a home Region is for IDEMPOTENCY_TABLE_KIND=mrec only",
		{"IDEMPOTENCY_TABLE_KIND", "mrsc", "REPLICA_REGIONS", "us-east-1,us-west-2"}:                             "does not list this function's Region eu-west-1",
		{"IDEMPOTENCY_TABLE_KIND", "mrsc", "REPLICA_REGIONS", "eu-west-1"}:                                       "needs REPLICA_REGIONS, two Regions or more",
		{"IDEMPOTENCY_TABLE_KIND", "regional", "REPLICA_REGIONS", "eu-west-1,us-east-1"}:                         "a regional table has no other Region",
		{"IDEMPOTENCY_TABLE_KIND", "mrsc", "REPLICA_REGIONS", "eu-west-1,us-east-1,eu-west-1"}:                   `lists "eu-west-1" twice`,
		{"IDEMPOTENCY_TABLE_KIND", "global"}:                                                                     `IDEMPOTENCY_TABLE_KIND="global": want regional, mrec or mrsc`,
	} {
		_, err := config.LoadCreateProduct(with(vars[:]...))
		require.ErrorIs(t, err, config.ErrInvalid, vars)
		assert.ErrorContains(t, err, want)
	}
}

// The sweeper reads the three tables it sweeps and their kind; an mrsc
// table needs its Regions, as the other functions' do.
func TestLoadSweeper(t *testing.T) {
	t.Parallel()
	vals := map[string]string{"IDEMPOTENCY_TABLE": "i", "OUTBOX_TABLE": "o", "CALLERS_TABLE": "c"}
	c, err := config.LoadSweeper(env(vals))
	require.NoError(t, err)
	assert.Equal(t, "i", c.IdempotencyTable)
	assert.Equal(t, "o", c.OutboxTable)
	assert.Equal(t, "c", c.CallersTable)
	assert.Equal(t, config.Global{Kind: config.KindRegional}, c.Global)

	vals["IDEMPOTENCY_TABLE_KIND"] = "mrsc"
	_, err = config.LoadSweeper(env(vals))
	require.ErrorIs(t, err, config.ErrInvalid)
	assert.ErrorContains(t, err, "REPLICA_REGIONS")
	vals["REPLICA_REGIONS"], vals["AWS_REGION"] = "us-east-1,us-east-2,us-west-2", "us-east-2"
	c, err = config.LoadSweeper(env(vals))
	require.NoError(t, err)
	assert.Equal(t, config.Global{Kind: config.KindMRSC, Regions: []string{"us-east-1", "us-east-2", "us-west-2"}}, c.Global)

	delete(vals, "CALLERS_TABLE")
	_, err = config.LoadSweeper(env(vals))
	assert.ErrorContains(t, err, "CALLERS_TABLE is required")
}

// Functions lists what each loader reads: load with a getenv that records
// the names asked for and compare.
func TestFunctionsListWhatTheLoadersRead(t *testing.T) {
	t.Parallel()
	loaders := map[string]func(func(string) string) error{
		"createproduct": func(g func(string) string) error { _, err := config.LoadCreateProduct(g); return err },
		"getproduct":    func(g func(string) string) error { _, err := config.LoadGetProduct(g); return err },
		"outboxrelay":   func(g func(string) string) error { _, err := config.LoadOutboxRelay(g); return err },
		"sellerstats":   func(g func(string) string) error { _, err := config.LoadSellerStats(g); return err },
		"getseller":     func(g func(string) string) error { _, err := config.LoadGetSeller(g); return err },
		"sweeper":       func(g func(string) string) error { _, err := config.LoadSweeper(g); return err },
	}
	require.Len(t, config.Functions(), len(loaders))
	for _, fn := range config.Functions() {
		asked := map[string]bool{}
		_ = loaders[fn.Name](func(k string) string { asked[k] = true; return "" })
		listed := map[string]bool{}
		for _, v := range slices.Concat(fn.Vars, fn.SDKVars, fn.LambdaVars) {
			assert.False(t, listed[v.Name], "%s lists %s twice", fn.Name, v.Name)
			listed[v.Name] = true
			assert.NotEmpty(t, v.Doc, v.Name)
		}
		assert.Equal(t, asked, listed, fn.Name)
		assert.True(t, listed["LOG_LEVEL"], fn.Name)
		assert.True(t, listed["METRICS_NAMESPACE"], fn.Name)
	}
}

// OpenTelemetry's variables: nothing set exports nothing; an endpoint
// alone turns OTLP on; otlp alone sends to the specification's default
// endpoint; console needs no endpoint; the propagators are a list.
func TestLoadTracing(t *testing.T) {
	t.Parallel()
	load := func(vals map[string]string) (config.Tracing, error) {
		vals["PRODUCTS_TABLE"] = "p"
		g, err := config.LoadGetProduct(env(vals))
		return g.Tracing, err
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want config.Tracing
	}{
		"nothing": {map[string]string{}, config.Tracing{Exporter: config.ExporterNone, Propagators: []string{"tracecontext", "baggage"}}},
		"endpoint alone": {map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			config.Tracing{Exporter: config.ExporterOTLP, Endpoint: "http://collector:4318", Propagators: []string{"tracecontext", "baggage"}}},
		"otlp alone": {map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_PROPAGATORS": "xray"},
			config.Tracing{Exporter: config.ExporterOTLP, Endpoint: "http://localhost:4318", Propagators: []string{"xray"}}},
		"console, named": {map[string]string{"OTEL_TRACES_EXPORTER": " console ", "OTEL_SERVICE_NAME": "shop-getproduct", "OTEL_PROPAGATORS": "none"},
			config.Tracing{ServiceName: "shop-getproduct", Exporter: config.ExporterConsole}},
		"none wins over an endpoint": {map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_PROPAGATORS": "xray, tracecontext,xray"},
			config.Tracing{Exporter: config.ExporterNone, Propagators: []string{"xray", "tracecontext"}}},
	} {
		got, err := load(tc.env)
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, got, name)
	}
	for bad, want := range map[string]string{
		"OTEL_TRACES_EXPORTER=jaeger":                `OTEL_TRACES_EXPORTER="jaeger": want otlp, console or none`,
		"OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318": `OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318": want an http or https URL`,
		"OTEL_EXPORTER_OTLP_ENDPOINT=grpc://c:4317":  `want an http or https URL`,
		"OTEL_PROPAGATORS=b3":                        `OTEL_PROPAGATORS="b3": "b3" is not one of tracecontext, baggage, xray, none`,
		"OTEL_PROPAGATORS=none,xray":                 `"none" stands alone`,
	} {
		k, v, _ := strings.Cut(bad, "=")
		_, err := load(map[string]string{k: v})
		assert.ErrorIs(t, err, config.ErrInvalid, bad)
		assert.ErrorContains(t, err, want, bad)
	}
}

func TestMetricsNamespace(t *testing.T) {
	t.Parallel()
	g, err := config.LoadGetProduct(env(map[string]string{"PRODUCTS_TABLE": "p", "METRICS_NAMESPACE": "idemlambda/prod-eu"}))
	require.NoError(t, err)
	assert.Equal(t, "idemlambda/prod-eu", g.MetricsNamespace)
	for _, bad := range []string{"emoji ✓", "a{b}", ":x", strings.Repeat("n", 256)} {
		_, err := config.LoadGetProduct(env(map[string]string{"PRODUCTS_TABLE": "p", "METRICS_NAMESPACE": bad}))
		assert.ErrorContains(t, err, "METRICS_NAMESPACE=", bad)
	}
}

func TestOverlay(t *testing.T) {
	t.Parallel()
	g := config.Overlay(env(map[string]string{"A": "env", "B": " "}), map[string]string{"A": "default", "B": "b", "C": "c"})
	assert.Equal(t, "env", g("A"), "the environment wins")
	assert.Equal(t, "b", g("B"), "blank counts as unset")
	assert.Equal(t, "c", g("C"))
	assert.Empty(t, g("D"))
}

func TestSDKVarsAreTheSDKsEndpointVariables(t *testing.T) {
	t.Parallel()
	// Each function's service variable, then the two every service reads.
	shared := []config.Var{config.EndpointURL, config.IgnoreConfiguredEndpointURLs}
	want := map[string][]config.Var{
		"createproduct": append([]config.Var{config.EndpointDynamoDB}, shared...),
		"getproduct":    append([]config.Var{config.EndpointDynamoDB}, shared...),
		"outboxrelay":   append([]config.Var{config.EndpointEventBridge}, shared...),
		"sellerstats":   append([]config.Var{config.EndpointDynamoDB}, shared...),
		"getseller":     append([]config.Var{config.EndpointDynamoDB}, shared...),
		"sweeper":       append([]config.Var{config.EndpointDynamoDB}, shared...),
	}
	for _, f := range config.Functions() {
		for _, v := range f.SDKVars {
			assert.Regexp(t, `^AWS_(IGNORE_CONFIGURED_)?ENDPOINT_URLS?(_[A-Z_]+)?$`, v.Name, f.Name)
			assert.NotEmpty(t, v.Doc, v.Name)
			for _, own := range f.Vars {
				assert.NotEqual(t, own.Name, v.Name, "%s lists %s as its own and the SDK's", f.Name, v.Name)
			}
		}
		assert.Equal(t, want[f.Name], f.SDKVars, f.Name)
	}
}

// Every loader resolves its client's endpoint as the SDK's loader does:
// the service's variable, else AWS_ENDPOINT_URL (what an emulator such as
// MiniStack injects), neither under AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true.
func TestLoadersResolveTheEndpointAsTheSDK(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"PRODUCTS_TABLE": "p", "IDEMPOTENCY_TABLE": "i", "OUTBOX_TABLE": "o", "SELLERS_TABLE": "s", "CALLERS_TABLE": "c", "EVENT_BUS_NAME": "b",
	}
	with := func(kv ...string) func(string) string {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return env(m)
	}
	endpoints := map[string]func(getenv func(string) string) (string, error){
		"createproduct": func(g func(string) string) (string, error) {
			c, err := config.LoadCreateProduct(g)
			return c.AWS.Endpoint, err
		},
		"getproduct": func(g func(string) string) (string, error) {
			c, err := config.LoadGetProduct(g)
			return c.AWS.Endpoint, err
		},
		"outboxrelay": func(g func(string) string) (string, error) {
			c, err := config.LoadOutboxRelay(g)
			return c.AWS.Endpoint, err
		},
		"sellerstats": func(g func(string) string) (string, error) {
			c, err := config.LoadSellerStats(g)
			return c.AWS.Endpoint, err
		},
		"getseller": func(g func(string) string) (string, error) {
			c, err := config.LoadGetSeller(g)
			return c.AWS.Endpoint, err
		},
		"sweeper": func(g func(string) string) (string, error) {
			c, err := config.LoadSweeper(g)
			return c.AWS.Endpoint, err
		},
	}
	require.Len(t, endpoints, len(config.Functions()))
	for _, f := range config.Functions() {
		load := endpoints[f.Name]
		require.NotNil(t, load, f.Name)
		own := f.SDKVars[0].Name
		for _, c := range []struct {
			kv   []string
			want string
		}{
			{nil, ""},
			{[]string{"AWS_ENDPOINT_URL", "http://emulator:4566"}, "http://emulator:4566"},
			{[]string{own, "http://own:1"}, "http://own:1"},
			{[]string{own, "http://own:1", "AWS_ENDPOINT_URL", "http://emulator:4566"}, "http://own:1"},
			{[]string{own, "", "AWS_ENDPOINT_URL", "http://emulator:4566"}, "http://emulator:4566"},
			{[]string{own, "http://own:1", "AWS_ENDPOINT_URL", "http://emulator:4566", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "True"}, ""},
			{[]string{"AWS_ENDPOINT_URL", "http://emulator:4566", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "false"}, "http://emulator:4566"},
		} {
			got, err := load(with(c.kv...))
			require.NoError(t, err, "%s %v", f.Name, c.kv)
			assert.Equal(t, c.want, got, "%s %v", f.Name, c.kv)
		}
		_, err := load(with("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "1"))
		assert.ErrorIs(t, err, config.ErrInvalid, f.Name)
		assert.ErrorContains(t, err, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", f.Name)
	}
}

// An MRSC table has exactly three members: three replicas, or two and a
// witness. A REPLICA_REGIONS of four or more cannot be one, and the
// function must say so at start, not run on a list no table matches.
func TestMRSCListsAtMostThreeRegions(t *testing.T) {
	t.Parallel()
	vals := map[string]string{
		"IDEMPOTENCY_TABLE": "i", "OUTBOX_TABLE": "o", "CALLERS_TABLE": "c", "SELLERS_TABLE": "s", "PRODUCTS_TABLE": "p",
		"AWS_REGION": "us-east-1", "IDEMPOTENCY_TABLE_KIND": "mrsc", "REPLICA_REGIONS": "us-east-1,us-east-2,us-west-2,us-west-1",
	}
	_, err := config.LoadSellerStats(env(vals))
	require.ErrorIs(t, err, config.ErrInvalid)
	assert.ErrorContains(t, err, "three Regions at most")
	_, err = config.LoadCreateProduct(env(vals))
	assert.ErrorContains(t, err, "three Regions at most")
	_, err = config.LoadSweeper(env(vals))
	assert.ErrorContains(t, err, "three Regions at most")

	vals["IDEMPOTENCY_TABLE_KIND"], vals["HOME_REGION"] = "mrec", "us-east-1" // MREC takes more
	_, err = config.LoadCreateProduct(env(vals))
	require.NoError(t, err)
}
