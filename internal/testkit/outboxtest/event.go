package outboxtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// ProductCreated is a new product of seller at price and the
// ProductCreated event, from source, that the outbox carries for it and
// the relay publishes.
func ProductCreated(tb testing.TB, source string, seller uuid.UUID, price money.Money) (product.Product, outbox.Event) {
	tb.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := product.New(id, "Widget", price, seller, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	body, err := json.Marshal(p.CreatedData())
	if err != nil {
		tb.Fatal(err)
	}
	ev, err := outbox.NewEvent(source, product.EventCreated, id.String(), body, p.CreatedAt())
	if err != nil {
		tb.Fatal(err)
	}
	return p, ev
}
