package sellers

import (
	"fmt"
	"math/big"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Number is an exact non-negative integer of any size: a seller's
// product count, or its total in one currency. The sellers table keeps
// them as DynamoDB numbers, 38 digits per shard (MaxShardValue), and a
// seller's sum over its shards can pass int64: Number holds it exactly,
// and its JSON is that integer, every digit. The zero value is 0; Numbers
// compare with ==.
type Number struct {
	digits string // canonical: no leading zeros, "" for 0
}

// NumberOf returns n as a Number.
func NumberOf(n uint64) Number { return numberOf(new(big.Int).SetUint64(n)) }

func numberOf(n *big.Int) Number {
	if n.Sign() == 0 {
		return Number{}
	}
	return Number{digits: n.String()}
}

// ParseNumber reads a non-negative integer in plain decimal digits, as
// DynamoDB returns the integers the counter stores ("350", never "3.5E2");
// a leading zero is allowed only in "0".
func ParseNumber(s string) (Number, error) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return Number{}, fmt.Errorf("%w: %.48q is not a non-negative integer", ErrCorrupt, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return Number{}, fmt.Errorf("%w: %.48q is not a non-negative integer", ErrCorrupt, s)
		}
	}
	if s == "0" {
		return Number{}, nil
	}
	return Number{digits: s}, nil
}

// Int returns n as a new big.Int.
func (n Number) Int() *big.Int {
	i, _ := new(big.Int).SetString(n.String(), 10) // always canonical digits
	return i
}

// Int64 returns n and true when it fits in an int64.
func (n Number) Int64() (int64, bool) {
	i, err := strconv.ParseInt(n.String(), 10, 64)
	return i, err == nil
}

// Add returns n + m.
func (n Number) Add(m Number) Number { return numberOf(new(big.Int).Add(n.Int(), m.Int())) }

// String returns n's decimal digits.
func (n Number) String() string {
	if n.digits == "" {
		return "0"
	}
	return n.digits
}

// MarshalJSON writes n as a JSON integer, every digit: JSON numbers have
// no size limit, and a client that reads them as float64 loses only what
// passes 2^53.
func (n Number) MarshalJSON() ([]byte, error) { return []byte(n.String()), nil }

// attributeValue is n as a DynamoDB number.
func (n Number) attributeValue() types.AttributeValue {
	return &types.AttributeValueMemberN{Value: n.String()}
}
