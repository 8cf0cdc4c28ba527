package product

import (
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/ids"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// CreateInput is a create request as the API decoded it: types checked,
// rules not yet.
type CreateInput struct {
	Name       string
	PriceCents int64
	Currency   string
	SellerID   string
}

// CreateCommand is a create request that passed every rule.
type CreateCommand struct {
	name      string
	price     money.Money
	sellerID  uuid.UUID
	createdBy string
}

// NewCreateCommand checks every field and reports all broken rules at once
// as a *ValidationError.
func NewCreateCommand(in CreateInput) (CreateCommand, error) {
	var verr ValidationError
	name, msg := CheckName(in.Name)
	if msg != "" {
		verr.add("name", msg)
	}
	currency, cerr := money.ParseCurrency(in.Currency)
	if cerr != nil {
		verr.add("currency", "must be a supported ISO 4217 code ("+supportedList()+")")
	}
	var price money.Money
	switch {
	case in.PriceCents <= 0:
		verr.add("price_cents", "must be an integer greater than 0")
	case in.PriceCents > MaxPriceCents:
		verr.add("price_cents", priceTooHigh)
	case cerr == nil:
		p, err := money.New(in.PriceCents, currency)
		if err != nil {
			verr.add("price_cents", err.Error())
		}
		price = p
	}
	seller, err := ids.Parse(in.SellerID)
	if err != nil {
		verr.add("seller_id", "must be a UUID such as 3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b")
	}
	if err := verr.orNil(); err != nil {
		return CreateCommand{}, err
	}
	return CreateCommand{name: name, price: price, sellerID: seller}, nil
}

// Name returns the trimmed name.
func (c CreateCommand) Name() string { return c.name }

// Price returns the price.
func (c CreateCommand) Price() money.Money { return c.price }

// SellerID returns the seller's id.
func (c CreateCommand) SellerID() uuid.UUID { return c.sellerID }

// By returns the command as made by the caller named principal (its
// idempotency scope's principal), whom the product records as its
// creator. Service.Create refuses a command no caller made.
func (c CreateCommand) By(principal string) CreateCommand {
	c.createdBy = principal
	return c
}

// CreatedBy returns the principal of the caller making the command.
func (c CreateCommand) CreatedBy() string { return c.createdBy }

func supportedList() string {
	s := ""
	for i, c := range money.Currencies() {
		if i > 0 {
			s += ", "
		}
		s += string(c)
	}
	return s
}
