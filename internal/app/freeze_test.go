package app_test

import (
	"fmt"
	"math/big"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/sellers"
)

// The freeze of issue 35: ten POSTs at 922337203685477580 cents filled
// every shard of seller S (each held at most int64's limit over ten);
// then each later product of S got 201 while its event failed five
// times and went to the dead-letter queue, and S's statistics never
// changed again. Replayed whole here, then at the price bound, and on a
// seller T left frozen by the old code: every product that got 201 is
// counted exactly once, nothing is dead-lettered, and both sellers'
// statistics read back exact, past int64.
func TestNoCallerCanFreezeASellersStatistics(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, 35)
	s, frozen := uuid.NewString(), uuid.NewString()
	body := func(seller, name string, cents int64) string {
		return fmt.Sprintf(`{"name":%q,"price_cents":%d,"currency":"EUR","seller_id":%q}`, name, cents, seller)
	}
	created := map[string][]string{} // product ids by seller
	want := map[string]*big.Int{s: new(big.Int), frozen: new(big.Int)}
	post := func(seller, key string, cents int64) int {
		a := p.post(key, body(seller, "Widget", cents))
		t.Logf("POST %s at %d: %d %s", key, cents, a.status, compact(a.body))
		if a.status == 201 {
			created[seller] = append(created[seller], createdID(t, a))
			want[seller].Add(want[seller], big.NewInt(cents))
		}
		return a.status
	}
	for i := range 10 {
		assert.Equal(t, 400, post(s, fmt.Sprintf("fill-%d", i), 922337203685477580), "past the price bound")
	}
	for i := range 10 {
		assert.Equal(t, 201, post(s, fmt.Sprintf("bound-%d", i), product.MaxPriceCents))
	}
	p.drain()
	require.Equal(t, 201, post(s, "later", 999))

	// T as the old consumer left it after the freeze: every shard at
	// its old cap.
	for shard := range sellers.Shards {
		p.putShard(frozen, shard, "1", "922337203685477580")
	}
	want[frozen].SetString("9223372036854775800", 10)
	require.Equal(t, 201, post(frozen, "after-the-fix", 999))
	p.drain()

	assert.Empty(t, p.deadEvents(), "nothing dead-lettered")
	counted, _ := p.counted()
	events := p.eventOf()
	for seller, ids := range created {
		for _, id := range ids {
			require.Len(t, events[id], 1, "product %s of seller %s has one event", id, seller)
			assert.Equal(t, 1, counted[events[id][0]], "product %s of seller %s counted once", id, seller)
		}
	}
	for seller, count := range map[string]int{s: len(created[s]), frozen: sellers.Shards + len(created[frozen])} {
		got := p.getSeller(seller)
		t.Logf("GET /sellers/%s: %d %s", seller, got.status, compact(got.body))
		require.Equal(t, 200, got.status, got.body)
		stats := decodeSeller(t, got)
		assert.Equal(t, strconv.Itoa(count), stats.ProductCount.String())
		require.Len(t, stats.Listed, 1)
		assert.Equal(t, want[seller].String(), stats.Listed[0].Cents.String())
	}
}
