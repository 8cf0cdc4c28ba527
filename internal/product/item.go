package product

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/internal/ids"
	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// Products table attributes (docs/operations.md, Tables).
const (
	attrID         = "id"
	attrName       = "name"
	attrPriceCents = "price_cents"
	attrCurrency   = "currency"
	attrSellerID   = "seller_id"
	attrCreatedAt  = "created_at"
	attrCreatedBy  = "created_by"
)

// ErrCorrupt reports a stored product that no longer passes validation.
var ErrCorrupt = errors.New("product: corrupt item")

// Item encodes the product as a products table item, with its creator
// (created_by) when it has one.
func (p Product) Item() map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attrID:         ddbitem.S(p.id.String()),
		attrName:       ddbitem.S(p.name),
		attrPriceCents: ddbitem.N(p.price.Cents()),
		attrCurrency:   ddbitem.S(string(p.price.Currency())),
		attrSellerID:   ddbitem.S(p.sellerID.String()),
		attrCreatedAt:  ddbitem.S(p.createdAt.Format(TimeLayout)),
	}
	if p.createdBy != "" {
		item[attrCreatedBy] = ddbitem.S(p.createdBy)
	}
	return item
}

// FromItem decodes a products table item through New and money.New, so a
// hand-edited or legacy item is checked like any other input. created_by
// is optional (items stored before products recorded their creator have
// none), but a string when present.
func FromItem(item map[string]types.AttributeValue) (Product, error) {
	r := ddbitem.Read(item)
	idStr, name, cur, sellerStr := r.S(attrID), r.S(attrName), r.S(attrCurrency), r.S(attrSellerID)
	cents, created := r.Int(attrPriceCents), r.Time(attrCreatedAt)
	createdBy, _ := r.OptS(attrCreatedBy)
	if err := r.Err(); err != nil {
		return Product{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	id, err1 := ids.Parse(idStr)
	seller, err2 := ids.Parse(sellerStr)
	currency, err3 := money.ParseCurrency(cur)
	price, err4 := money.New(cents, currency)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Product{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	p, err := New(id, name, price, seller, created)
	if err != nil {
		return Product{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	p.createdBy = createdBy
	return p, nil
}
