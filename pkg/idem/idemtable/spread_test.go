package idemtable_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// spread is a single-table design whose records spread over partitions:
// the scope's ID in the partition key, a fixed sort key value.
var spread = idemtable.Layout{PartitionKey: "PK", SortKey: "SK", SortValue: "#IDEMPOTENCY", KeyPrefix: "IDEM#"}

func TestASortValueLayoutIsValidAndAloneOfItsKind(t *testing.T) {
	t.Parallel()
	for _, l := range []idemtable.Layout{spread, {PartitionKey: "PK", SortKey: "SK", SortValue: strings.Repeat("s", 1024)}} {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	bad := map[string]idemtable.Layout{
		"both fixed values":               {PartitionKey: "PK", SortKey: "SK", PartitionValue: "I", SortValue: "I"},
		"a sort value without a sort key": {SortValue: "I"},
		"a sort key with no fixed value":  {PartitionKey: "PK", SortKey: "SK"},
		"a sort value past 1024 bytes":    {PartitionKey: "PK", SortKey: "SK", SortValue: strings.Repeat("s", 1025)},
		"a partition value past 2048":     {PartitionKey: "PK", SortKey: "SK", PartitionValue: strings.Repeat("p", 2049)},
	}
	for name, l := range bad {
		if err := l.Validate(); err == nil {
			t.Errorf("%s: %+v validates", name, l)
		}
	}
}

func TestASortValueLayoutKeysEachRecordByItsID(t *testing.T) {
	t.Parallel()
	const id = "v1|14:POST /products|6:user-1|3:k-1"
	key := spread.Key(id)
	if got := key["PK"].(*types.AttributeValueMemberS).Value; got != "IDEM#"+id {
		t.Errorf("partition key %q, want the prefixed ID", got)
	}
	if got := key["SK"].(*types.AttributeValueMemberS).Value; got != "#IDEMPOTENCY" {
		t.Errorf("sort key %q, want the fixed value", got)
	}
	if got, ok := spread.ID(key); !ok || got != id {
		t.Errorf("ID(Key(id)) = %q, %v", got, ok)
	}
	other := map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "IDEM#" + id}, "SK": &types.AttributeValueMemberS{Value: "ORDER#1"},
	}
	if _, ok := spread.ID(other); ok {
		t.Error("an item of the same partition with another sort key is no record")
	}
	unprefixed := map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: id}, "SK": &types.AttributeValueMemberS{Value: "#IDEMPOTENCY"},
	}
	if _, ok := spread.ID(unprefixed); ok {
		t.Error("a partition key without the prefix is no record")
	}
	// The partition key holds the ID: 2048 bytes less the prefix.
	if got := spread.MaxIDLength(); got != 2048-len("IDEM#") {
		t.Errorf("MaxIDLength = %d", got)
	}
	in := idemtable.Input("app", spread)
	if len(in.KeySchema) != 2 || *in.KeySchema[0].AttributeName != "PK" || *in.KeySchema[1].AttributeName != "SK" {
		t.Errorf("key schema %+v", in.KeySchema)
	}
}

// With the ID in the partition key, LeadingKeys confines a role to one
// operation's records: every record of the operation begins with the
// prefix, and no record of another operation does.
func TestASortValueLayoutConfinesARoleToOneOperation(t *testing.T) {
	t.Parallel()
	if got := spread.LeadingKeyPrefix("POST /p"); got != "IDEM#v1|7:POST /p|" {
		t.Errorf("LeadingKeyPrefix = %q", got)
	}
	rng := rand.New(rand.NewPCG(28, 4))
	const alphabet = "|:#0123456789v1ab"
	part := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 5000 {
		op, other := part(), part()
		sc, err := idem.NewScope(op, part(), part())
		if err != nil {
			t.Fatal(err)
		}
		pk := spread.Key(sc.ID())["PK"].(*types.AttributeValueMemberS).Value
		if !strings.HasPrefix(pk, spread.LeadingKeyPrefix(op)) {
			t.Fatalf("%q lacks its operation's prefix %q", pk, spread.LeadingKeyPrefix(op))
		}
		if other != op && strings.HasPrefix(pk, spread.LeadingKeyPrefix(other)) {
			t.Fatalf("%q (operation %q) begins with the prefix of %q", pk, op, other)
		}
	}
}
