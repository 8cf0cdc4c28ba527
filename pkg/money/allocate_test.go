package money_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
	"github.com/idemlambda/idemlambda/pkg/money"
)

func cents(parts []money.Money) []int64 {
	out := make([]int64, len(parts))
	for i, p := range parts {
		out[i] = p.Cents()
	}
	return out
}

func TestAllocate(t *testing.T) {
	tests := []struct {
		amount int64
		ratios []int
		want   []int64
	}{
		{5, []int{100, 101, 100, 100}, []int64{1, 2, 1, 1}},
		{100, []int{1, 1, 1}, []int64{34, 33, 33}}, // tie: lower index wins
		{2, []int{1, 1, 1}, []int64{1, 1, 0}},
		{1, []int{1, 1}, []int64{1, 0}},
		{100, []int{1}, []int64{100}},
		{100, []int{0, 1}, []int64{0, 100}},
		{1, []int{0, 1, 0, 1}, []int64{0, 1, 0, 0}},
		{0, []int{1, 2}, []int64{0, 0}},
		{1000, []int{70, 20, 10}, []int64{700, 200, 100}},
		{10, []int{3, 3, 3}, []int64{4, 3, 3}},
		{31, []int{1, 2, 3}, []int64{5, 10, 16}}, // 5.17, 10.33, 15.5 -> largest remainder 15.5
		{math.MaxInt64, []int{1, 1}, []int64{math.MaxInt64/2 + 1, math.MaxInt64 / 2}},
		{math.MaxInt64, []int{math.MaxInt, math.MaxInt}, []int64{math.MaxInt64/2 + 1, math.MaxInt64 / 2}},
		{math.MaxInt64, []int{math.MaxInt, 1}, []int64{math.MaxInt64 - 1, 1}},
	}
	for _, tt := range tests {
		m := mustNew(t, tt.amount, money.EUR)
		parts, err := m.Allocate(tt.ratios...)
		must.NoError(t, err, "%d over %v", tt.amount, tt.ratios)
		check.Equal(t, tt.want, cents(parts), "%d over %v", tt.amount, tt.ratios)
		for _, p := range parts {
			check.True(t, p.IsValid())
			check.Equal(t, money.EUR, p.Currency())
		}
	}
}

func TestAllocateErrors(t *testing.T) {
	m := mustNew(t, 100, money.EUR)
	tests := []struct {
		name   string
		ratios []int
		want   error
	}{
		{"none", nil, money.ErrValidation},
		{"empty", []int{}, money.ErrValidation},
		{"negative", []int{1, -1}, money.ErrValidation},
		{"all zero", []int{0, 0}, money.ErrValidation},
		{"sum overflow", []int{math.MaxInt, math.MaxInt, math.MaxInt}, money.ErrOverflow},
	}
	for _, tt := range tests {
		parts, err := m.Allocate(tt.ratios...)
		check.ErrorIs(t, err, tt.want, tt.name)
		check.Nil(t, parts, tt.name)
	}
}

// Property: parts sum to the whole, each part is the floor or ceiling of its
// exact share (checked with math/big), zero ratios get zero, and only parts
// whose remainder is at least every floored part's get the extra unit.
func TestPropertyAllocateFair(t *testing.T) {
	r := newRand(t)
	for range 5000 {
		amount := randMinor(r)
		ratios := randRatios(r)
		parts, err := mustNew(t, amount, money.USD).Allocate(ratios...)
		total := new(big.Int)
		for _, x := range ratios {
			total.Add(total, big.NewInt(int64(x)))
		}
		if !total.IsUint64() {
			must.ErrorIs(t, err, money.ErrOverflow)
			continue
		}
		if total.Sign() == 0 {
			must.ErrorIs(t, err, money.ErrValidation)
			continue
		}
		must.NoError(t, err, "%d over %v", amount, ratios)
		must.Len(t, parts, len(ratios))

		sum := new(big.Int)
		rems := make([]*big.Int, len(parts))
		up := make([]bool, len(parts))
		for i, p := range parts {
			must.Equal(t, money.USD, p.Currency())
			sum.Add(sum, big.NewInt(p.Cents()))
			share := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(amount), big.NewInt(int64(ratios[i]))), total)
			floor := new(big.Int).Quo(share.Num(), share.Denom())
			got := big.NewInt(p.Cents())
			diff := new(big.Int).Sub(got, floor)
			must.True(t, diff.Sign() >= 0 && diff.Cmp(big.NewInt(1)) <= 0,
				"part %d = %d, exact share %s (%d over %v)", i, p.Cents(), share.FloatString(3), amount, ratios)
			rems[i] = new(big.Int).Mod(new(big.Int).Mul(big.NewInt(amount), big.NewInt(int64(ratios[i]))), total)
			up[i] = diff.Sign() == 1
			if share.IsInt() {
				must.Zero(t, diff.Sign(), "exact share must not be rounded up")
			}
			if ratios[i] == 0 {
				must.Zero(t, p.Cents())
			}
		}
		must.Equal(t, big.NewInt(amount), sum, "%d over %v", amount, ratios)
		// Largest remainder, lower index on ties: a rounded-up part beats
		// every floored part.
		for i := range parts {
			for j := range parts {
				if up[i] && !up[j] {
					c := rems[i].Cmp(rems[j])
					must.True(t, c > 0 || (c == 0 && i < j),
						"part %d rounded up over part %d (%d over %v)", i, j, amount, ratios)
				}
			}
		}
	}
}

func randRatios(r *rand.Rand) []int {
	ratios := make([]int, 1+r.IntN(8))
	for i := range ratios {
		switch r.IntN(5) {
		case 0:
			ratios[i] = 0
		case 1:
			ratios[i] = math.MaxInt - r.IntN(3)
		default:
			ratios[i] = r.IntN(1000)
		}
	}
	return ratios
}

func BenchmarkAllocate(b *testing.B) {
	m := mustNew(b, 1_000_003, money.EUR)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Allocate(100, 101, 100, 100, 37); err != nil {
			b.Fatal(err)
		}
	}
}
