package awsotel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemlambda/idemlambda/internal/awsotel"
)

// service answers each request with the next of answers (the last one
// again once they run out), and keeps each request's traceparent.
type service struct {
	mu       sync.Mutex
	answers  []func(w http.ResponseWriter)
	parents  []string
	requests int
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.answers[min(s.requests, len(s.answers)-1)]
	s.requests++
	s.parents = append(s.parents, r.Header.Get("traceparent"))
	s.mu.Unlock()
	a(w)
}

func ok(body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-RequestId", "req-1")
		_, _ = w.Write([]byte(body))
	}
}

func failed(status int, code string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-RequestId", "req-2")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `","message":"no"}`))
	}
}

func config(t *testing.T, url string, rec *tracetest.SpanRecorder) aws.Config {
	t.Helper()
	cfg := aws.Config{
		Region:       "eu-central-1",
		Credentials:  credentials.NewStaticCredentialsProvider("a", "s", ""),
		BaseEndpoint: aws.String(url),
	}
	awsotel.Append(&cfg.APIOptions, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), propagation.TraceContext{})
	return cfg
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A call is one client span, a child of the context's, named for the
// service and operation, with the semantic conventions' attributes; each
// of its HTTP requests, retries included, carries the span's context.
func TestACallIsAClientSpan(t *testing.T) {
	t.Parallel()
	svc := &service{answers: []func(http.ResponseWriter){failed(http.StatusInternalServerError, "InternalServerError"), ok(`{}`)}}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	db := dynamodb.NewFromConfig(config(t, srv.URL, rec))
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), parent)
	_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("products"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "1"}}})
	require.NoError(t, err)

	spans := rec.Ended()
	require.Len(t, spans, 1, "one span for the call and its retry")
	s := spans[0]
	assert.Equal(t, "DynamoDB.GetItem", s.Name())
	assert.Equal(t, trace.SpanKindClient, s.SpanKind())
	assert.Equal(t, parent.SpanID(), s.Parent().SpanID())
	a := attrs(s)
	assert.Equal(t, "aws-api", a["rpc.system.name"].AsString())
	assert.Equal(t, "DynamoDB/GetItem", a["rpc.method"].AsString())
	assert.Equal(t, "eu-central-1", a["aws.region"].AsString())
	assert.Equal(t, "aws.dynamodb", a["db.system.name"].AsString())
	assert.Equal(t, []string{"products"}, a["aws.dynamodb.table_names"].AsStringSlice())
	assert.Equal(t, "req-1", a["aws.request_id"].AsString())
	assert.Equal(t, int64(200), a["http.response.status_code"].AsInt64())
	assert.Equal(t, codes.Unset, s.Status().Code)
	assert.False(t, s.StartTime().After(s.EndTime()))

	require.Equal(t, 2, svc.requests)
	for i, tp := range svc.parents {
		assert.Equal(t, "00-"+s.SpanContext().TraceID().String()+"-"+s.SpanContext().SpanID().String()+"-01", tp, "request %d", i)
	}
}

// A failed call is an Error span naming the service's error code.
func TestAFailedCallIsAnErrorSpan(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&service{answers: []func(http.ResponseWriter){failed(http.StatusBadRequest, "ConditionalCheckFailedException")}})
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	db := dynamodb.NewFromConfig(config(t, srv.URL, rec))
	_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String("idempotency"),
		Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "1"}}})
	require.Error(t, err)
	spans := rec.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	a := attrs(spans[0])
	assert.Equal(t, "ConditionalCheckFailedException", a["error.type"].AsString())
	assert.Equal(t, int64(400), a["http.response.status_code"].AsInt64())
	assert.Equal(t, "req-2", a["aws.request_id"].AsString())
}

// Another service's call has no DynamoDB attributes.
func TestOtherServices(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&service{answers: []func(http.ResponseWriter){ok(`{"FailedEntryCount":0,"Entries":[{"EventId":"e"}]}`)}})
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	eb := eventbridge.NewFromConfig(config(t, srv.URL, rec))
	_, err := eb.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{Source: aws.String("s")}}})
	require.NoError(t, err)
	spans := rec.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, "EventBridge.PutEvents", spans[0].Name())
	a := attrs(spans[0])
	assert.Equal(t, "EventBridge/PutEvents", a["rpc.method"].AsString())
	assert.NotContains(t, a, attribute.Key("db.system.name"))
	assert.NotContains(t, a, attribute.Key("aws.dynamodb.table_names"))
}

func TestTableNames(t *testing.T) {
	t.Parallel()
	put := func(table string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table)}}
	}
	for _, c := range []struct {
		in   any
		want []string
	}{
		{&dynamodb.QueryInput{TableName: aws.String("sellers")}, []string{"sellers"}},
		{&dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			put("products"), put("outbox"), {Update: &types.Update{TableName: aws.String("idempotency")}}, put("outbox"),
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String("sellers")}}, {Delete: &types.Delete{TableName: aws.String("x")}},
		}}, []string{"products", "outbox", "idempotency", "sellers", "x"}},
		{&dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{TableName: aws.String("a")}}}}, []string{"a"}},
		{&dynamodb.GetItemInput{}, nil},
		{(*dynamodb.GetItemInput)(nil), nil},
		{nil, nil},
		{"not a struct", nil},
		{&eventbridge.PutEventsInput{}, nil},
	} {
		assert.Equal(t, c.want, awsotel.TableNames(c.in), "%#v", c.in)
	}
}
