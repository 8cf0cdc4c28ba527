package money

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Money implements attributevalue's Marshaler and Unmarshaler, which its
// tests assert: importing attributevalue here would link it, and the
// DynamoDB Streams types it imports, into every binary that uses Money,
// and their initialisers would run at each of its cold starts.

// MarshalDynamoDBAttributeValue encodes m as a map
// {"cents": N("1999"), "currency": S("EUR")}, mirroring the JSON form. An
// invalid Money (the zero value) fails with ErrValidation, so it never
// reaches the table.
func (m Money) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		fieldCents:    &types.AttributeValueMemberN{Value: strconv.FormatInt(m.minor, 10)},
		fieldCurrency: &types.AttributeValueMemberS{Value: string(m.currency)},
	}}, nil
}

// UnmarshalDynamoDBAttributeValue decodes the map written by
// MarshalDynamoDBAttributeValue through New, so an item edited by hand or by
// another writer is revalidated. It requires exactly the members "cents"
// (an N holding a non-negative integer that fits in int64: no "1.5", "1e3")
// and "currency" (an S holding a supported code). NULL, nil, other types,
// missing or extra members fail with ErrValidation; on error m is left
// unchanged.
func (m *Money) UnmarshalDynamoDBAttributeValue(av types.AttributeValue) error {
	if m == nil {
		return fmt.Errorf("%w: UnmarshalDynamoDBAttributeValue on nil *Money", ErrValidation)
	}
	mv, ok := av.(*types.AttributeValueMemberM)
	if !ok || mv == nil || mv.Value == nil {
		return fmt.Errorf("%w: DynamoDB money must be a map, got %s", ErrValidation, avKind(av))
	}
	if len(mv.Value) != 2 {
		return fmt.Errorf("%w: DynamoDB money map must have exactly %q and %q, got %d members",
			ErrValidation, fieldCents, fieldCurrency, len(mv.Value))
	}
	n, ok := mv.Value[fieldCents].(*types.AttributeValueMemberN)
	if !ok || n == nil {
		return fmt.Errorf("%w: DynamoDB member %q must be N, got %s", ErrValidation, fieldCents, avKind(mv.Value[fieldCents]))
	}
	s, ok := mv.Value[fieldCurrency].(*types.AttributeValueMemberS)
	if !ok || s == nil {
		return fmt.Errorf("%w: DynamoDB member %q must be S, got %s", ErrValidation, fieldCurrency, avKind(mv.Value[fieldCurrency]))
	}
	cents, err := parseMinor(n.Value)
	if err != nil {
		return err
	}
	v, err := New(cents, Currency(s.Value))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// avKind names an attribute value's type for error messages.
func avKind(av types.AttributeValue) string {
	switch av.(type) {
	case nil:
		return "nothing"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	default:
		return fmt.Sprintf("%T", av)
	}
}
