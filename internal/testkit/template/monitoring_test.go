package template_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/relay"
	"github.com/idemlambda/idemlambda/internal/streams"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// The monitoring half of the drift test: the alarms exist, notify through
// AlarmTopicArn, watch metrics that exist (HTTP API metric names, the
// functions' own log groups), and the log metric filters match the lines the
// code actually writes (config.Common.Logger, the relay's drop messages), so a renamed
// message or a changed log format fails here instead of silencing an alarm.

type dimension struct {
	Name  string
	Value any
}

type alarmProps struct {
	Namespace          any
	MetricName         string
	Dimensions         []dimension
	Metrics            any
	Statistic          string
	Period             int
	EvaluationPeriods  int
	Threshold          *float64
	ComparisonOperator string
	TreatMissingData   string
	AlarmActions       any
	OKActions          any
}

type metricTransformation struct {
	MetricNamespace any
	MetricName      string
	MetricValue     string
}

type metricFilter struct {
	id                    string
	LogGroupName          any
	FilterPattern         string
	MetricTransformations []metricTransformation
}

func alarms(t *testing.T, tpl *template.Template) map[string]alarmProps {
	t.Helper()
	out := map[string]alarmProps{}
	for _, id := range tpl.OfType("AWS::CloudWatch::Alarm") {
		var a alarmProps
		if err := template.Decode(tpl.Resources[id].Properties, &a); err != nil {
			t.Fatalf("alarm %s: %v", id, err)
		}
		out[id] = a
	}
	return out
}

