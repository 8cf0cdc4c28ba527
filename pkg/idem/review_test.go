package idem_test

import (
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
)

// The cache only answers sooner: an ExecuteBatch item whose response
// cannot be stored is refused whether or not the store has its key in
// memory, as before issue 29 (the response was validated before the
// cache was asked).
func TestExecuteBatchRefusesAnUnstorableResponseWithOrWithoutTheCache(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &ledger{env: env}
	cached := newStore(t, env, idem.WithCache(100, 0), idem.WithMaxResponseBytes(1<<10))
	uncached := newStore(t, env, idem.WithMaxResponseBytes(1<<10))
	ds := []deposit{{key: "k-1", account: "a", cents: 1}}
	l.run(t, cached, ds)

	items := l.items(t, ds)
	items[0].Response.Body = []byte(strings.Repeat("x", 2<<10))
	for name, s := range map[string]*idem.Store{"uncached": uncached, "cached": cached} {
		res, err := s.ExecuteBatch(t.Context(), items, l.shared(ds))
		check.NoError(t, err)
		check.ErrorIs(t, res[0].Err, idem.ErrResponseTooLarge, name)
		check.Equal(t, idem.OutcomeRejected, res[0].Outcome, name)
	}
}
