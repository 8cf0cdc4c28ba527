package sellers_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/pkg/ddbitem"
)

// The counter is events in, writes out: a batch's listings become one
// update per seller, on the shard asked for, adding its products and each
// currency's total under the shard's cap. It calls nothing.
func TestTheCounterWritesOneUpdatePerSeller(t *testing.T) {
	t.Parallel()
	c, err := sellers.NewCounter("sellers")
	require.NoError(t, err)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { return now }
	a, b := "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b", "0b6e1f9a-2c3d-4e5f-8a7b-6c5d4e3f2a1b"
	writes := c.Writes([]sellers.Listing{
		{EventID: "e1", SellerID: a, ProductID: "p1", Currency: "EUR", Cents: 100},
		{EventID: "e2", SellerID: b, ProductID: "p2", Currency: "USD", Cents: 7},
		{EventID: "e3", SellerID: a, ProductID: "p3", Currency: "EUR", Cents: 250},
		{EventID: "e4", SellerID: a, ProductID: "p4", Currency: "USD", Cents: 1},
	}, func(seller string) int { return map[string]int{a: 3, b: 8}[seller] })
	require.Len(t, writes, 2, "one update per seller, in first-seen order")

	ua := writes[0].Update
	require.NotNil(t, ua)
	assert.Equal(t, "sellers", aws.ToString(ua.TableName))
	assert.Equal(t, map[string]types.AttributeValue{"seller_id": ddbitem.S(a), "shard": ddbitem.N(3)}, ua.Key)
	assert.Equal(t, "ADD #count :n, #c0 :c0, #c1 :c1 SET #updated = :now", aws.ToString(ua.UpdateExpression))
	assert.Equal(t, map[string]string{"#count": "product_count", "#updated": "updated_at", "#c0": "cents_EUR", "#c1": "cents_USD"}, ua.ExpressionAttributeNames)
	// Each shard holds up to 38 nines, DynamoDB's largest integer.
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	assert.Equal(t, map[string]types.AttributeValue{
		":n": n("3"), ":count_limit": n("99999999999999999999999999999999999996"), ":now": ddbitem.Time(now),
		":c0": n("350"), ":l0": n("99999999999999999999999999999999999649"),
		":c1": n("1"), ":l1": n("99999999999999999999999999999999999998"),
	}, ua.ExpressionAttributeValues)
	assert.Equal(t, "(attribute_not_exists(#count) OR #count <= :count_limit) AND (attribute_not_exists(#c0) OR #c0 <= :l0) AND (attribute_not_exists(#c1) OR #c1 <= :l1)",
		aws.ToString(ua.ConditionExpression))

	ub := writes[1].Update
	require.NotNil(t, ub)
	assert.Equal(t, map[string]types.AttributeValue{"seller_id": ddbitem.S(b), "shard": ddbitem.N(8)}, ub.Key)
	assert.Equal(t, n("7"), ub.ExpressionAttributeValues[":c0"])
}

// A batch whose sum alone passes a shard's cap gets a condition that can
// never hold, so the consumer tries its events in smaller sets; its
// update uses every placeholder it names, as DynamoDB requires.
func TestTheCounterRefusesASumPastTheCap(t *testing.T) {
	t.Parallel()
	c, err := sellers.NewCounter("sellers")
	require.NoError(t, err)
	c.Cap = big.NewInt(1000)
	seller := "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"
	writes := c.Writes([]sellers.Listing{
		{EventID: "e1", SellerID: seller, Currency: "EUR", Cents: 600},
		{EventID: "e2", SellerID: seller, Currency: "EUR", Cents: 600},
	}, func(string) int { return 0 })
	require.Len(t, writes, 1)
	u := writes[0].Update
	assert.Equal(t, "attribute_exists(#count) AND attribute_not_exists(#count)", aws.ToString(u.ConditionExpression))
	assert.Equal(t, "ADD #count :n SET #updated = :now", aws.ToString(u.UpdateExpression))
	assert.Len(t, u.ExpressionAttributeNames, 2)
	assert.Len(t, u.ExpressionAttributeValues, 2)

	_, err = sellers.NewCounter("")
	assert.Error(t, err)
}

// On a global table each Region's consumers write shards of their own:
// last writer wins, per item, would otherwise lose one Region's ADD to
// another's. Every shard of one Region differs from every shard of the
// other, one Region alone keeps shards 0 to 9, and a Region not among the
// table's is refused.
func TestEachRegionCountsOnShardsOfItsOwn(t *testing.T) {
	t.Parallel()
	regions := []string{"us-east-1", "eu-west-1", "us-west-2"}
	seller := "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"
	listing := []sellers.Listing{{EventID: "e1", SellerID: seller, Currency: "EUR", Cents: 1}}
	written := map[string]string{} // shard number: the Region that wrote it
	for _, r := range regions {
		first, err := sellers.RegionShards(regions, r)
		require.NoError(t, err)
		c, err := sellers.NewCounter("sellers")
		require.NoError(t, err)
		c.FirstShard = first
		for k := range c.Shards {
			u := c.Writes(listing, func(string) int { return k })[0].Update
			shard := u.Key["shard"].(*types.AttributeValueMemberN).Value
			prev, seen := written[shard]
			require.False(t, seen, "shard %s written by %s and %s", shard, prev, r)
			written[shard] = r
		}
	}
	assert.Len(t, written, len(regions)*sellers.Shards)
	assert.Less(t, sellers.Shards, sellers.RegionStride, "a Region's shards stay in its range")

	first, err := sellers.RegionShards(nil, "us-east-1")
	require.NoError(t, err)
	assert.Zero(t, first, "one Region: the shards it always wrote")
	first, err = sellers.RegionShards(regions, "us-east-1")
	require.NoError(t, err)
	assert.Zero(t, first, "the first Region keeps them when the table becomes global")
	_, err = sellers.RegionShards(regions, "ap-south-1")
	assert.ErrorContains(t, err, "ap-south-1")
}
