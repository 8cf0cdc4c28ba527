package money_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
	"github.com/idemlambda/idemlambda/pkg/money"
)

var (
	_ attributevalue.Marshaler   = money.Money{}
	_ attributevalue.Unmarshaler = (*money.Money)(nil)
)

func avN(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }
func avS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func avM(kv map[string]types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: kv}
}

func TestMarshalDynamoDB(t *testing.T) {
	av, err := mustNew(t, 1999, money.EUR).MarshalDynamoDBAttributeValue()
	must.NoError(t, err)
	check.Equal(t, avM(map[string]types.AttributeValue{"cents": avN("1999"), "currency": avS("EUR")}), av)

	_, err = money.Money{}.MarshalDynamoDBAttributeValue()
	check.ErrorIs(t, err, money.ErrValidation)
	_, err = attributevalue.MarshalMap(struct{ Price money.Money }{})
	check.ErrorIs(t, err, money.ErrValidation, "zero value inside an item must not encode")
}

// Round trip through the SDK's reflection-based codec, as the store uses it.
func TestDynamoDBItemRoundTrip(t *testing.T) {
	type item struct {
		Price money.Money  `dynamodbav:"price"`
		Old   *money.Money `dynamodbav:"old"`
	}
	in := item{Price: mustNew(t, math.MaxInt64, money.KWD)}
	av, err := attributevalue.MarshalMap(in)
	must.NoError(t, err)
	var out item
	must.NoError(t, attributevalue.UnmarshalMap(av, &out))
	check.Equal(t, in, out)

	av["price"] = &types.AttributeValueMemberNULL{Value: true}
	check.ErrorIs(t, attributevalue.UnmarshalMap(av, &out), money.ErrValidation)
}

func TestUnmarshalDynamoDB(t *testing.T) {
	var typedNilM *types.AttributeValueMemberM
	var typedNilN *types.AttributeValueMemberN
	var typedNilS *types.AttributeValueMemberS
	good := func(cents, cur types.AttributeValue) types.AttributeValue {
		return avM(map[string]types.AttributeValue{"cents": cents, "currency": cur})
	}

	var m money.Money
	must.NoError(t, m.UnmarshalDynamoDBAttributeValue(good(avN("1999"), avS("EUR"))))
	check.Equal(t, mustNew(t, 1999, money.EUR), m)
	must.NoError(t, m.UnmarshalDynamoDBAttributeValue(good(avN("9223372036854775807"), avS("JPY"))))
	check.Equal(t, mustNew(t, math.MaxInt64, money.JPY), m)

	bad := []struct {
		name     string
		av       types.AttributeValue
		overflow bool
	}{
		{"nil", nil, false},
		{"typed nil map", typedNilM, false},
		{"nil map", avM(nil), false},
		{"empty map", avM(map[string]types.AttributeValue{}), false},
		{"NULL", &types.AttributeValueMemberNULL{Value: true}, false},
		{"S", avS("19.99 EUR"), false},
		{"N", avN("1999"), false},
		{"L", &types.AttributeValueMemberL{Value: []types.AttributeValue{avN("1"), avS("EUR")}}, false},
		{"missing cents", avM(map[string]types.AttributeValue{"currency": avS("EUR")}), false},
		{"missing currency", avM(map[string]types.AttributeValue{"cents": avN("1")}), false},
		{"extra member", avM(map[string]types.AttributeValue{"cents": avN("1"), "currency": avS("EUR"), "x": avS("")}), false},
		{"renamed member", avM(map[string]types.AttributeValue{"Cents": avN("1"), "currency": avS("EUR")}), false},
		{"cents as S", good(avS("1"), avS("EUR")), false},
		{"cents NULL", good(&types.AttributeValueMemberNULL{Value: true}, avS("EUR")), false},
		{"cents nil", good(nil, avS("EUR")), false},
		{"cents typed nil", good(typedNilN, avS("EUR")), false},
		{"currency as N", good(avN("1"), avN("978")), false},
		{"currency nil", good(avN("1"), nil), false},
		{"currency typed nil", good(avN("1"), typedNilS), false},
		{"fraction", good(avN("1.5"), avS("EUR")), false},
		{"integral fraction", good(avN("1.0"), avS("EUR")), false},
		{"exponent", good(avN("1e3"), avS("EUR")), false},
		{"negative", good(avN("-1"), avS("EUR")), false},
		{"plus", good(avN("+1"), avS("EUR")), false},
		{"empty N", good(avN(""), avS("EUR")), false},
		{"space", good(avN(" 1"), avS("EUR")), false},
		{"unsupported currency", good(avN("1"), avS("XXX")), false},
		{"lowercase currency", good(avN("1"), avS("eur")), false},
		{"out of range", good(avN("9223372036854775808"), avS("EUR")), true},
		{"way out of range", good(avN("99999999999999999999999999999999999999"), avS("EUR")), true},
	}
	for _, tt := range bad {
		before := mustNew(t, 42, money.GBP)
		m := before
		err := m.UnmarshalDynamoDBAttributeValue(tt.av)
		check.ErrorIs(t, err, money.ErrValidation, tt.name)
		if tt.overflow {
			check.ErrorIs(t, err, money.ErrOverflow, tt.name)
		}
		check.Equal(t, before, m, "%s: target must be unchanged on error", tt.name)
	}

	var nilM *money.Money
	check.ErrorIs(t, nilM.UnmarshalDynamoDBAttributeValue(good(avN("1"), avS("EUR"))), money.ErrValidation)
}

