package money

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
)

// Allocate splits m into len(ratios) parts proportional to ratios, without
// losing or inventing a minor unit: the parts always sum to m, and each part
// is the floor or the ceiling of its exact share m*ratio/sum(ratios).
//
// It uses the largest-remainder method: every part first gets the floor of
// its share, then the units left over go one each to the parts with the
// largest remainders, the lower index winning ties so the result is
// deterministic. A zero ratio always gets zero. For example 5 cents over
// ratios 100, 101, 100, 100 gives 1, 2, 1, 1.
//
// Products are computed in 128 bits, so no ratio is too large; ratios that
// are empty, negative or all zero fail with ErrValidation, and ratios whose
// sum exceeds 64 bits fail with ErrOverflow.
func (m Money) Allocate(ratios ...int) ([]Money, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if len(ratios) == 0 {
		return nil, fmt.Errorf("%w: no ratios", ErrValidation)
	}
	var total uint64
	for i, r := range ratios {
		if r < 0 {
			return nil, fmt.Errorf("%w: negative ratio %d at index %d", ErrValidation, r, i)
		}
		var carry uint64
		total, carry = bits.Add64(total, uint64(r), 0)
		if carry != 0 {
			return nil, fmt.Errorf("%w: sum of ratios", ErrOverflow)
		}
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: all ratios are zero", ErrValidation)
	}

	amount := uint64(m.minor)
	parts := make([]Money, len(ratios))
	type remainder struct {
		rem uint64
		i   int
	}
	rems := make([]remainder, len(ratios))
	left := amount
	for i, r := range ratios {
		// amount*r/total <= amount < 2^63, so hi < total and Div64 cannot
		// overflow (it would panic).
		hi, lo := bits.Mul64(amount, uint64(r))
		q, rem := bits.Div64(hi, lo, total)
		parts[i] = Money{minor: int64(q), currency: m.currency}
		rems[i] = remainder{rem, i}
		left -= q
	}
	// left < number of non-zero remainders, so zero ratios (remainder 0)
	// never receive a unit. The stable sort keeps the lower index first on
	// equal remainders.
	slices.SortStableFunc(rems, func(a, b remainder) int { return cmp.Compare(b.rem, a.rem) })
	for _, r := range rems[:left] {
		parts[r.i].minor++
	}
	return parts, nil
}
