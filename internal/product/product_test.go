package product_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/money"
)

func eur(t *testing.T, cents int64) money.Money {
	t.Helper()
	m, err := money.New(cents, money.EUR)
	require.NoError(t, err)
	return m
}

func TestNewValidatesEveryRule(t *testing.T) {
	t.Parallel()
	id, seller := uuid.New(), uuid.New()
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.FixedZone("X", 7200))
	p, err := product.New(id, "  Widget  ", eur(t, 999), seller, at)
	require.NoError(t, err)
	assert.Equal(t, "Widget", p.Name())
	assert.Equal(t, time.Date(2026, 11, 29, 10, 0, 0, 123000000, time.UTC), p.CreatedAt())
	assert.Equal(t, product.CreatedData{
		ID: id.String(), Name: "Widget", PriceCents: 999, Currency: "EUR",
		SellerID: seller.String(), CreatedAt: "2026-11-29T10:00:00.123Z",
	}, p.CreatedData())

	_, err = product.New(uuid.Nil, "", money.Money{}, uuid.Nil, time.Time{})
	var verr *product.ValidationError
	require.ErrorAs(t, err, &verr)
	require.ErrorIs(t, err, product.ErrValidation)
	fields := []string{}
	for _, e := range verr.Errors {
		fields = append(fields, e.Field)
	}
	assert.Equal(t, []string{"id", "name", "price_cents", "seller_id", "created_at"}, fields)

	_, err = product.New(id, "W", eur(t, 0), seller, at)
	require.ErrorIs(t, err, product.ErrValidation, "a zero price is a valid Money but not a valid product price")
}

// A price is at most MaxPriceCents (12 digits) in every currency, on
// every way in: the API's command, New, and so a products table item and
// an event's data, whoever wrote them.
func TestThePriceIsBounded(t *testing.T) {
	t.Parallel()
	id, seller, at := uuid.New(), uuid.New(), time.Now()
	for _, cur := range money.Currencies() {
		top, err := money.New(product.MaxPriceCents, cur)
		require.NoError(t, err)
		over, err := money.New(product.MaxPriceCents+1, cur)
		require.NoError(t, err)

		_, err = product.New(id, "W", top, seller, at)
		assert.NoError(t, err, "%s at the bound", cur)
		_, err = product.New(id, "W", over, seller, at)
		assert.ErrorIs(t, err, product.ErrValidation, "%s past the bound", cur)

		in := product.CreateInput{Name: "W", PriceCents: product.MaxPriceCents, Currency: string(cur), SellerID: seller.String()}
		_, err = product.NewCreateCommand(in)
		assert.NoError(t, err, "%s at the bound", cur)
		in.PriceCents++
		_, err = product.NewCreateCommand(in)
		var verr *product.ValidationError
		require.ErrorAs(t, err, &verr, "%s past the bound", cur)
		assert.Equal(t, []product.FieldError{{Field: "price_cents", Message: "must be at most 999999999999 (12 digits in the currency's minor unit)"}}, verr.Errors)
	}
	p, err := product.New(id, "W", eur(t, product.MaxPriceCents), seller, at)
	require.NoError(t, err)
	item := p.Item()
	item["price_cents"] = &types.AttributeValueMemberN{Value: "1000000000000"}
	_, err = product.FromItem(item)
	assert.ErrorIs(t, err, product.ErrCorrupt, "an item past the bound")
	data := p.CreatedData()
	data.PriceCents = product.MaxPriceCents + 1
	b, err := json.Marshal(data)
	require.NoError(t, err)
	_, err = product.DecodeCreatedData(b)
	assert.ErrorIs(t, err, product.ErrValidation, "an event past the bound")
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"Widget": "Widget", " \tWidget\n": "Widget", "Café ☕": "Café ☕", strings.Repeat("é", 200): strings.Repeat("é", 200)} {
		got, msg := product.CheckName(in)
		assert.Empty(t, msg, in)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "   ", strings.Repeat("é", 201), "a\x00b", "a\u0085b", "a\u2028b", "\xff"} {
		_, msg := product.CheckName(in)
		assert.NotEmpty(t, msg, "%q", in)
	}
}

func TestCreateCommand(t *testing.T) {
	t.Parallel()
	in := product.CreateInput{Name: " Widget ", PriceCents: 999, Currency: "EUR", SellerID: "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}
	cmd, err := product.NewCreateCommand(in)
	require.NoError(t, err)
	assert.Equal(t, "Widget", cmd.Name())
	assert.Equal(t, int64(999), cmd.Price().Cents())
	assert.Equal(t, in.SellerID, cmd.SellerID().String())

	_, err = product.NewCreateCommand(product.CreateInput{PriceCents: -1, Currency: "BTC", SellerID: "x"})
	var verr *product.ValidationError
	require.ErrorAs(t, err, &verr)
	assert.Len(t, verr.Errors, 4)
	assert.Contains(t, err.Error(), "EUR", "the message lists the supported currencies")
}

func TestItemRoundTripAndCorruptItems(t *testing.T) {
	t.Parallel()
	p, err := product.New(uuid.New(), "Widget", eur(t, 999), uuid.New(), time.Now())
	require.NoError(t, err)
	back, err := product.FromItem(p.Item())
	require.NoError(t, err)
	assert.Equal(t, p, back)

	corrupt := func(name string, av types.AttributeValue) map[string]types.AttributeValue {
		item := p.Item()
		if av == nil {
			delete(item, name)
		} else {
			item[name] = av
		}
		return item
	}
	for name, item := range map[string]map[string]types.AttributeValue{
		"no id":          corrupt("id", nil),
		"id not uuid":    corrupt("id", &types.AttributeValueMemberS{Value: "x"}),
		"name number":    corrupt("name", &types.AttributeValueMemberN{Value: "1"}),
		"empty name":     corrupt("name", &types.AttributeValueMemberS{Value: " "}),
		"negative price": corrupt("price_cents", &types.AttributeValueMemberN{Value: "-1"}),
		"zero price":     corrupt("price_cents", &types.AttributeValueMemberN{Value: "0"}),
		"float price":    corrupt("price_cents", &types.AttributeValueMemberN{Value: "9.99"}),
		"price string":   corrupt("price_cents", &types.AttributeValueMemberS{Value: "999"}),
		"bad currency":   corrupt("currency", &types.AttributeValueMemberS{Value: "XXX"}),
		"no seller":      corrupt("seller_id", nil),
		"bad time":       corrupt("created_at", &types.AttributeValueMemberS{Value: "yesterday"}),
		"creator number": corrupt("created_by", &types.AttributeValueMemberN{Value: "1"}),
		"nil":            nil,
	} {
		_, err := product.FromItem(item)
		assert.True(t, errors.Is(err, product.ErrCorrupt), "%s: %v", name, err)
	}
}