func metricFilters(t *testing.T, tpl *template.Template) []metricFilter {
	t.Helper()
	var out []metricFilter
	for _, id := range tpl.OfType("AWS::Logs::MetricFilter") {
		var f metricFilter
		if err := template.Decode(tpl.Resources[id].Properties, &f); err != nil {
			t.Fatalf("metric filter %s: %v", id, err)
		}
		f.id = id
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (a alarmProps) dims() map[string]any {
	m := map[string]any{}
	for _, d := range a.Dimensions {
		m[d.Name] = d.Value
	}
	return m
}

// firesOnFirst reports whether the alarm goes off on the first occurrence
// of what it counts: the Sum over a period above 0.
func (a alarmProps) firesOnFirst() bool {
	return a.Statistic == "Sum" && a.ComparisonOperator == "GreaterThanThreshold" &&
		a.Threshold != nil && *a.Threshold == 0
}

// alarmsOn returns the ids of the alarms on one metric (namespace compared
// as parsed, so a !Sub matches the same !Sub).
func alarmsOn(all map[string]alarmProps, namespace any, metric string) []string {
	var ids []string
	for id, a := range all {
		if a.MetricName == metric && reflect.DeepEqual(a.Namespace, namespace) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// logGroupOf returns the logical id of the log group a function logs to.
func logGroupOf(t *testing.T, tpl *template.Template, fnID string) string {
	t.Helper()
	ref, ok := template.RefTarget(template.Path(tpl.Resources[fnID].Properties, "LoggingConfig", "LogGroup"))
	if !ok || tpl.Resources[ref].Type != "AWS::Logs::LogGroup" {
		t.Fatalf("%s LoggingConfig.LogGroup = %v, want !Ref of an AWS::Logs::LogGroup of this template (filters need a known group)",
			fnID, template.Path(tpl.Resources[fnID].Properties, "LoggingConfig", "LogGroup"))
	}
	return ref
}

func filtersOn(all []metricFilter, logGroup string) []metricFilter {
	var out []metricFilter
	for _, f := range all {
		if ref, _ := template.RefTarget(f.LogGroupName); ref == logGroup {
			out = append(out, f)
		}
	}
	return out
}

func TestAlarmsNotifyTheAlarmTopic(t *testing.T) {
	tpl := load(t)
	if _, ok := tpl.Parameters["AlarmTopicArn"]; !ok {
		t.Fatal("no AlarmTopicArn parameter")
	}
	if _, ok := tpl.Conditions["HasAlarmTopic"]; !ok {
		t.Fatal("no HasAlarmTopic condition")
	}
	want := map[string]any{"Fn::If": []any{
		"HasAlarmTopic",
		[]any{map[string]any{"Ref": "AlarmTopicArn"}},
		map[string]any{"Ref": "AWS::NoValue"},
	}}
	all := alarms(t, tpl)
	if len(all) == 0 {
		t.Fatal("template.yaml has no alarms")
	}
	for id, a := range all {
		if !reflect.DeepEqual(a.AlarmActions, want) {
			t.Errorf("%s AlarmActions = %v, want !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]", id, a.AlarmActions)
		}
		if !reflect.DeepEqual(a.OKActions, want) {
			t.Errorf("%s OKActions = %v, want !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]", id, a.OKActions)
		}
		// Every alarm here counts failures or ages that have no data when
		// all is well (no requests, no error lines).
		if a.TreatMissingData != "notBreaching" {
			t.Errorf("%s TreatMissingData = %q, want notBreaching", id, a.TreatMissingData)
		}
		if a.Metrics != nil {
			t.Errorf("%s uses metric math; extend this test to check it", id)
		}
	}
}

func TestEveryFunctionHasAnErrorsAlarm(t *testing.T) {
	tpl := load(t)
	all := alarms(t, tpl)
	for fn, id := range functionIDs(t, tpl) {
		var found bool
		for _, aid := range alarmsOn(all, "AWS/Lambda", "Errors") {
			if ref, _ := template.RefTarget(all[aid].dims()["FunctionName"]); ref == id && all[aid].firesOnFirst() {
				found = true
			}
		}
		if !found {
			t.Errorf("%s (%s) has no AWS/Lambda Errors alarm (Sum > 0, FunctionName !Ref %s)", id, fn, id)
		}
	}
}

// httpAPIMetrics are the metrics HTTP APIs publish; 4XXError, 5XXError and
// the ApiName dimension are the REST API's and never match an HTTP API.
var httpAPIMetrics = []string{"4xx", "5xx", "Count", "Latency", "IntegrationLatency", "DataProcessed"}

func TestApiServerErrorsAlarm(t *testing.T) {
	tpl := load(t)
	apis := tpl.OfType("AWS::Serverless::HttpApi")
	if len(apis) != 1 {
		t.Fatalf("want one AWS::Serverless::HttpApi, got %v", apis)
	}
	api := apis[0]
	// Without StageName SAM creates the $default stage.
	stage := "$default"
	if v, ok := tpl.Resources[api].Properties["StageName"]; ok {
		s, isStr := v.(string)
		if !isStr {
			t.Fatalf("%s StageName = %v: not a literal; teach this test to compare it with the alarm's Stage", api, v)
		}
		stage = s
	}
	all := alarms(t, tpl)
	for id, a := range all {
		if a.Namespace != "AWS/ApiGateway" {
			continue
		}
		if !slices.Contains(httpAPIMetrics, a.MetricName) {
			t.Errorf("%s watches AWS/ApiGateway %q, not an HTTP API metric %v", id, a.MetricName, httpAPIMetrics)
		}
		d := a.dims()
		if ref, _ := template.RefTarget(d["ApiId"]); ref != api {
			t.Errorf("%s ApiId = %v, want !Ref %s", id, d["ApiId"], api)
		}
		if s, ok := d["Stage"]; ok && s != stage {
			t.Errorf("%s Stage = %v, but the API's stage is %q: the alarm would watch a metric that never comes", id, s, stage)
		}
		for name := range d {
			if name != "ApiId" && name != "Stage" {
				t.Errorf("%s has dimension %s; HTTP API stage metrics have ApiId and Stage", id, name)
			}
		}
	}
	var found bool
	for _, id := range alarmsOn(all, "AWS/ApiGateway", "5xx") {
		if all[id].firesOnFirst() && len(all[id].Dimensions) == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("no alarm on AWS/ApiGateway 5xx (Sum > 0, ApiId !Ref %s, Stage %s): the handlers answer failures as responses, which Lambda's Errors never counts", api, stage)
	}
}

// apiFunctions returns the logical ids of the functions behind HttpApi routes.
func apiFunctions(tpl *template.Template) []string {
	var ids []string
	for _, id := range tpl.OfType("AWS::Serverless::Function") {
		events, _ := tpl.Resources[id].Properties["Events"].(map[string]any)
		for _, ev := range events {
			if template.Path(ev, "Type") == "HttpApi" {
				ids = append(ids, id)
				break
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// loggedLines returns what config.Common.Logger, the functions' logger, writes for
// one line at each level, decoded.
func loggedLines(t *testing.T) map[slog.Level]map[string]any {
	t.Helper()
	var buf bytes.Buffer
	log := config.Common{LogLevel: slog.LevelDebug}.Logger(&buf)
	levels := []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}
	for _, l := range levels {
		log.Log(context.Background(), l, "create product", slog.Int("status", 500))
	}
	lines := decodeLines(t, buf.Bytes())
	if len(lines) != len(levels) {
		t.Fatalf("the functions' logger wrote %d lines for %d calls", len(lines), len(levels))
	}
	out := map[slog.Level]map[string]any{}
	for i, l := range levels {
		out[l] = lines[i]
	}
	return out
}

func decodeLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line is not a JSON object (metric filters need one): %s: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestApiErrorLogsAlarmed(t *testing.T) {
	tpl := load(t)
	all := alarms(t, tpl)
	filters := metricFilters(t, tpl)
	lines := loggedLines(t)
	fns := apiFunctions(tpl)
	if len(fns) == 0 {
		t.Fatal("no function serves an HttpApi route")
	}
	for _, id := range fns {
		group := logGroupOf(t, tpl, id)
		var found bool
		for _, f := range filtersOn(filters, group) {
			p, err := parseFilterPattern(f.FilterPattern)
			if err != nil {
				t.Errorf("%s FilterPattern %q: %v", f.id, f.FilterPattern, err)
				continue
			}
			if !p.match(lines[slog.LevelError]) {
				continue
			}
			for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
				if p.match(lines[l]) {
					t.Errorf("%s FilterPattern %q also matches a %s line: %v", f.id, f.FilterPattern, l, lines[l])
				}
			}
			for _, m := range f.MetricTransformations {
				if m.MetricValue != "1" {
					t.Errorf("%s %s MetricValue = %q, want \"1\" (one per line)", f.id, m.MetricName, m.MetricValue)
				}
				for _, aid := range alarmsOn(all, m.MetricNamespace, m.MetricName) {
					if all[aid].firesOnFirst() {
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no metric filter on %s matching its ERROR lines (%v) with an alarm (Sum > 0) on the metric",
				id, group, lines[slog.LevelError])
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
	if err != nil {
		t.Fatal(err)
	}
	item, err := e.Item(outbox.DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	image, err := streams.Image(item)
	if err != nil {
		t.Fatal(err)
	}
	return events.DynamoDBEventRecord{
		EventName: "INSERT", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			Keys:           map[string]events.DynamoDBAttributeValue{"aggregate_id": image["aggregate_id"], "event_id": image["event_id"]},
			NewImage:       image,
			SequenceNumber: fmt.Sprintf("%021d", 100+i),
		},
	}
}

func TestRelayDroppedEventsAlarmed(t *testing.T) {
	tpl := load(t)
	relayID, ok := functionIDs(t, tpl)["outboxrelay"]
	if !ok {
		t.Fatal("no relay function")
	}
	group := logGroupOf(t, tpl, relayID)
	var dropped []metricFilter
	for _, f := range filtersOn(metricFilters(t, tpl), group) {
		for _, m := range f.MetricTransformations {
			if m.MetricName == "DroppedOutboxEvents" {
				dropped = append(dropped, f)
			}
		}
	}
	if len(dropped) != 1 {
		t.Fatalf("want one metric filter on %s publishing DroppedOutboxEvents, got %d", group, len(dropped))
	}
	f := dropped[0]
	pattern, err := parseFilterPattern(f.FilterPattern)
	if err != nil {
		t.Fatalf("%s FilterPattern %q: %v", f.id, f.FilterPattern, err)
	}
	all := alarms(t, tpl)
	for _, m := range f.MetricTransformations {
		if m.MetricValue != "1" {
			t.Errorf("%s MetricValue = %q, want \"1\" (one per dropped event)", f.id, m.MetricValue)
		}
		var found bool
		for _, aid := range alarmsOn(all, m.MetricNamespace, m.MetricName) {
			if all[aid].firesOnFirst() {
				found = true
			}
		}
		if !found {
			t.Errorf("no alarm (Sum > 0) on %s's metric %v %s", f.id, m.MetricNamespace, m.MetricName)
		}
	}

	// What the relay logs for a batch with each outcome: record 0 is
	// published, 1 is undecodable and 2 refused by the bus (both dropped for
	// good), 3 fails to publish and is retried.
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		relayInsert(t, 0), relayInsert(t, 1), relayInsert(t, 2), relayInsert(t, 3),
	}}
	ev.Records[1].Change.NewImage = nil
	var buf bytes.Buffer
	h := relay.NewHandler(refusingPublisher{t}, config.Common{LogLevel: slog.LevelDebug}.Logger(&buf))
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	retried := ev.Records[3].Change.SequenceNumber
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != retried {
		t.Fatalf("BatchItemFailures = %+v, want the retried record %s only (the scenario no longer holds)", resp.BatchItemFailures, retried)
	}

	var matched []string
	var retryLogged bool
	for _, l := range decodeLines(t, buf.Bytes()) {
		seq, _ := l["sequence_number"].(string)
		if pattern.match(l) {
			matched = append(matched, seq)
		} else if seq == retried && l["level"] == "ERROR" {
			retryLogged = true
		}
	}
	sort.Strings(matched)
	want := []string{ev.Records[1].Change.SequenceNumber, ev.Records[2].Change.SequenceNumber}
	if !slices.Equal(matched, want) {
		t.Errorf("%s FilterPattern %q matched the lines of records %v, want one line per dropped record %v\nlog:\n%s",
			f.id, f.FilterPattern, matched, want, buf.String())
	}
	if !retryLogged {
		t.Errorf("no unmatched ERROR line for the retried record %s; the scenario no longer holds\nlog:\n%s", retried, buf.String())
	}
}

// A filterExpr is a parsed CloudWatch Logs JSON filter pattern.
type filterExpr interface {
	match(line map[string]any) bool
}

type eqExpr struct {
	path  []string
	value string
}

func (e eqExpr) match(line map[string]any) bool {
	var v any = line
	for _, k := range e.path {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		v = m[k]
	}
	s, ok := v.(string)
	return ok && s == e.value
}

type boolExpr struct {
	or    bool
	terms []filterExpr
}

func (e boolExpr) match(line map[string]any) bool {
	for _, t := range e.terms {
		if t.match(line) == e.or {
			return e.or
		}
	}
	return !e.or
}

// parseFilterPattern parses the subset of the JSON filter pattern syntax
// the template uses: { $.a.b = "string" } terms, parenthesized, joined by
// || or && (one kind per group). Anything else (numbers, !=, wildcards,
// IS NULL, EXISTS, ...) is an error: the test then says so rather than
// judging a pattern it does not understand.
func parseFilterPattern(s string) (filterExpr, error) {
	toks, err := tokenizeFilter(s)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect("}"); err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q after the closing brace", p.toks[p.i])
	}
	return e, nil
}

func tokenizeFilter(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case strings.ContainsRune("{}()=", rune(c)):
			toks = append(toks, string(c))
			i++
		case strings.HasPrefix(s[i:], "||") || strings.HasPrefix(s[i:], "&&"):
			toks = append(toks, s[i:i+2])
			i += 2
		case c == '"':
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			lit := s[i : i+end+2]
			if strings.ContainsAny(lit, `\*`) {
				return nil, fmt.Errorf("string %s: escapes and wildcards are not supported by this test", lit)
			}
			toks = append(toks, lit)
			i += end + 2
		case c == '$':
			j := i + 1
			for j < len(s) && (s[j] == '.' || s[j] == '_' || s[j] == '-' ||
				'a' <= s[j] && s[j] <= 'z' || 'A' <= s[j] && s[j] <= 'Z' || '0' <= s[j] && s[j] <= '9') {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("unsupported syntax at %d: %q", i, s[i:])
		}
	}
	return toks, nil
}

type filterParser struct {
	toks []string
	i    int
}

func (p *filterParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *filterParser) expect(tok string) error {
	if got := p.peek(); got != tok {
		return fmt.Errorf("want %q, got %q", tok, got)
	}
	p.i++
	return nil
}

func (p *filterParser) expr() (filterExpr, error) {
	first, err := p.term()
	if err != nil {
		return nil, err
	}
	op := p.peek()
	if op != "||" && op != "&&" {
		return first, nil
	}
	e := boolExpr{or: op == "||", terms: []filterExpr{first}}
	for p.peek() == "||" || p.peek() == "&&" {
		if p.peek() != op {
			return nil, fmt.Errorf("|| and && mixed without parentheses")
		}
		p.i++
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		e.terms = append(e.terms, t)
	}
	return e, nil
}

func (p *filterParser) term() (filterExpr, error) {
	if p.peek() == "(" {
		p.i++
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	}
	sel := p.peek()
	if !strings.HasPrefix(sel, "$.") || len(sel) < 3 {
		return nil, fmt.Errorf("want a $.selector, got %q", sel)
	}
	p.i++
	if err := p.expect("="); err != nil {
		return nil, err
	}
	lit := p.peek()
	if !strings.HasPrefix(lit, `"`) {
		return nil, fmt.Errorf("want a quoted string after %s =, got %q", sel, lit)
	}
	p.i++
	return eqExpr{path: strings.Split(sel[2:], "."), value: strings.Trim(lit, `"`)}, nil
}

func TestParseFilterPattern(t *testing.T) {
	line := map[string]any{"level": "ERROR", "msg": "b", "err": map[string]any{"kind": "x"}}
	for _, c := range []struct {
		pattern string
		want    bool
	}{
		{`{ $.level = "ERROR" }`, true},
		{`{$.level="WARN"}`, false},
		{`{ ($.msg = "a") || ($.msg = "b") }`, true},
		{`{ ($.msg = "a") || ($.msg = "c") }`, false},
		{`{ $.level = "ERROR" && $.msg = "a" }`, false},
		{`{ $.level = "ERROR" && ($.msg = "a" || $.err.kind = "x") }`, true},
		{`{ $.nope = "ERROR" }`, false},
	} {
		p, err := parseFilterPattern(c.pattern)
		if err != nil {
			t.Errorf("parse %q: %v", c.pattern, err)
			continue
		}
		if got := p.match(line); got != c.want {
			t.Errorf("%q matches %v = %v, want %v", c.pattern, line, got, c.want)
		}
	}
	for _, bad := range []string{
		`$.level = "ERROR"`,
		`{ $.level = "ERR*" }`,
		`{ $.level != "ERROR" }`,
		`{ $.a = "x" || $.b = "y" && $.c = "z" }`,
		`{ $.status = 500 }`,
		`{ $.level = "ERROR" } x`,
		`ERROR`,
	} {
		if _, err := parseFilterPattern(bad); err == nil {
			t.Errorf("parse %q succeeded, want an error", bad)
		}
	}
}
