package app_test

import (
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// The property behind issue 35's freeze, over the whole path: for random
// sequences of requests (prices at the bound and past it, many sellers in
// every currency, client retries of a key), stream batches relayed twice,
// SQS messages delivered twice and batches received in any order, some
// sellers starting from statistics the consumer may have written after
// more events than a test can send (past int64 in all), every 201 leads
// to exactly one event counted exactly once, nothing is dead-lettered,
// no request answers 5xx, and every seller's statistics are exact. Each
// sequence is its seed's: a failure names the seed that replays it.
func TestEveryAcceptedRequestIsCountedExactlyOnce(t *testing.T) {
	t.Parallel()
	for seed := range uint64(12) {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			t.Parallel()
			everyAcceptedRequestCountsOnce(t, seed)
		})
	}
}

// truth is what a seller's statistics must be.
type truth struct {
	count *big.Int
	cents map[money.Currency]*big.Int
}

func everyAcceptedRequestCountsOnce(t *testing.T, seed uint64) {
	p := newPipeline(t, seed)
	rng := p.rng
	sellerIDs := make([]string, 1+rng.IntN(6))
	want := map[string]*truth{}
	for i := range sellerIDs {
		sellerIDs[i] = uuid.NewString()
		want[sellerIDs[i]] = &truth{count: new(big.Int), cents: map[money.Currency]*big.Int{}}
		if rng.IntN(3) == 0 {
			p.seedSeller(sellerIDs[i], want[sellerIDs[i]])
		}
	}
	currencies := money.Currencies()
	type request struct{ key, body string }
	var sent []request
	replies := map[string]answer{} // the first answer per key
	created := map[string]bool{}   // product ids
	price := func() (cents int64, accepted bool) {
		switch rng.IntN(8) {
		case 0:
			return product.MaxPriceCents, true
		case 1:
			return product.MaxPriceCents - rng.Int64N(10), true
		case 2:
			return 1, true
		case 3:
			return product.MaxPriceCents + 1 + rng.Int64N(math.MaxInt64-product.MaxPriceCents), false
		case 4:
			return 1 + rng.Int64N(product.MaxPriceCents), true
		default:
			return 1 + rng.Int64N(100_000), true
		}
	}
	steps := 40 + rng.IntN(40)
	for step := range steps {
		switch r := rng.IntN(20); {
		case r < 11 || len(sent) == 0: // a new request
			seller, cur := sellerIDs[rng.IntN(len(sellerIDs))], currencies[rng.IntN(len(currencies))]
			cents, accepted := price()
			req := request{fmt.Sprintf("k-%d-%d", seed, step), fmt.Sprintf(`{"name":"Widget %d","price_cents":%d,"currency":%q,"seller_id":%q}`, step, cents, cur, seller)}
			a := p.post(req.key, req.body)
			if !accepted {
				require.Equal(t, 400, a.status, "seed %d: %s: %s", seed, req.body, a.body)
				continue
			}
			require.Equal(t, 201, a.status, "seed %d: %s: %s", seed, req.body, a.body)
			sent, replies[req.key] = append(sent, req), a
			id := createdID(t, a)
			require.False(t, created[id])
			created[id] = true
			w := want[seller]
			w.count.Add(w.count, big.NewInt(1))
			if w.cents[cur] == nil {
				w.cents[cur] = new(big.Int)
			}
			w.cents[cur].Add(w.cents[cur], big.NewInt(cents))
		case r < 14: // a client's retry: the first answer again
			req := sent[rng.IntN(len(sent))]
			a := p.post(req.key, req.body)
			require.Equal(t, 201, a.status, "seed %d: retry of %s: %s", seed, req.key, a.body)
			assert.Equal(t, createdID(t, replies[req.key]), createdID(t, a), "seed %d: a retry replays", seed)
		case r < 17: // the stream hands the relay a batch, maybe twice
			p.relayOnce(1+rng.IntN(10), rng.IntN(5) == 0)
		default: // the queue hands the consumer a batch; some twice
			p.consumeOnce(func() bool { return rng.IntN(5) == 0 })
		}
	}
	p.drain()

	require.Empty(t, p.deadEvents(), "seed %d: nothing dead-lettered", seed)
	counted, duplicates := p.counted()
	events := p.eventOf()
	for id := range created {
		require.Len(t, events[id], 1, "seed %d: product %s has one event", seed, id)
		assert.Equal(t, 1, counted[events[id][0]], "seed %d: product %s counted once", seed, id)
	}
	assert.Len(t, events, len(created), "seed %d: no event without a 201", seed)
	assert.Len(t, counted, len(created), "seed %d: nothing else counted", seed)
	for _, seller := range sellerIDs {
		w, got := want[seller], p.getSeller(seller)
		if w.count.Sign() == 0 {
			assert.Equal(t, 404, got.status, "seed %d: %s", seed, got.body)
			continue
		}
		require.Equal(t, 200, got.status, "seed %d: %s", seed, got.body)
		stats := decodeSeller(t, got)
		assert.Equal(t, w.count.String(), stats.ProductCount.String(), "seed %d: seller %s's count", seed, seller)
		listed := map[money.Currency]string{}
		for _, l := range stats.Listed {
			listed[money.Currency(l.Currency)] = l.Cents.String()
		}
		wantListed := map[money.Currency]string{}
		for cur, c := range w.cents {
			wantListed[cur] = c.String()
		}
		assert.Equal(t, wantListed, listed, "seed %d: seller %s's totals", seed, seller)
	}
	t.Logf("seed %d: %d sellers, %d steps, %d products created, %d events counted once, %d duplicate deliveries acknowledged, %d dead-lettered",
		seed, len(sellerIDs), steps, len(created), len(counted), duplicates, len(p.deadEvents()))
}

// seedSeller writes the seller's shards as the consumer may have after
// more events than a test can send: each shard up to 10^18 events at one
// price up to the bound, in EUR, past int64 in all. It adds them to w.
func (p *pipeline) seedSeller(seller string, w *truth) {
	p.t.Helper()
	w.cents[money.EUR] = new(big.Int)
	for shard := range sellers.Shards {
		count := new(big.Int).SetUint64(1 + p.rng.Uint64N(1e18))
		cents := new(big.Int).Mul(count, big.NewInt(1+p.rng.Int64N(product.MaxPriceCents)))
		w.count.Add(w.count, count)
		w.cents[money.EUR].Add(w.cents[money.EUR], cents)
		p.putShard(seller, shard, count.String(), cents.String())
	}
}