// fuzzAV builds an attribute value whose shape is chosen by the bits of
// shape, so the fuzzer explores types, missing and extra members as well as
// the member strings.
func fuzzAV(shape uint16, cents, cur string) types.AttributeValue {
	member := func(kind uint16, s string) types.AttributeValue {
		switch kind {
		case 0:
			return avN(s)
		case 1:
			return avS(s)
		case 2:
			return &types.AttributeValueMemberNULL{Value: true}
		case 3:
			return nil
		case 4:
			return (*types.AttributeValueMemberN)(nil)
		case 5:
			return (*types.AttributeValueMemberS)(nil)
		case 6:
			return &types.AttributeValueMemberB{Value: []byte(s)}
		default:
			return avM(map[string]types.AttributeValue{"cents": avN(s)})
		}
	}
	switch shape & 0x7 {
	case 0:
		return nil
	case 1:
		return (*types.AttributeValueMemberM)(nil)
	case 2:
		return avM(nil)
	case 3:
		return member(shape>>3&0x7, cents)
	}
	kv := map[string]types.AttributeValue{}
	if shape&0x8 == 0 {
		kv["cents"] = member(shape>>6&0x7, cents)
	}
	if shape&0x10 == 0 {
		kv["currency"] = member((shape>>9&0x7)^1, cur) // S by default
	}
	if shape&0x20 != 0 {
		kv[cur] = avS(cents) // extra or clobbering member
	}
	return avM(kv)
}

func FuzzUnmarshalDynamoDB(f *testing.F) {
	for _, s := range []struct {
		shape     uint16
		cents, cc string
	}{
		{4, "1999", "EUR"}, {4, "0", "JPY"}, {4, "9223372036854775807", "KWD"}, {4, "9223372036854775808", "EUR"},
		{4, "1.5", "EUR"}, {4, "1e3", "EUR"}, {4, "-1", "EUR"}, {4, "1", "eur"}, {4, "", ""},
		{0, "1", "EUR"}, {1, "1", "EUR"}, {2, "1", "EUR"}, {3, "1", "EUR"}, {4 | 0x8, "1", "EUR"},
		{4 | 0x10, "1", "EUR"}, {4 | 0x20, "1", "x"}, {4 | 0x20, "1", "currency"}, {4 | 1<<6, "1", "EUR"},
		{4 | 2<<6, "1", "EUR"}, {4 | 4<<6, "1", "EUR"}, {4 | 1<<9, "1", "EUR"}, {4 | 4<<9, "1", "EUR"},
	} {
		f.Add(s.shape, s.cents, s.cc)
	}
	f.Fuzz(func(t *testing.T, shape uint16, cents, cur string) {
		var m money.Money
		if err := m.UnmarshalDynamoDBAttributeValue(fuzzAV(shape, cents, cur)); err != nil {
			must.ErrorIs(t, err, money.ErrValidation)
			must.Equal(t, money.Money{}, m)
			return
		}
		must.True(t, m.IsValid())
		must.Equal(t, string(m.Currency()), cur)
		want, err := strconv.ParseInt(cents, 10, 64)
		must.NoError(t, err)
		must.Equal(t, want, m.Cents())
		av, err := m.MarshalDynamoDBAttributeValue()
		must.NoError(t, err)
		var back money.Money
		must.NoError(t, back.UnmarshalDynamoDBAttributeValue(av))
		must.Equal(t, m, back)
	})
}

func BenchmarkUnmarshalDynamoDB(b *testing.B) {
	av := avM(map[string]types.AttributeValue{"cents": avN("1999"), "currency": avS("EUR")})
	b.ReportAllocs()
	for b.Loop() {
		var m money.Money
		if err := m.UnmarshalDynamoDBAttributeValue(av); err != nil {
			b.Fatal(err)
		}
	}
}
