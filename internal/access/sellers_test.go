package access_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/ids"
)

func TestParseSellers(t *testing.T) {
	t.Parallel()
	a, b := uuid.MustParse(sellerA), uuid.MustParse(sellerB)
	for _, tc := range []struct {
		claim  string
		a, b   bool
		hasErr bool
	}{
		{sellerA, true, false, false},
		{"  " + sellerA + "\t" + sellerB + " ", true, true, false},
		{"[" + sellerA + "]", true, false, false},
		{strings.ToUpper(sellerA), true, false, false},
		{"*", true, true, false},
		{sellerA + " *", true, true, false},
		{"", false, false, true},
		{"[]", false, false, true},
		{"[" + sellerA, false, false, true},
		{sellerA + "]", false, false, true},
		{sellerA + "," + sellerB, false, false, true},
		{"urn:uuid:" + sellerA, false, false, true},
		{"00000000-0000-0000-0000-000000000000", false, false, true},
		{"**", false, false, true},
	} {
		s, err := access.ParseSellers(tc.claim)
		if tc.hasErr {
			assert.Error(t, err, tc.claim)
		} else {
			require.NoError(t, err, tc.claim)
		}
		assert.Equal(t, tc.a, s.Has(a), tc.claim)
		assert.Equal(t, tc.b, s.Has(b), tc.claim)
	}
}

// FuzzParseSellers: any claim parses or is refused; one that parses
// holds every seller id it lists and, unless it lists every seller, no
// other.
func FuzzParseSellers(f *testing.F) {
	for _, s := range []string{sellerA, sellerA + " " + sellerB, "[" + sellerA + "]", "*", "", "[", "]", "[*]", sellerA + ",", "\x00"} {
		f.Add(s)
	}
	other := uuid.MustParse("0f0e0d0c-0b0a-4908-8706-050403020100")
	f.Fuzz(func(t *testing.T, claim string) {
		s, err := access.ParseSellers(claim)
		if err != nil {
			if s.Has(other) {
				t.Fatalf("an unreadable claim %q acts for a seller", claim)
			}
			return
		}
		inner := strings.TrimSpace(claim)
		inner = strings.TrimSuffix(strings.TrimPrefix(inner, "["), "]")
		every := false
		for _, f := range strings.Fields(inner) {
			if f == access.AnySeller {
				every = true
				continue
			}
			id, err := ids.Parse(f)
			if err != nil {
				t.Fatalf("claim %q parsed, but %q is no seller id: %v", claim, f, err)
			}
			if !s.Has(id) {
				t.Fatalf("claim %q parsed without %s", claim, id)
			}
		}
		if s.Has(other) != (every || strings.Contains(strings.ToLower(claim), other.String())) {
			t.Fatalf("claim %q: Has(%s) = %v", claim, other, s.Has(other))
		}
	})
}
