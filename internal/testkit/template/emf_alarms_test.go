package template_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/app/getproduct"
	"github.com/idemlambda/idemlambda/internal/app/getseller"
	"github.com/idemlambda/idemlambda/internal/app/outboxrelay"
	"github.com/idemlambda/idemlambda/internal/app/sellerstats"
	"github.com/idemlambda/idemlambda/internal/app/sweeper"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/outbox/outboxitem"
	"github.com/idemlambda/idemlambda/internal/streams"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// emitted is what the functions' metrics lines hold, as the code writes
// them: per function, the metric names, the dimension sets (names, in
// order, joined by ","), and the lines themselves.
type emitted struct {
	metrics map[string]map[string]bool
	sets    map[string]map[string]bool
	lines   map[string][]map[string]any
}

// emitMetrics runs every function's real handler, assembled as its main
// assembles it, on a small scenario against the embedded store, and
// collects the EMF lines they write (each checked against the
// specification by logbuf): createproduct executes, replays, rejects and
// answers a 500 (a missing table);
// getproduct and getseller serve; the relay publishes one record, drops
// two for good and fails one; the consumer counts the product createproduct
// wrote to the outbox and meets one poison message; the sweeper deletes
// an outbox item past its expiry.
func emitMetrics(t *testing.T) emitted {
	t.Helper()
	ctx := context.Background()
	env := ddbtest.New(t)
	out := &logbuf.Buffer{}
	common := config.Common{LogLevel: slog.LevelError, MetricsNamespace: "idemlambda/drift"}
	idemCfg := config.Idempotency{Table: env.Tables.Idempotency, Retention: time.Hour, Mode: config.ModeReserve}

	// A token for every seller: its caller needs no grant.
	token := &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
		Claims: map[string]string{"iss": "https://issuer.example", "sub": "drift", "seller_ids": "*"},
	}}
	limit := config.Limit{Creates: 100, Window: 10 * time.Second}
	create, err := createproduct.New(env.Client, config.CreateProduct{Common: common, ProductsTable: env.Tables.Products,
		OutboxTable: env.Tables.Outbox, EventSource: "idemlambda.products", Idempotency: idemCfg,
		CallersTable: env.Tables.Callers, Limit: limit}, app.Runtime{Out: out})
	must(t, err)
	post := events.APIGatewayV2HTTPRequest{
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": `"drift-1"`},
		Body:    `{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/products"}, Authorizer: token},
	}
	first, err := create(ctx, post)
	must(t, err)
	if first.StatusCode != 201 {
		t.Fatalf("POST /products = %d %s", first.StatusCode, first.Body)
	}
	_, err = create(ctx, post) // replayed
	must(t, err)
	bad := post
	bad.Headers = map[string]string{"content-type": "text/plain"}
	_, err = create(ctx, bad) // rejected
	must(t, err)
	broken, err := createproduct.New(env.Client, config.CreateProduct{Common: common, ProductsTable: "no-such-table",
		OutboxTable: env.Tables.Outbox, EventSource: "idemlambda.products", Idempotency: idemCfg,
		CallersTable: env.Tables.Callers, Limit: limit}, app.Runtime{Out: out})
	must(t, err)
	fault := post
	fault.Headers = map[string]string{"content-type": "application/json", "idempotency-key": `"drift-500"`}
	resp500, err := broken(ctx, fault) // a 500: the key released
	must(t, err)
	if resp500.StatusCode != 500 {
		t.Fatalf("POST /products on a missing table = %d, want 500 (the scenario no longer holds)", resp500.StatusCode)
	}

	get, err := getproduct.New(env.Client, config.GetProduct{Common: common, ProductsTable: env.Tables.Products}, app.Runtime{Out: out})
	must(t, err)
	id := strings.TrimPrefix(first.Headers["Location"], "/products/")
	_, err = get(ctx, events.APIGatewayV2HTTPRequest{PathParameters: map[string]string{"id": id}})
	must(t, err)
	seller, err := getseller.New(env.Client, config.GetSeller{Common: common, SellersTable: env.Tables.Sellers}, app.Runtime{Out: out})
	must(t, err)
	_, err = seller(ctx, events.APIGatewayV2HTTPRequest{PathParameters: map[string]string{"id": "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: token}})
	must(t, err)

	relayHandler, err := outboxrelay.New(refusingPublisher{t}, config.OutboxRelay{Common: common}, app.Runtime{Out: out})
	must(t, err)
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		relayInsert(t, 0), relayInsert(t, 1), relayInsert(t, 2), relayInsert(t, 3),
	}}
	ev.Records[1].Change.NewImage = nil // undecodable
	resp, err := relayHandler.Handle(ctx, ev)
	must(t, err)
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("relay BatchItemFailures = %+v, want the one retried record (the scenario no longer holds)", resp.BatchItemFailures)
	}

	consumer, err := sellerstats.New(env.Client, config.SellerStats{Common: common, SellersTable: env.Tables.Sellers,
		EventSource: "idemlambda.products", Idempotency: config.Idempotency{Table: env.Tables.Idempotency, Retention: time.Hour, Mode: config.ModeTransact}}, app.Runtime{Out: out})
	must(t, err)
	items, err := env.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(env.Tables.Outbox)})
	must(t, err)
	if len(items.Items) != 1 {
		t.Fatalf("outbox holds %d items, want the one product's event", len(items.Items))
	}
	created, err := outboxitem.Decode(items.Items[0])
	must(t, err)
	body, err := eventbus.EventEnvelope(created)
	must(t, err)
	_, err = consumer.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
		eventbus.Message("m-1", string(body), 1), eventbus.Message("m-2", `{"detail-type":"ProductCreated"}`, 1),
	}})
	must(t, err)

	// The sweeper deletes an outbox item past its expiry.
	_, err = env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Outbox), Item: map[string]types.AttributeValue{
		outbox.AttrAggregateID: &types.AttributeValueMemberS{Value: "gone"}, outbox.AttrEventID: &types.AttributeValueMemberS{Value: "gone"},
		outbox.AttrExpiresAt: &types.AttributeValueMemberN{Value: "1"},
	}})
	must(t, err)
	sweep, err := sweeper.New(env.Client, config.Sweeper{Common: common, IdempotencyTable: env.Tables.Idempotency,
		OutboxTable: env.Tables.Outbox, CallersTable: env.Tables.Callers, Global: config.Global{Kind: config.KindRegional}}, app.Runtime{Out: out})
	must(t, err)
	_, err = sweep.Handle(ctx)
	must(t, err)

	e := emitted{metrics: map[string]map[string]bool{}, sets: map[string]map[string]bool{}, lines: map[string][]map[string]any{}}
	for _, l := range out.Metrics(t) {
		fn, _ := l["Function"].(string)
		if e.metrics[fn] == nil {
			e.metrics[fn], e.sets[fn] = map[string]bool{}, map[string]bool{}
		}
		e.lines[fn] = append(e.lines[fn], l)
		d := l["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if d["Namespace"] != common.MetricsNamespace {
			t.Errorf("%s writes to namespace %v, configured %s", fn, d["Namespace"], common.MetricsNamespace)
		}
		for _, m := range d["Metrics"].([]any) {
			e.metrics[fn][m.(map[string]any)["Name"].(string)] = true
		}
		for _, set := range d["Dimensions"].([]any) {
			var names []string
			for _, n := range set.([]any) {
				names = append(names, n.(string))
			}
			e.sets[fn][strings.Join(names, ",")] = true
		}
	}
	for _, f := range config.Functions() {
		if len(e.lines[f.Name]) == 0 {
			t.Errorf("%s wrote no metrics line in the scenario", f.Name)
		}
	}
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sum adds a metric over a function's lines, those with outcome (if any).
func (e emitted) sum(fn, metric, outcome string) float64 {
	total := 0.0
	for _, l := range e.lines[fn] {
		if outcome != "" && l[metrics.DimOutcome] != outcome {
			continue
		}
		v, _ := l[metric].(float64)
		total += v
	}
	return total
}

// watched is one metric an alarm reads.
type watched struct {
	alarm, query string
	namespace    any
	metric       string
	dims         []dimension
}

// emfAlarmMetrics returns every metric the stack's alarms read outside
// AWS's own namespaces, single-metric and metric-math alike.
func emfAlarmMetrics(t *testing.T, tpl *template.Template, all map[string]alarmProps) []watched {
	t.Helper()
	var out []watched
	own := func(ns any) bool { s, ok := ns.(string); return !ok || !strings.HasPrefix(s, "AWS/") }
	// What the template's log metric filters write is theirs, not EMF.
	filtered := func(ns any, metric string) bool {
		for _, id := range tpl.OfType("AWS::Logs::MetricFilter") {
			for _, m := range asList(tpl.Resources[id].Properties["MetricTransformations"]) {
				if reflect.DeepEqual(template.Path(m, "MetricNamespace"), ns) && template.Path(m, "MetricName") == metric {
					return true
				}
			}
		}
		return false
	}
	for id, a := range all {
		if a.MetricName != "" && own(a.Namespace) && !filtered(a.Namespace, a.MetricName) {
			out = append(out, watched{id, "", a.Namespace, a.MetricName, a.Dimensions})
		}
		for _, q := range a.Metrics {
			if q.MetricStat != nil && own(q.MetricStat.Metric.Namespace) {
				m := q.MetricStat.Metric
				out = append(out, watched{id, q.ID, m.Namespace, m.MetricName, m.Dimensions})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].alarm+out[i].query < out[j].alarm+out[j].query })
	return out
}

// Every alarm on the functions' own metrics reads the namespace the
// functions are given (METRICS_NAMESPACE), a metric the named function
// writes, under a dimension set it writes, with an Outcome the code can
// report: a renamed metric or dimension fails here, not silently in
// CloudWatch.
func TestEMFAlarmsWatchWhatTheFunctionsWrite(t *testing.T) {
	tpl := load(t)
	ns := template.Path(tpl.Globals, "Function", "Environment", "Variables", config.MetricsNamespace.Name)
	if ns == nil {
		t.Fatalf("Globals set no %s", config.MetricsNamespace.Name)
	}
	if !reflect.DeepEqual(ns, map[string]any{"Fn::Sub": "idemlambda/${AWS::StackName}"}) {
		t.Errorf("Globals %s = %v, want !Sub idemlambda/${AWS::StackName} (one namespace per stack)", config.MetricsNamespace.Name, ns)
	}
	e := emitMetrics(t)
	outcomes := []string{metrics.OutcomeServed}
	outcomes = append(outcomes, idemOutcomes(t)...)
	ws := emfAlarmMetrics(t, tpl, alarms(t, tpl))
	if len(ws) == 0 {
		t.Fatal("no alarm reads the functions' EMF metrics")
	}
	for _, w := range ws {
		where := w.alarm
		if w.query != "" {
			where += " query " + w.query
		}
		if !reflect.DeepEqual(w.namespace, ns) {
			t.Errorf("%s reads namespace %v; the functions write to %v", where, w.namespace, ns)
		}
		var names []string
		fn, outcome := "", ""
		for _, d := range w.dims {
			names = append(names, d.Name)
			v, _ := d.Value.(string)
			switch d.Name {
			case metrics.DimFunction:
				fn = v
			case metrics.DimOutcome:
				outcome = v
			}
		}
		if e.metrics[fn] == nil {
			t.Errorf("%s: Function=%q writes no metrics (functions: %v)", where, fn, sortedKeys(e.metrics))
			continue
		}
		if !e.metrics[fn][w.metric] {
			t.Errorf("%s reads %s, which %s never writes (it writes %v)", where, w.metric, fn, sortedKeys(e.metrics[fn]))
		}
		if set := strings.Join(names, ","); !e.sets[fn][set] {
			t.Errorf("%s reads dimensions [%s]; %s publishes under %v only (CloudWatch matches the set exactly)", where, set, fn, sortedKeys(e.sets[fn]))
		}
		if outcome != "" && !slices.Contains(outcomes, outcome) {
			t.Errorf("%s: Outcome=%q is no outcome the code reports %v", where, outcome, outcomes)
		}
	}
}

// The alarms an operator needs exist, each firing on the first
// occurrence, and the scenario shows each fires for what it should: the
// relay's two records dropped for good (not the retried one), the
// consumer's one poison message (not the counted one).
func TestEMFAlarmsCoverWhatAnOperatorActsOn(t *testing.T) {
	tpl := load(t)
	all := alarms(t, tpl)
	type want struct{ fn, metric, outcome string }
	firing := map[want]bool{}
	for _, a := range all {
		if a.MetricName == "" || !a.firesOnFirst() {
			continue
		}
		w := want{metric: a.MetricName}
		for _, d := range a.Dimensions {
			v, _ := d.Value.(string)
			switch d.Name {
			case metrics.DimFunction:
				w.fn = v
			case metrics.DimOutcome:
				w.outcome = v
			}
		}
		firing[w] = true
	}
	required := []want{
		{config.NameCreateProduct, metrics.Requests, string(idem.OutcomeLeaseLost)},
		{config.NameOutboxRelay, metrics.Dropped, ""},
		{config.NameSellerStats, metrics.Poison, ""},
	}
	apis := apiFunctions(tpl)
	if len(apis) < 3 {
		t.Fatalf("HttpApi functions %v: want createproduct, getproduct, getseller at least", apis)
	}
	for _, id := range apis { // every route's 500s
		required = append(required, want{strings.ToLower(strings.TrimSuffix(id, "Function")), metrics.Faults, ""})
	}
	for _, w := range required {
		if !firing[w] {
			t.Errorf("no alarm (Sum > 0) on %s Function=%s%s", w.metric, w.fn, map[bool]string{true: " Outcome=" + w.outcome}[w.outcome != ""])
		}
	}

	// A takeover rate: takeovers over all of createproduct's requests.
	var rate bool
	for _, a := range all {
		var takeovers, requests bool
		for _, q := range a.Metrics {
			if q.MetricStat == nil || q.MetricStat.Metric.MetricName != metrics.Requests || q.MetricStat.Stat != "Sum" {
				continue
			}
			d := alarmProps{Dimensions: q.MetricStat.Metric.Dimensions}.dims()
			if d[metrics.DimFunction] == config.NameCreateProduct {
				takeovers = takeovers || d[metrics.DimOutcome] == string(idem.OutcomeTakeover)
				requests = requests || len(d) == 1
			}
		}
		rate = rate || (takeovers && requests)
	}
	if !rate {
		t.Error("no metric-math alarm on createproduct's takeover rate (Requests Outcome=takeover over Requests by Function)")
	}

	e := emitMetrics(t)
	for _, c := range []struct {
		fn, metric, outcome string
		want                float64
	}{
		{config.NameOutboxRelay, metrics.Dropped, "", 2},
		{config.NameOutboxRelay, metrics.Failed, "", 1},
		{config.NameOutboxRelay, metrics.Published, "", 1},
		{config.NameSellerStats, metrics.Poison, "", 1},
		{config.NameSellerStats, metrics.Applied, "", 1},
		{config.NameCreateProduct, metrics.Requests, string(idem.OutcomeExecuted), 1},
		{config.NameCreateProduct, metrics.Requests, string(idem.OutcomeReplayed), 1},
		{config.NameCreateProduct, metrics.Requests, string(idem.OutcomeRejected), 1},
		{config.NameCreateProduct, metrics.Faults, "", 1},
		{config.NameCreateProduct, metrics.Faults, string(idem.OutcomeReleased), 1}, // the 500 released its key
		{config.NameCreateProduct, metrics.Faults, string(idem.OutcomeExecuted), 0},
		{config.NameGetProduct, metrics.Requests, metrics.OutcomeServed, 1},
		{config.NameGetSeller, metrics.Requests, metrics.OutcomeServed, 1},
		{config.NameSweeper, metrics.Deleted, "", 1},
		{config.NameSweeper, metrics.Failed, "", 0},
	} {
		if got := e.sum(c.fn, c.metric, c.outcome); got != c.want {
			t.Errorf("%s %s%s = %v in the scenario, want %v\nlines: %v", c.fn, c.metric,
				map[bool]string{true: " Outcome=" + c.outcome}[c.outcome != ""], got, c.want, e.lines[c.fn])
		}
	}
}

// The functions' behaviour is alarmed through their metrics, not through
// filters on log text, which a reworded message silences. The one filter
// allowed reads the API access log's JSON, whose format the template
// itself sets: what HTTP APIs publish no metric for (429s).
func TestNoLogMetricFilters(t *testing.T) {
	tpl := load(t)
	for _, id := range tpl.OfType("AWS::Logs::MetricFilter") {
		f := tpl.Resources[id].Properties
		if ref, _ := template.RefTarget(f["LogGroupName"]); ref != "ApiAccessLogGroup" {
			t.Errorf("log metric filter %s on %v: alarm on the functions' EMF metrics instead (internal/metrics)", id, f["LogGroupName"])
		}
		if p, _ := f["FilterPattern"].(string); !strings.HasPrefix(p, "{ $.") {
			t.Errorf("log metric filter %s pattern %q: match the access log's JSON fields, not its text", id, p)
		}
	}
}

// refusingPublisher publishes the first of three events, refuses the second
// for good (too large) and fails on the third, which is then retried.
type refusingPublisher struct{ t *testing.T }

func (p refusingPublisher) Publish(_ context.Context, es []outbox.Event) (outbox.Result, error) {
	if len(es) != 3 {
		p.t.Errorf("Publish got %d events, want 3", len(es))
		return outbox.Result{}, &outbox.PublishError{Index: 0, Err: outbox.ErrCallFailed}
	}
	return outbox.Result{Published: 1, Rejected: []outbox.Rejection{{Index: 1, Err: outbox.ErrTooLarge}}},
		&outbox.PublishError{Index: 2, Err: outbox.ErrCallFailed}
}

func relayInsert(t *testing.T, i int) events.DynamoDBEventRecord {
	t.Helper()
	e, err := outbox.NewEvent("idemlambda.products", "ProductCreated", fmt.Sprintf("p-%d", i),
		[]byte(fmt.Sprintf(`{"id":"p-%d","name":"Widget","price_cents":999}`, i)), time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC))
	must(t, err)
	item, err := outboxitem.Encode(e, outbox.DefaultRetention)
	must(t, err)
	image, err := streams.Image(item)
	must(t, err)
	return events.DynamoDBEventRecord{
		EventName: "INSERT", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			Keys:           map[string]events.DynamoDBAttributeValue{"aggregate_id": image["aggregate_id"], "event_id": image["event_id"]},
			NewImage:       image,
			SequenceNumber: fmt.Sprintf("%021d", 100+i),
		},
	}
}

// idemOutcomes reads the values of pkg/idem's Outcome constants from its
// source, so an outcome added there is one this test asks an alarm about.
func idemOutcomes(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "pkg", "idem")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Outcome" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						t.Fatalf("an Outcome constant that is not a literal: %v", v)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, s)
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d Outcome constants in pkg/idem (%v); the parse is wrong", len(out), out)
	}
	return out
}
