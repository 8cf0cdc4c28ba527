package idem_test

import (
	"context"
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

// A response too large to store is recorded as a stand-in, so its effect
// runs once, whatever the size of its metadata: the stand-in is checked
// against the limit with the reason it carries, not with a shorter
// placeholder, or a stand-in a few bytes over the limit is refused at
// its completion, the key stays open, and the effect runs again after
// the lease.
func TestRunRecordsAStandInWhoseMetadataAreJustUnderTheLimit(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env, idem.WithMaxResponseBytes(1024))
	// One entry of 1+1011 bytes, and Omitted's entry (":omitted", 8) with
	// "true" (4) is 1024: within the limit; with "too large" (9) it is 1029.
	meta := map[string]string{"X": strings.Repeat("m", 1011)}
	runs := 0
	send := func(context.Context) (idem.Response, error) {
		runs++
		return idem.Response{Meta: meta, Body: []byte(strings.Repeat("x", 2048))}, nil
	}
	first, err := s.Run(t.Context(), scope(t, "edge"), "fp", send)
	check.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, first.Outcome)
	again, err := s.Run(t.Context(), scope(t, "edge"), "fp", send)
	check.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, again.Outcome)
	check.Equal(t, "too large", again.Response.Omitted)
	check.Equal(t, 1, runs, "the effect ran once")
}
