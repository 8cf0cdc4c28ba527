package tables_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/tables"
)

func TestCreateTableInputMatchesDesign(t *testing.T) {
	t.Parallel()
	out := tables.Outbox.CreateTableInput("ob")
	assert.Equal(t, "ob", aws.ToString(out.TableName))
	assert.Equal(t, types.BillingModePayPerRequest, out.BillingMode)
	require.Len(t, out.KeySchema, 2)
	assert.Equal(t, "aggregate_id", aws.ToString(out.KeySchema[0].AttributeName))
	assert.Equal(t, types.KeyTypeHash, out.KeySchema[0].KeyType)
	assert.Equal(t, "event_id", aws.ToString(out.KeySchema[1].AttributeName))
	assert.Equal(t, types.KeyTypeRange, out.KeySchema[1].KeyType)
	require.NotNil(t, out.StreamSpecification)
	assert.Equal(t, types.StreamViewTypeNewImage, out.StreamSpecification.StreamViewType)

	for _, tb := range []tables.Table{tables.Products, tables.Idempotency} {
		in := tb.CreateTableInput(tb.Logical)
		require.Len(t, in.KeySchema, 1, tb.Logical)
		assert.Equal(t, "id", aws.ToString(in.KeySchema[0].AttributeName))
		assert.Nil(t, in.StreamSpecification, tb.Logical)
		require.Len(t, in.AttributeDefinitions, 1)
		assert.Equal(t, types.ScalarAttributeTypeS, in.AttributeDefinitions[0].AttributeType)
	}
	sellers := tables.Sellers.CreateTableInput("s")
	require.Len(t, sellers.KeySchema, 2)
	assert.Equal(t, "seller_id", aws.ToString(sellers.KeySchema[0].AttributeName))
	assert.Equal(t, "shard", aws.ToString(sellers.KeySchema[1].AttributeName))
	assert.Equal(t, types.KeyTypeRange, sellers.KeySchema[1].KeyType)
	assert.Equal(t, []types.AttributeDefinition{
		{AttributeName: aws.String("seller_id"), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String("shard"), AttributeType: types.ScalarAttributeTypeN},
	}, sellers.AttributeDefinitions, "the shard is a number")
	assert.Equal(t, types.ScalarAttributeTypeS, tables.Outbox.RangeKeyAttributeType(), "S unless said otherwise")

	assert.Equal(t, "expires_at", tables.Idempotency.TTLAttribute)
	assert.Equal(t, "expires_at", tables.Outbox.TTLAttribute)
	assert.Equal(t, "expires_at", tables.Callers.TTLAttribute, "window items expire; grants carry no expires_at")
	assert.Empty(t, tables.Products.TTLAttribute)
}

func TestNamesOf(t *testing.T) {
	t.Parallel()
	n := tables.Names{Products: "p", Idempotency: "i", Outbox: "o", Sellers: "s", Callers: "c"}
	for tb, want := range map[string]string{"products": "p", "idempotency": "i", "outbox": "o", "sellers": "s", "callers": "c"} {
		found := false
		for _, table := range tables.All() {
			if table.Logical == tb {
				assert.Equal(t, want, n.Of(table))
				found = true
			}
		}
		assert.True(t, found, tb)
	}
	assert.Empty(t, n.Of(tables.Table{Logical: "other"}))
}
