package sellersqs_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// Nine events delivered before and one new, in one batch: the new one is
// counted in at most two transactions, the nine are acknowledged.
func TestABatchOfNineDuplicatesAndOneNewEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seller := uuid.New()
	var old []created
	var first []events.SQSMessage
	for i := range 9 {
		c := newProduct(t, seller, eur(t, int64(1+i)))
		old = append(old, c)
		first = append(first, c.delivery(t, 1))
	}
	require.Empty(t, failedIDs(f.handle(t, first...)))
	fresh := newProduct(t, seller, eur(t, 1000))
	batch := []events.SQSMessage{fresh.delivery(t, 1)}
	for _, c := range old {
		batch = append(batch, c.delivery(t, 2))
	}
	f.env.Counter.Reset()
	resp := f.handle(t, batch...)
	assert.Empty(t, failedIDs(resp), "the nine are acknowledged")
	assert.LessOrEqual(t, f.env.Counter.Get("TransactWriteItems"), 2)
	t.Logf("9 duplicates + 1 new: %s", f.env.Counter)
	assert.Contains(t, f.logs.String(), `"applied":1,"duplicate":9,"poison":0,"failed":0`)
	got, err := f.reader.Get(context.Background(), seller)
	require.NoError(t, err)
	assert.Equal(t, sellers.NumberOf(10), got.ProductCount)
	assert.Equal(t, listed(eur(t, 45+1000)), got.Listed)
}

// Poison, duplicates and new events of three sellers in two currencies,
// in one batch: only the poison is reported, and every seller's count and
// totals are right.
func TestABatchMixingPoisonDuplicatesAndSellersReportsOnlyThePoison(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	usd := func(cents int64) money.Money {
		m, err := money.New(cents, "USD")
		require.NoError(t, err)
		return m
	}
	s1, s2, s3 := uuid.New(), uuid.New(), uuid.New()
	seen := []created{newProduct(t, s1, eur(t, 100)), newProduct(t, s2, usd(200))}
	var before []events.SQSMessage
	for _, c := range seen {
		before = append(before, c.delivery(t, 1))
	}
	require.Empty(t, failedIDs(f.handle(t, before...)))

	fresh := []created{
		newProduct(t, s1, usd(7)), newProduct(t, s1, eur(t, 11)),
		newProduct(t, s2, usd(13)), newProduct(t, s3, eur(t, 17)), newProduct(t, s3, usd(19)),
	}
	batch := []events.SQSMessage{eventbus.Message("poison-1", `{"detail-type":`, 1)}
	for i, c := range fresh {
		batch = append(batch, c.delivery(t, 1))
		if i < len(seen) {
			batch = append(batch, seen[i].delivery(t, 2))
		}
	}
	batch = append(batch, fresh[0].delivery(t, 2)) // a duplicate inside the batch
	batch = append(batch, eventbus.Message("poison-2", `{"not":"an event"}`, 1))
	resp := f.handle(t, batch...)
	assert.ElementsMatch(t, []string{"poison-1", "poison-2"}, failedIDs(resp))
	assert.Contains(t, f.logs.String(), `"applied":5,"duplicate":3,"poison":2,"failed":0`)

	want := map[uuid.UUID][]money.Money{
		s1: {eur(t, 111), usd(7)},
		s2: {usd(213)},
		s3: {eur(t, 17), usd(19)},
	}
	counts := map[uuid.UUID]uint64{s1: 3, s2: 2, s3: 2}
	for s, w := range want {
		got, err := f.reader.Get(context.Background(), s)
		require.NoError(t, err)
		assert.Equal(t, sellers.NumberOf(counts[s]), got.ProductCount, "seller %s", s)
		assert.Equal(t, listed(w...), got.Listed, "seller %s", s)
	}
}
