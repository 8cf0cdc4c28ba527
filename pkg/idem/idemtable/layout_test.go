package idemtable_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func TestLayoutValidate(t *testing.T) {
	t.Parallel()
	ok := []idemtable.Layout{
		{},
		{KeyPrefix: "IDEMPOTENCY#"},
		{PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY"},
		{Attributes: idemtable.Attributes{Status: "state", ExpiresAt: "ttl"}},
	}
	for _, l := range ok {
		check.NoError(t, l.Validate(), "%+v", l)
	}
	bad := map[string]idemtable.Layout{
		"sort key without partition value": {SortKey: "SK"},
		"partition value without sort key": {PartitionValue: "IDEMPOTENCY"},
		"key named like an attribute":      {PartitionKey: "status"},
		"sort key is the partition key":    {PartitionKey: "PK", SortKey: "PK", PartitionValue: "I"},
		"two attributes share a name":      {Attributes: idemtable.Attributes{Status: "x", Fingerprint: "x"}},
		"attribute takes a default name":   {Attributes: idemtable.Attributes{Status: "fingerprint"}},
		"prefix too long":                  {KeyPrefix: strings.Repeat("p", 257)},
		"partition value too long":         {PartitionKey: "PK", SortKey: "SK", PartitionValue: strings.Repeat("p", 2049)},
		"name with spaces":                 {PartitionKey: " id"},
	}
	for name, l := range bad {
		check.Error(t, l.Validate(), name)
	}
}

func TestLayoutKeyAndIDInvertEachOther(t *testing.T) {
	t.Parallel()
	const id = "v1|14:POST /products|6:user-1|3:k-1"
	for _, l := range []idemtable.Layout{
		{}, {KeyPrefix: "IDEMPOTENCY#"},
		{PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY", KeyPrefix: "IDEM#"},
	} {
		key := l.Key(id)
		got, ok := l.ID(key)
		must.True(t, ok, "%+v", l)
		check.Equal(t, id, got)
	}
	single := idemtable.Layout{PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY"}
	_, ok := single.ID(map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "ORDER"}, "SK": &types.AttributeValueMemberS{Value: id},
	})
	check.False(t, ok, "another partition's item is no record")
	_, ok = idemtable.Layout{KeyPrefix: "IDEMPOTENCY#"}.ID(map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}})
	check.False(t, ok, "an id without the prefix is no record")
}

func TestLayoutLimitsAndLeadingKeys(t *testing.T) {
	t.Parallel()
	check.Equal(t, 2048, idemtable.Layout{}.MaxIDLength())
	check.Equal(t, 2048-12, idemtable.Layout{KeyPrefix: "IDEMPOTENCY#"}.MaxIDLength())
	check.Equal(t, 1024, idemtable.Layout{SortKey: "SK", PartitionValue: "I"}.MaxIDLength())

	check.Equal(t, idemtable.LeadingKeyPrefix("POST /p"), idemtable.Layout{}.LeadingKeyPrefix("POST /p"))
	check.Equal(t, "IDEMPOTENCY#v1|7:POST /p|", idemtable.Layout{KeyPrefix: "IDEMPOTENCY#"}.LeadingKeyPrefix("POST /p"))
	check.Equal(t, "IDEMPOTENCY", idemtable.Layout{PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY"}.LeadingKeyPrefix("POST /p"),
		"a static partition: LeadingKeys cannot tell operations apart")
}

func TestInputFollowsTheLayout(t *testing.T) {
	t.Parallel()
	in := idemtable.Input("t", idemtable.Layout{PartitionKey: "PK", SortKey: "SK", PartitionValue: "I"})
	must.Len(t, in.KeySchema, 2)
	check.Equal(t, "PK", *in.KeySchema[0].AttributeName)
	check.Equal(t, types.KeyTypeHash, in.KeySchema[0].KeyType)
	check.Equal(t, "SK", *in.KeySchema[1].AttributeName)
	check.Equal(t, types.KeyTypeRange, in.KeySchema[1].KeyType)
	def := idemtable.Input("t", idemtable.Layout{})
	must.Len(t, def.KeySchema, 1)
	check.Equal(t, idemtable.KeyAttribute, *def.KeySchema[0].AttributeName)
}
