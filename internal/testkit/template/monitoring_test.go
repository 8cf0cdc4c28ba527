package template_test

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// The monitoring half of the drift test: the alarms exist, notify through
// AlarmTopicArn and watch metrics that exist: AWS's own (HTTP API metric
// names, Lambda and SQS dimensions) and the functions' EMF metrics as the
// code actually writes them (emf_alarms_test.go), so a renamed metric or
// dimension fails here instead of silencing an alarm.

type dimension struct {
	Name  string
	Value any
}

// metricQuery is one entry of a metric-math alarm's Metrics.
type metricQuery struct {
	ID         string `json:"Id"`
	Expression string
	ReturnData *bool
	MetricStat *struct {
		Metric struct {
			Namespace  any
			MetricName string
			Dimensions []dimension
		}
		Period int
		Stat   string
	}
}

type alarmProps struct {
	Namespace          any
	MetricName         string
	Dimensions         []dimension
	Metrics            []metricQuery
	Statistic          string
	Period             int
	EvaluationPeriods  int
	Threshold          *float64
	ComparisonOperator string
	TreatMissingData   string
	AlarmActions       any
	OKActions          any
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
			checkMetricMath(t, id, a)
		}
	}
}

// checkMetricMath checks a metric-math alarm's shape: no single metric
// beside it, exactly one query returning data (an expression over the
// others), every other query a metric of the stack's own.
func checkMetricMath(t *testing.T, id string, a alarmProps) {
	t.Helper()
	if a.MetricName != "" || a.Namespace != nil || a.Statistic != "" {
		t.Errorf("%s has both Metrics and a single metric", id)
	}
	returning := 0
	ids := map[string]bool{}
	for _, q := range a.Metrics {
		ids[q.ID] = true
	}
	for _, q := range a.Metrics {
		if !regexp.MustCompile(`^[a-z][a-zA-Z0-9_]*$`).MatchString(q.ID) {
			t.Errorf("%s: query id %q must start with a lowercase letter (CloudWatch refuses it otherwise)", id, q.ID)
		}
		if q.MetricStat != nil && (q.MetricStat.Period <= 0 || q.MetricStat.Stat == "") {
			t.Errorf("%s: query %s reads a metric without a Period and a Stat", id, q.ID)
		}
		switch {
		case q.ReturnData != nil && *q.ReturnData:
			returning++
			if q.Expression == "" {
				t.Errorf("%s: query %s returns data but is no expression", id, q.ID)
			}
			for _, ref := range regexp.MustCompile(`\b[a-z][a-zA-Z0-9_]*\b`).FindAllString(q.Expression, -1) {
				if !ids[ref] {
					t.Errorf("%s: expression %q names %s, which is no query of the alarm", id, q.Expression, ref)
				}
			}
		case q.MetricStat == nil:
			t.Errorf("%s: query %s neither returns data nor reads a metric", id, q.ID)
		}
	}
	if returning != 1 {
		t.Errorf("%s: %d queries return data, want exactly 1 (the alarm's value)", id, returning)
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
