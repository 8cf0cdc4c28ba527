package sellers_test

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/sellers"
)

// A Number is any non-negative integer, exactly: it adds past int64 and
// 38 digits, writes every digit to JSON, and compares with ==.
func TestNumbersAreExactAtAnySize(t *testing.T) {
	t.Parallel()
	nines, err := sellers.ParseNumber("99999999999999999999999999999999999999")
	require.NoError(t, err)
	sum := nines
	for range sellers.Shards - 1 {
		sum = sum.Add(nines)
	}
	assert.Equal(t, "999999999999999999999999999999999999990", sum.String())
	b, err := json.Marshal(struct{ N sellers.Number }{sum})
	require.NoError(t, err)
	assert.Equal(t, `{"N":999999999999999999999999999999999999990}`, string(b))
	_, ok := sum.Int64()
	assert.False(t, ok)

	assert.Equal(t, sellers.Number{}, sellers.NumberOf(0), "the zero value is 0")
	assert.Equal(t, "0", sellers.Number{}.String())
	assert.Equal(t, sellers.NumberOf(1<<63), sellers.NumberOf(1<<63-1).Add(sellers.NumberOf(1)))
	n, ok := sellers.NumberOf(1<<63 - 1).Int64()
	assert.True(t, ok)
	assert.Equal(t, int64(1<<63-1), n)
	assert.Equal(t, sellers.MaxShardValue.String(), "99999999999999999999999999999999999999")

	for _, bad := range []string{"", "-1", "+1", "01", "1.0", "1E+3", "0x10", " 1", "1 ", "١"} {
		_, err := sellers.ParseNumber(bad)
		assert.ErrorIs(t, err, sellers.ErrCorrupt, "%q", bad)
	}
}

// ParseNumber takes exactly the canonical decimal integers, and reads
// them as math/big does.
func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "7", "9223372036854775808", "99999999999999999999999999999999999999", "", "01", "-1", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := sellers.ParseNumber(s)
		want, ok := new(big.Int).SetString(s, 10)
		canonical := ok && want.Sign() >= 0 && want.String() == s
		if err != nil {
			if canonical {
				t.Fatalf("ParseNumber(%q) refused a canonical integer: %v", s, err)
			}
			return
		}
		if !canonical {
			t.Fatalf("ParseNumber(%q) = %s, but it is no canonical non-negative integer", s, n)
		}
		if n.String() != s || n.Int().Cmp(want) != 0 {
			t.Fatalf("ParseNumber(%q) = %s", s, n)
		}
	})
}
