package sellers_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
)

// The reader sums a seller's shards: counts and each currency's totals
// added, the latest updated_at, whichever shards exist.
func TestTheReaderSumsTheShards(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	reader, err := sellers.NewReader(env.Client, env.Tables.Sellers)
	require.NoError(t, err)
	seller, other := uuid.New(), uuid.New()
	put := func(id uuid.UUID, shard int, count int64, updated string, cents map[string]int64) {
		item := map[string]types.AttributeValue{
			"seller_id": &types.AttributeValueMemberS{Value: id.String()}, "shard": &types.AttributeValueMemberN{Value: strconv.Itoa(shard)},
			"product_count": &types.AttributeValueMemberN{Value: strconv.FormatInt(count, 10)},
			"updated_at":    &types.AttributeValueMemberS{Value: updated},
		}
		for cur, c := range cents {
			item["cents_"+cur] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c, 10)}
		}
		_, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Sellers), Item: item})
		require.NoError(t, err)
	}
	put(seller, 0, 2, "2026-12-01T10:00:00Z", map[string]int64{"EUR": 100, "USD": 7})
	put(seller, 7, 1, "2026-12-01T12:00:00.5Z", map[string]int64{"EUR": 11})
	put(seller, 12, 3, "2026-12-01T11:00:00Z", map[string]int64{"JPY": 300}) // a shard beyond today's count still counts
	put(other, 7, 5, "2026-12-02T00:00:00Z", map[string]int64{"EUR": 5})
	env.Counter.Reset()
	got, err := reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"Query": 1}, env.Counter.Snapshot(), "one Query reads every shard")
	assert.Equal(t, sellers.Stats{
		SellerID: seller, ProductCount: sellers.NumberOf(6), Listed: []sellers.Total{eurTotal(t, "111"), total(t, "300", "JPY"), total(t, "7", "USD")},
		UpdatedAt: time.Date(2026, 12, 1, 12, 0, 0, 5e8, time.UTC),
	}, got)
}

// fakeQuery answers a Reader's Query with pages of items.
type fakeQuery struct {
	pages [][]map[string]types.AttributeValue
	calls int
}

func (q *fakeQuery) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if !aws.ToBool(in.ConsistentRead) {
		return nil, errors.New("the read must be strongly consistent")
	}
	if q.calls > 0 && in.ExclusiveStartKey == nil {
		return nil, errors.New("a later page without the last key")
	}
	out := &dynamodb.QueryOutput{Items: q.pages[q.calls]}
	if q.calls++; q.calls < len(q.pages) {
		out.LastEvaluatedKey = map[string]types.AttributeValue{"seller_id": &types.AttributeValueMemberS{Value: "x"}}
	}
	return out, nil
}

func shardItem(seller uuid.UUID, shard int, count, eurCents string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"seller_id": &types.AttributeValueMemberS{Value: seller.String()}, "shard": &types.AttributeValueMemberN{Value: strconv.Itoa(shard)},
		"product_count": &types.AttributeValueMemberN{Value: count}, "cents_EUR": &types.AttributeValueMemberN{Value: eurCents},
		"updated_at": &types.AttributeValueMemberS{Value: "2026-12-01T00:00:00Z"},
	}
}

// Shards are summed exactly, whatever the size of their numbers: every
// number the counter may write (up to 38 digits a shard) reads back, and
// their sum past int64 is that sum, never an error or a wrapped number
// (GET /sellers/{id} never answers 500 for a state the consumer wrote).
// Every page of the Query is read; an item that does not decode, or
// another seller's, is corrupt.
func TestTheReadersSumIsCheckedAndComplete(t *testing.T) {
	t.Parallel()
	seller := uuid.New()
	const maxInt64, nines = "9223372036854775807", "99999999999999999999999999999999999999" // 38 digits
	for name, c := range map[string]struct {
		pages [][]map[string]types.AttributeValue
		want  error
		count string
		cents string
	}{
		"total past int64": {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, "1", maxInt64), shardItem(seller, 1, "1", "1")}}, count: "2", cents: "9223372036854775808"},
		"count past int64": {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, maxInt64, "1"), shardItem(seller, 1, "1", "1")}}, count: "9223372036854775808", cents: "2"},
		"every shard full": {pages: [][]map[string]types.AttributeValue{func() []map[string]types.AttributeValue {
			var full []map[string]types.AttributeValue
			for shard := range sellers.Shards {
				full = append(full, shardItem(seller, shard, nines, nines))
			}
			return full
		}()}, count: "999999999999999999999999999999999999990", cents: "999999999999999999999999999999999999990"},
		"pages":          {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, "1", "5")}, {shardItem(seller, 1, "2", "6")}, {shardItem(seller, 2, "3", "7")}}, count: "6", cents: "18"},
		"no shard":       {pages: [][]map[string]types.AttributeValue{{}}, want: sellers.ErrNotFound},
		"negative count": {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, "-1", "5")}}, want: sellers.ErrCorrupt},
		"negative total": {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, "1", "-5")}}, want: sellers.ErrCorrupt},
		"fractional":     {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, "1", "5.5")}}, want: sellers.ErrCorrupt},
		"exponent":       {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, "1", "1E+3")}}, want: sellers.ErrCorrupt},
		"leading zero":   {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, "01", "5")}}, want: sellers.ErrCorrupt},
		"another seller": {pages: [][]map[string]types.AttributeValue{{shardItem(seller, 0, "1", "5"), shardItem(uuid.New(), 1, "1", "5")}}, want: sellers.ErrCorrupt},
		"only another":   {pages: [][]map[string]types.AttributeValue{{shardItem(uuid.New(), 1, "1", "5")}}, want: sellers.ErrCorrupt},
		"no shard number": {pages: [][]map[string]types.AttributeValue{{func() map[string]types.AttributeValue {
			it := shardItem(seller, 0, "1", "5")
			delete(it, "shard")
			return it
		}()}}, want: sellers.ErrCorrupt},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuery{pages: c.pages}
			r, err := sellers.NewReader(q, "sellers")
			require.NoError(t, err)
			got, err := r.Get(context.Background(), seller)
			if c.want != nil {
				assert.ErrorIs(t, err, c.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, len(c.pages), q.calls, "every page read")
			assert.Equal(t, c.count, got.ProductCount.String())
			assert.Equal(t, []sellers.Total{eurTotal(t, c.cents)}, got.Listed)
		})
	}
}
