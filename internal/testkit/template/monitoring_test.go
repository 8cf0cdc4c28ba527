package template_test

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
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

// Every alarm notifies a topic that exists: AlarmTopicArn when given,
// else the stack's own, encrypted with a key CloudWatch may use (it cannot
// use the AWS managed SNS key), which only this account's alarms publish
// to. An alarm with no action, or one that notifies AlarmTopicArn only
// when it is set, notifies nobody by default.
func TestAlarmsNotifyTheAlarmTopic(t *testing.T) {
	tpl := load(t)
	p, ok := tpl.Parameters["AlarmTopicArn"].(map[string]any)
	if !ok {
		t.Fatal("no AlarmTopicArn parameter")
	}
	if d, _ := p["Default"].(string); d != "" {
		t.Errorf("AlarmTopicArn Default = %q: a topic of another account or stack that may not exist", d)
	}
	created := map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "AlarmTopicArn"}, ""}}
	if !reflect.DeepEqual(tpl.Conditions["CreateAlarmTopic"], created) {
		t.Errorf("CreateAlarmTopic = %v, want !Equals [!Ref AlarmTopicArn, \"\"]", tpl.Conditions["CreateAlarmTopic"])
	}
	topic, ok := tpl.Resources["AlarmTopic"]
	if !ok || topic.Type != "AWS::SNS::Topic" || topic.Condition != "CreateAlarmTopic" {
		t.Fatalf("AlarmTopic = %+v, want an AWS::SNS::Topic with Condition CreateAlarmTopic", topic)
	}
	key, attr, _ := template.GetAttTarget(topic.Properties["KmsMasterKeyId"])
	if k := tpl.Resources[key]; k.Type != "AWS::KMS::Key" || attr != "Arn" || k.Condition != "CreateAlarmTopic" {
		t.Fatalf("AlarmTopic KmsMasterKeyId = %v, want !GetAtt of the stack's AWS::KMS::Key (CloudWatch cannot use alias/aws/sns)", topic.Properties["KmsMasterKeyId"])
	}
	found := map[string][]map[string]any{}
	statements(tpl.Resources[key].Properties["KeyPolicy"], key, found)
	var cloudwatchUses bool
	for _, s := range found[key] {
		if template.Path(s, "Principal", "Service") == "cloudwatch.amazonaws.com" && s["Effect"] == "Allow" &&
			slices.Contains(actionsOf(s), "kms:GenerateDataKey") && slices.Contains(actionsOf(s), "kms:Decrypt") {
			cloudwatchUses = true
		}
	}
	if !cloudwatchUses {
		t.Errorf("%s's key policy does not let cloudwatch.amazonaws.com GenerateDataKey and Decrypt: no alarm would reach the topic", key)
	}
	var published bool
	for _, id := range tpl.OfType("AWS::SNS::TopicPolicy") {
		pol := tpl.Resources[id].Properties
		if ref, _ := template.RefTarget(first(asList(pol["Topics"]))); ref != "AlarmTopic" {
			continue
		}
		found := map[string][]map[string]any{}
		statements(pol["PolicyDocument"], id, found)
		for _, s := range found[id] {
			if template.Path(s, "Principal", "Service") == "cloudwatch.amazonaws.com" && slices.Contains(actionsOf(s), "sns:Publish") &&
				template.Path(s, "Condition", "StringEquals", "aws:SourceAccount") != nil {
				published = true
			}
		}
	}
	if !published {
		t.Error("no topic policy lets this account's CloudWatch alarms (aws:SourceAccount) publish to AlarmTopic")
	}
	want := []any{map[string]any{"Fn::If": []any{"HasAlarmTopic", map[string]any{"Ref": "AlarmTopicArn"}, map[string]any{"Ref": "AlarmTopic"}}}}
	all := alarms(t, tpl)
	if len(all) == 0 {
		t.Fatal("template.yaml has no alarms")
	}
	for id, a := range all {
		if !reflect.DeepEqual(a.AlarmActions, want) {
			t.Errorf("%s AlarmActions = %v, want [!If [HasAlarmTopic, !Ref AlarmTopicArn, !Ref AlarmTopic]]", id, a.AlarmActions)
		}
		if !reflect.DeepEqual(a.OKActions, want) {
			t.Errorf("%s OKActions = %v, want [!If [HasAlarmTopic, !Ref AlarmTopicArn, !Ref AlarmTopic]]", id, a.OKActions)
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
	if out := template.Path(tpl.Outputs, "AlarmTopicArn", "Value"); !reflect.DeepEqual(out, want[0]) {
		t.Errorf("output AlarmTopicArn = %v, want the topic the alarms notify", out)
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

// Every function has an alarm on its crashes (Errors) and on the
// invocations Lambda refused it (Throttles: an API caller's 5xx, a queue
// or stream falling behind), each firing on the first.
func TestEveryFunctionHasErrorsAndThrottlesAlarms(t *testing.T) {
	tpl := load(t)
	all := alarms(t, tpl)
	for fn, id := range functionIDs(t, tpl) {
		for _, metric := range []string{"Errors", "Throttles"} {
			var found bool
			for _, aid := range alarmsOn(all, "AWS/Lambda", metric) {
				if ref, _ := template.RefTarget(all[aid].dims()["FunctionName"]); ref == id && all[aid].firesOnFirst() && len(all[aid].Dimensions) == 1 {
					found = true
				}
			}
			if !found {
				t.Errorf("%s (%s) has no AWS/Lambda %s alarm (Sum > 0, FunctionName !Ref %s)", id, fn, metric, id)
			}
		}
	}
}

// Every table has an alarm on throttled reads and one on throttled writes
// (by TableName: the per-operation ThrottledRequests needs an Operation
// dimension too), firing on the first.
func TestEveryTableHasThrottleAlarms(t *testing.T) {
	tpl := load(t)
	all := alarms(t, tpl)
	tables := tpl.OfType("AWS::DynamoDB::Table")
	if len(tables) == 0 {
		t.Fatal("no tables")
	}
	for _, table := range tables {
		for _, metric := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
			var found bool
			for _, id := range alarmsOn(all, "AWS/DynamoDB", metric) {
				if ref, _ := template.RefTarget(all[id].dims()["TableName"]); ref == table && all[id].firesOnFirst() && len(all[id].Dimensions) == 1 {
					found = true
				}
			}
			if !found {
				t.Errorf("%s has no AWS/DynamoDB %s alarm (Sum > 0, TableName !Ref %s)", table, metric, table)
			}
		}
	}
}

// The rule's deliveries that failed for good, or could not even reach its
// dead-letter queue, are alarmed: they are events the consumer never
// counts. A rule on a custom bus publishes its metrics under EventBusName
// and RuleName, its plain name (a Ref of it is "bus|rule").
func TestRuleDeliveryFailuresAreAlarmed(t *testing.T) {
	tpl := load(t)
	all := alarms(t, tpl)
	for _, rid := range tpl.OfType("AWS::Events::Rule") {
		r := tpl.Resources[rid].Properties
		name, ok := r["Name"]
		if !ok {
			t.Errorf("rule %s has no Name: its metrics' RuleName is unknown to an alarm", rid)
			continue
		}
		for _, metric := range []string{"FailedInvocations", "InvocationsFailedToBeSentToDlq"} {
			var found bool
			for _, id := range alarmsOn(all, "AWS/Events", metric) {
				d := all[id].dims()
				if reflect.DeepEqual(d["RuleName"], name) && reflect.DeepEqual(d["EventBusName"], r["EventBusName"]) && len(d) == 2 && all[id].firesOnFirst() {
					found = true
				}
			}
			if !found {
				t.Errorf("rule %s has no AWS/Events %s alarm (Sum > 0, EventBusName %v, RuleName %v)", rid, metric, r["EventBusName"], name)
			}
		}
	}
}

// The API's 4xx share is alarmed, and so are its 429s, which HTTP APIs
// count in 4xx only: a metric filter on the access log's JSON status
// counts them, and an alarm reads what the filter writes. It counts the
// stage's own throttling (error.responseType THROTTLED), which every
// caller shares, and not createproduct's 429 to one caller over its
// limit (internal/access), an answer to that caller alone.
func TestApiClientErrorsAndThrottlingAreAlarmed(t *testing.T) {
	tpl := load(t)
	all := alarms(t, tpl)
	var rate bool
	for _, id := range alarmsOn(all, "AWS/ApiGateway", "4xx") {
		a := all[id]
		if a.Statistic == "Average" && a.Threshold != nil && *a.Threshold > 0 && *a.Threshold < 1 {
			rate = true
		}
	}
	if !rate {
		t.Error("no alarm on the share of 4xx answers (AWS/ApiGateway 4xx, Average between 0 and 1)")
	}
	filters := tpl.OfType("AWS::Logs::MetricFilter")
	var throttled bool
	for _, id := range filters {
		f := tpl.Resources[id].Properties
		if ref, _ := template.RefTarget(f["LogGroupName"]); ref != "ApiAccessLogGroup" || f["FilterPattern"] != throttledFilter {
			continue
		}
		for _, m := range asList(f["MetricTransformations"]) {
			ns, name := template.Path(m, "MetricNamespace"), template.Path(m, "MetricName")
			for _, aid := range alarmsOn(all, ns, name.(string)) {
				if all[aid].firesOnFirst() {
					throttled = true
				}
			}
		}
	}
	if !throttled {
		t.Errorf("no alarm (Sum > 0) on a metric filter of ApiAccessLogGroup counting %s; filters %v", throttledFilter, filters)
	}
	format, _ := template.Path(tpl.Resources["HttpApi"].Properties, "AccessLogSettings", "Format").(string)
	for _, field := range []string{`"status":"$context.status"`, `"errorType":"$context.error.responseType"`} {
		if !strings.Contains(format, field) {
			t.Errorf("the access log format has no %s, which the 429 filter reads: %s", field, format)
		}
	}
}

// throttledFilter counts the 429s the stage answers itself.
const throttledFilter = `{ $.status = "429" && $.errorType = "THROTTLED" }`

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
