package idem_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// clock is a settable time source shared by the stores of one test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newStore(t testing.TB, env *testEnv, opts ...idem.Option) *idem.Store {
	t.Helper()
	s, err := idem.NewStore(env.Client, env.Tables.Idempotency, append([]idem.Option{idem.WithLayout(env.Layout)}, opts...)...)
	must.NoError(t, err)
	return s
}

func scope(t testing.TB, key string) idem.Scope {
	t.Helper()
	s, err := idem.NewScope("POST /things", "user-1", key)
	must.NoError(t, err)
	return s
}

func sAttr(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// businessWrites are what a caller commits with its completion: a product
// with a fresh id (a duplicate execution would show as a second product)
// and its outbox event.
func businessWrites(env *testEnv) (string, []types.TransactWriteItem) {
	id := uuid.NewString()
	return id, []types.TransactWriteItem{
		{Put: &types.Put{
			TableName:           aws.String(env.Tables.Products),
			Item:                map[string]types.AttributeValue{"id": sAttr(id)},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		}},
		{Put: &types.Put{
			TableName: aws.String(env.Tables.Outbox),
			Item:      map[string]types.AttributeValue{"aggregate_id": sAttr(id), "event_id": sAttr(uuid.NewString())},
		}},
	}
}

func created(id string) idem.Response {
	return idem.Response{
		Meta: map[string]string{"Content-Type": "application/json", "Location": "/things/" + id},
		Body: []byte(`{"id":"` + id + `"}`),
	}
}

func countItems(t testing.TB, env *testEnv, table string) int {
	t.Helper()
	n := 0
	var start map[string]types.AttributeValue
	for {
		out, err := env.Client.Scan(context.Background(), &dynamodb.ScanInput{
			TableName: aws.String(table), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start,
		})
		must.NoError(t, err)
		n += len(out.Items)
		if len(out.LastEvaluatedKey) == 0 {
			return n
		}
		start = out.LastEvaluatedKey
	}
}

// modes lists both claim modes Execute may run in; tests that hold in both run
// once per mode.
var modes = []idem.Mode{idem.ModeReserve, idem.ModeTransact}

// eachMode runs f as a parallel subtest per mode.
func eachMode(t *testing.T, f func(t *testing.T, mode idem.Mode)) {
	t.Helper()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			f(t, m)
		})
	}
}

// effect is an operation's Effect: a fresh product (a duplicate execution
// would show as a second product), its outbox event, and the 201 naming it.
func effect(env *testEnv) func(context.Context) (idem.Effect, error) {
	return func(context.Context) (idem.Effect, error) {
		id, items := businessWrites(env)
		return idem.Effect{Response: created(id), Writes: items}, nil
	}
}
