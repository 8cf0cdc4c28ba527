// Package product holds the Product entity, the command that creates one,
// the writes a creation implies (the product and its ProductCreated event,
// to be committed together), the event's data contract and the reader.
// It knows nothing of HTTP or of idempotency keys: internal/api makes
// creation idempotent and renders it.
package product

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/money"
)

// MaxNameLength is the longest product name, in characters after trimming.
const MaxNameLength = 200

// MaxPriceCents is the highest price, in the currency's minor unit:
// 999,999,999,999, twelve digits, the largest amount a card network's
// message carries (ISO 8583, field 4, "amount, transaction": n12 in minor
// units), so no price this API accepts is one a payment could not
// settle. It is 9,999,999,999.99 EUR, USD or CHF, 999,999,999,999 JPY,
// 999,999,999.999 KWD: above anything sold as one product. It leaves
// every price exact in a JSON client that reads numbers as float64
// (below 2^53), and the seller statistics 10^26 events per shard before
// a total reaches DynamoDB's 38 digits (internal/sellers, MaxShardValue).
// The bound is the product's, on every way in (the API's command, New,
// so FromItem and DecodeCreatedData too); money.Money, which also holds
// totals, keeps int64's range.
const MaxPriceCents = 999_999_999_999

// TimeLayout is the wire form of created_at: RFC 3339, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// ErrValidation reports input that breaks a product rule. Errors carrying
// field detail are *ValidationError.
var ErrValidation = errors.New("product: validation failed")

// FieldError is one rule broken by one field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError lists every broken rule, so a client fixes them at once.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, f := range e.Errors {
		parts[i] = f.Field + ": " + f.Message
	}
	return fmt.Sprintf("%v: %s", ErrValidation, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrValidation) true.
func (e *ValidationError) Is(target error) bool { return target == ErrValidation }

// add records a broken rule.
func (e *ValidationError) add(field, msg string) { e.Errors = append(e.Errors, FieldError{field, msg}) }

// orNil returns e as an error when it holds anything.
func (e *ValidationError) orNil() error {
	if len(e.Errors) == 0 {
		return nil
	}
	return e
}

// Product is a product for sale. Build it with New; its fields are read
// through methods so no code can make an invalid one.
type Product struct {
	id        uuid.UUID
	name      string
	price     money.Money
	sellerID  uuid.UUID
	createdAt time.Time
	createdBy string
}

// New validates and returns a product. The name is trimmed; the price must
// be a valid Money above zero and at most MaxPriceCents; ids must not be
// the nil UUID. createdAt is
// kept in UTC at millisecond precision, the precision of its wire form.
func New(id uuid.UUID, name string, price money.Money, sellerID uuid.UUID, createdAt time.Time) (Product, error) {
	var verr ValidationError
	if id == uuid.Nil {
		verr.add("id", "must not be the nil UUID")
	}
	name, msg := CheckName(name)
	if msg != "" {
		verr.add("name", msg)
	}
	switch {
	case !price.IsValid():
		verr.add("price_cents", "must be a valid amount in a supported currency")
	case price.IsZero():
		verr.add("price_cents", "must be greater than 0")
	case price.Cents() > MaxPriceCents:
		verr.add("price_cents", priceTooHigh)
	}
	if sellerID == uuid.Nil {
		verr.add("seller_id", "must not be the nil UUID")
	}
	if createdAt.IsZero() {
		verr.add("created_at", "must be set")
	}
	if err := verr.orNil(); err != nil {
		return Product{}, err
	}
	return Product{id: id, name: name, price: price, sellerID: sellerID, createdAt: createdAt.UTC().Truncate(time.Millisecond)}, nil
}

// priceTooHigh is the rule a price above MaxPriceCents breaks.
var priceTooHigh = fmt.Sprintf("must be at most %d (12 digits in the currency's minor unit)", MaxPriceCents)

// CheckName trims name and returns it, or a message saying which rule it
// breaks: 1 to 200 characters, valid UTF-8, no control characters.
func CheckName(name string) (string, string) {
	if !utf8.ValidString(name) {
		return "", "must be valid UTF-8"
	}
	name = strings.TrimSpace(name)
	n := utf8.RuneCountInString(name)
	switch {
	case n == 0:
		return "", "must not be empty"
	case n > MaxNameLength:
		return "", fmt.Sprintf("must be at most %d characters, got %d", MaxNameLength, n)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return "", "must not contain control characters"
		}
	}
	return name, ""
}

// ID returns the product id.
func (p Product) ID() uuid.UUID { return p.id }

// Name returns the trimmed name.
func (p Product) Name() string { return p.name }

// Price returns the price.
func (p Product) Price() money.Money { return p.price }

// SellerID returns the seller's id.
func (p Product) SellerID() uuid.UUID { return p.sellerID }

// CreatedAt returns the creation time in UTC.
func (p Product) CreatedAt() time.Time { return p.createdAt }

// CreatedBy returns the principal of the caller that created the product
// (the idempotency scope's, such as iam:<ARN>): the products table's
// record of who created what. It is "" for a product read from an event,
// which does not carry it, and for an item stored before products
// recorded their creator.
func (p Product) CreatedBy() string { return p.createdBy }
