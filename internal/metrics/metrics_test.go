package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/metrics"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
)

func TestRequestLine(t *testing.T) {
	t.Parallel()
	var out logbuf.Buffer
	rec, err := metrics.New(&out, "", "createproduct")
	require.NoError(t, err)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-7"})
	rec.Request(ctx, metrics.API{Outcome: "replayed", Status: 201, DynamoDBCalls: 1}, 2500*time.Microsecond)
	rec.Request(ctx, metrics.API{Outcome: "released", Status: 500, DynamoDBCalls: 3}, time.Millisecond)
	rec.Request(ctx, metrics.API{Outcome: "unavailable", Status: 503, DynamoDBCalls: 3}, time.Millisecond)

	lines := out.Metrics(t)
	require.Len(t, lines, 3)
	assert.EqualValues(t, 1, lines[1]["Faults"], "a 500 is a fault, whatever the outcome")
	assert.EqualValues(t, 0, lines[2]["Faults"], "a 503 asks for a retry: not a fault")
	l := lines[0]
	assert.EqualValues(t, 0, l["Faults"])
	assert.Equal(t, "createproduct", l["Function"])
	assert.Equal(t, "replayed", l["Outcome"])
	assert.EqualValues(t, 1, l["Requests"])
	assert.EqualValues(t, 1, l["DynamoDBCalls"])
	assert.EqualValues(t, 2.5, l["Duration"])
	assert.Equal(t, "req-7", l["aws_request_id"])
	d := directive(t, l)
	assert.Equal(t, metrics.DefaultNamespace, d["Namespace"])
	assert.Equal(t, []any{[]any{"Function", "Outcome"}, []any{"Function"}}, d["Dimensions"])
}

func TestBatchLines(t *testing.T) {
	t.Parallel()
	var out logbuf.Buffer
	relay, err := metrics.New(&out, "idemlambda/prod", "outboxrelay")
	require.NoError(t, err)
	consumer, err := metrics.New(&out, "idemlambda/prod", "sellerstats")
	require.NoError(t, err)
	relay.RelayBatch(context.Background(), metrics.Relay{Records: 10, Published: 7, Failed: 2, Dropped: 1, Replicas: 3}, time.Millisecond)
	consumer.ConsumerBatch(context.Background(), metrics.Consumer{Records: 10, Applied: 5, Duplicate: 3, Poison: 1, Failed: 1, DynamoDBCalls: 9}, time.Millisecond)

	lines := out.Metrics(t)
	require.Len(t, lines, 2)
	for _, want := range []map[string]any{
		{"Function": "outboxrelay", "Records": 10.0, "Published": 7.0, "Failed": 2.0, "Dropped": 1.0, "Replicas": 3.0},
		{"Function": "sellerstats", "Records": 10.0, "Applied": 5.0, "Duplicate": 3.0, "Poison": 1.0, "Failed": 1.0, "DynamoDBCalls": 9.0},
	} {
		var got map[string]any
		for _, l := range lines {
			if l["Function"] == want["Function"] {
				got = l
			}
		}
		require.NotNil(t, got, want["Function"])
		for k, v := range want {
			assert.Equal(t, v, got[k], "%s %s", want["Function"], k)
		}
		d := directive(t, got)
		assert.Equal(t, "idemlambda/prod", d["Namespace"])
		assert.Equal(t, []any{[]any{"Function"}}, d["Dimensions"])
		assert.NotContains(t, got, "aws_request_id", "outside Lambda there is no request id")
	}
}

// A closed stdout costs the line, never the invocation.
func TestBrokenOutputIsCountedNotRaised(t *testing.T) {
	t.Parallel()
	rec, err := metrics.New(closed{}, "", "getproduct")
	require.NoError(t, err)
	rec.Request(context.Background(), metrics.API{Outcome: metrics.OutcomeServed, Status: 200, DynamoDBCalls: 1}, time.Millisecond)
	rec.Request(context.Background(), metrics.API{Outcome: metrics.OutcomeServed, Status: 200, DynamoDBCalls: 1}, time.Millisecond)
	assert.EqualValues(t, 2, rec.Dropped())
}

func TestNewRefusesWhatCloudWatchWould(t *testing.T) {
	t.Parallel()
	_, err := metrics.New(&logbuf.Buffer{}, "", "")
	assert.Error(t, err)
	_, err = metrics.New(&logbuf.Buffer{}, string(make([]byte, 256)), "f")
	assert.Error(t, err)
}

type closed struct{}

func (closed) Write([]byte) (int, error) {
	return 0, errors.New("write /dev/stdout: file already closed")
}

func directive(t *testing.T, line map[string]any) map[string]any {
	t.Helper()
	aws, ok := line["_aws"].(map[string]any)
	require.True(t, ok)
	dirs, ok := aws["CloudWatchMetrics"].([]any)
	require.True(t, ok)
	require.Len(t, dirs, 1)
	d, ok := dirs[0].(map[string]any)
	require.True(t, ok)
	return d
}

// BenchmarkRequest is the cost of an API invocation's metrics line.
func BenchmarkRequest(b *testing.B) {
	rec, err := metrics.New(discard{}, "idemlambda/bench", "createproduct")
	if err != nil {
		b.Fatal(err)
	}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "8476a536-e9f4-11e8-9739-2dfe598c3fcd"})
	b.ReportAllocs()
	for b.Loop() {
		rec.Request(ctx, metrics.API{Outcome: "executed", Status: 201, DynamoDBCalls: 2}, 3*time.Millisecond)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// A sweeper invocation is one line under [Function], with what it read,
// deleted, kept and failed.
func TestSweepLine(t *testing.T) {
	t.Parallel()
	var out logbuf.Buffer
	rec, err := metrics.New(&out, "idemlambda/prod", "sweeper")
	require.NoError(t, err)
	rec.Sweep(context.Background(), metrics.Sweep{Pages: 3, Expired: 9, Deleted: 7, Kept: 2, Applied: 1, Failed: 1}, 4*time.Millisecond)
	lines := out.Metrics(t)
	require.Len(t, lines, 1)
	l := lines[0]
	for name, want := range map[string]float64{"Pages": 3, "Expired": 9, "Deleted": 7, "Kept": 2, "Applied": 1, "Failed": 1, "Duration": 4} {
		assert.EqualValues(t, want, l[name], name)
	}
	assert.Equal(t, "sweeper", l["Function"])
	assert.Equal(t, []any{[]any{"Function"}}, directive(t, l)["Dimensions"])
}
