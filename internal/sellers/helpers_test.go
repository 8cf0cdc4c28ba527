package sellers_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/dev/eventbus"
	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/sellers"
	"github.com/idemlambda/idemlambda/internal/testkit/outboxtest"
	"github.com/idemlambda/idemlambda/pkg/money"
)

const source = "idemlambda.products"

// created is one product and the ProductCreated event the relay would
// publish for it.
type created struct {
	product product.Product
	event   outbox.Event
}

func newProduct(t testing.TB, seller uuid.UUID, price money.Money) created {
	t.Helper()
	p, ev := outboxtest.ProductCreated(t, source, seller, price)
	return created{product: p, event: ev}
}

// body is the SQS message body EventBridge would deliver for the event.
func (c created) body(t testing.TB) string {
	t.Helper()
	b, err := eventbus.EventEnvelope(c.event)
	require.NoError(t, err)
	return string(b)
}

func eur(t testing.TB, cents int64) money.Money {
	t.Helper()
	m, err := money.New(cents, "EUR")
	require.NoError(t, err)
	return m
}

// total is a seller's total of cents (decimal digits) in cur.
func total(t testing.TB, cents, cur string) sellers.Total {
	t.Helper()
	n, err := sellers.ParseNumber(cents)
	require.NoError(t, err)
	return sellers.Total{Cents: n, Currency: money.Currency(cur)}
}

func eurTotal(t testing.TB, cents string) sellers.Total { return total(t, cents, "EUR") }

func mustJSON(t testing.TB, e any) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	require.NoError(t, err)
	return b
}
