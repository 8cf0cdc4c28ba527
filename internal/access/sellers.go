package access

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/internal/ids"
)

// AnySeller, in a token's seller_ids or in a grant, stands for every
// seller: for a trusted service that acts for all of them.
const AnySeller = "*"

// Sellers is the set of sellers a caller acts for.
type Sellers struct {
	any bool
	ids map[uuid.UUID]struct{}
}

// ParseSellers reads a seller_ids claim: seller ids in their 36-character
// form, separated by spaces (as OAuth's scope claim is), or AnySeller.
// API Gateway hands a Lambda a JSON array claim as its values between
// brackets ("[id1 id2]"), so one pair of brackets around the list is
// read too. Anything else in the list makes the whole claim unreadable,
// and an unreadable or empty claim acts for no seller.
func ParseSellers(claim string) (Sellers, error) {
	s := strings.TrimSpace(claim)
	if inner, ok := strings.CutPrefix(s, "["); ok {
		if s, ok = strings.CutSuffix(inner, "]"); !ok {
			return Sellers{}, errors.New("an opening bracket without its closing one")
		}
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Sellers{}, errors.New("no seller listed")
	}
	out := Sellers{ids: make(map[uuid.UUID]struct{}, len(fields))}
	for _, f := range fields {
		if f == AnySeller {
			out.any = true
			continue
		}
		id, err := ids.Parse(f)
		if err != nil {
			return Sellers{}, fmt.Errorf("an entry that is no seller id: %w", err)
		}
		out.ids[id] = struct{}{}
	}
	return out, nil
}

// Has reports whether the set holds seller.
func (s Sellers) Has(seller uuid.UUID) bool {
	if s.any {
		return true
	}
	_, ok := s.ids[seller]
	return ok
}
