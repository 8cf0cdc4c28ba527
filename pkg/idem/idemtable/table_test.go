package idemtable_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func TestLeadingKeyPrefixConfinesOneOperation(t *testing.T) {
	t.Parallel()
	check.Equal(t, "v1|14:POST /products|", idemtable.LeadingKeyPrefix("POST /products"))
	// Property: every id of an operation begins with its prefix, and no id
	// of another operation does, even one that extends it ("POST /p" and
	// "POST /p|1:x") or that a principal could imitate.
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "|:0123456789v1ab"
	part := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		op, other := part(), part()
		sc, err := idem.NewScope(op, part(), part())
		must.NoError(t, err)
		must.True(t, strings.HasPrefix(sc.ID(), idemtable.LeadingKeyPrefix(op)), "%q lacks its prefix", sc.ID())
		if other != op {
			must.False(t, strings.HasPrefix(sc.ID(), idemtable.LeadingKeyPrefix(other)),
				"%q (operation %q) begins with the prefix of %q", sc.ID(), op, other)
		}
	}
}
