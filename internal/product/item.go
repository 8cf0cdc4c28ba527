package product

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/money"
)

// Products table attributes (README.md, Tables).
const (
	attrID         = "id"
	attrName       = "name"
	attrPriceCents = "price_cents"
	attrCurrency   = "currency"
	attrSellerID   = "seller_id"
	attrCreatedAt  = "created_at"
)

// ErrCorrupt reports a stored product that no longer passes validation.
var ErrCorrupt = errors.New("product: corrupt item")

// Item encodes the product as a products table item.
func (p Product) Item() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrID:         &types.AttributeValueMemberS{Value: p.id.String()},
		attrName:       &types.AttributeValueMemberS{Value: p.name},
		attrPriceCents: &types.AttributeValueMemberN{Value: strconv.FormatInt(p.price.Cents(), 10)},
		attrCurrency:   &types.AttributeValueMemberS{Value: string(p.price.Currency())},
		attrSellerID:   &types.AttributeValueMemberS{Value: p.sellerID.String()},
		attrCreatedAt:  &types.AttributeValueMemberS{Value: p.createdAt.Format(TimeLayout)},
	}
}

// FromItem decodes a products table item through New and money.New, so a
// hand-edited or legacy item is checked like any other input.
func FromItem(item map[string]types.AttributeValue) (Product, error) {
	s := func(name string) (string, error) {
		v, ok := item[name].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("%w: %s missing or not a string", ErrCorrupt, name)
		}
		return v.Value, nil
	}
	idStr, err := s(attrID)
	if err != nil {
		return Product{}, err
	}
	name, err := s(attrName)
	if err != nil {
		return Product{}, err
	}
	cur, err := s(attrCurrency)
	if err != nil {
		return Product{}, err
	}
	sellerStr, err := s(attrSellerID)
	if err != nil {
		return Product{}, err
	}
	createdStr, err := s(attrCreatedAt)
	if err != nil {
		return Product{}, err
	}
	n, ok := item[attrPriceCents].(*types.AttributeValueMemberN)
	if !ok {
		return Product{}, fmt.Errorf("%w: %s missing or not a number", ErrCorrupt, attrPriceCents)
	}
	cents, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return Product{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, attrPriceCents, err)
	}
	id, err1 := uuid.Parse(idStr)
	seller, err2 := uuid.Parse(sellerStr)
	created, err3 := time.Parse(time.RFC3339Nano, createdStr)
	currency, err4 := money.ParseCurrency(cur)
	price, err5 := money.New(cents, currency)
	for _, e := range []error{err1, err2, err3, err4, err5} {
		if e != nil {
			return Product{}, fmt.Errorf("%w: %w", ErrCorrupt, e)
		}
	}
	p, err := New(id, name, price, seller, created)
	if err != nil {
		return Product{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return p, nil
}
