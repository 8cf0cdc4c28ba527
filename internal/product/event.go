package product

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemlambda/idemlambda/internal/ids"
	"github.com/idemlambda/idemlambda/internal/strictjson"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// EventCreated is the type of the event a new product emits.
const EventCreated = "ProductCreated"

// CreatedData is the data of a ProductCreated event: the contract between
// createproduct, which writes it into the outbox, and every consumer, which
// reads it back with DecodeCreatedData. A member may be added; none may be
// renamed or change its type while an event that carries it can still be
// delivered.
type CreatedData struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Currency   string `json:"currency"`
	SellerID   string `json:"seller_id"`
	CreatedAt  string `json:"created_at"`
}

// createdDataMembers are CreatedData's members: all required.
var createdDataMembers = []string{"id", "name", "price_cents", "currency", "seller_id", "created_at"}

// CreatedData returns the data of the product's ProductCreated event.
func (p Product) CreatedData() CreatedData {
	return CreatedData{
		ID: p.id.String(), Name: p.name,
		PriceCents: p.price.Cents(), Currency: string(p.price.Currency()),
		SellerID: p.sellerID.String(), CreatedAt: p.createdAt.Format(TimeLayout),
	}
}

// DecodeCreatedData reads a ProductCreated event's data back into the
// product, as strictly as any other way in: every member present, once,
// spelled exactly and of its JSON type (a price 999.0 or "999" is refused),
// ids in their one UUID spelling, and the product through New and the price
// through money.New. Members it does not know are ignored, so the producer
// may add some.
func DecodeCreatedData(b []byte) (Product, error) {
	var d CreatedData
	if err := strictjson.UnmarshalAll(b, &d, createdDataMembers...); err != nil {
		return Product{}, fmt.Errorf("product: %s data: %w", EventCreated, err)
	}
	id, err1 := ids.Parse(d.ID)
	seller, err2 := ids.Parse(d.SellerID)
	created, err3 := time.Parse(time.RFC3339Nano, d.CreatedAt)
	currency, err4 := money.ParseCurrency(d.Currency)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Product{}, fmt.Errorf("product: %s data: %w", EventCreated, err)
	}
	price, err := money.New(d.PriceCents, currency)
	if err != nil {
		return Product{}, fmt.Errorf("product: %s price: %w", EventCreated, err)
	}
	return New(id, d.Name, price, seller, created)
}
