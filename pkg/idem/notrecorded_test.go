package idem_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// An operation that says its effect happened but must not be recorded as
// done (its error wraps idem.ErrNotRecorded) keeps its key held: the call
// answers not recorded with the operation's response, and a retry before
// the lease's end is in flight, never a second effect. Do gives the
// operation's value back with it.
func TestAnEffectThatSaysItWasNotRecordedKeepsItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		ctx := context.Background()
		s, _ := b.store(t)
		var r runs

		sc := scope(t, "run-not-recorded")
		sent := idem.Response{Body: []byte("sent")}
		res, err := s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) {
			return sent, fmt.Errorf("the receipt was lost: %w", idem.ErrNotRecorded)
		})
		check.ErrorIs(t, err, idem.ErrNotRecorded)
		check.Equal(t, idem.OutcomeNotRecorded, res.Outcome)
		check.Equal(t, sent, res.Response, "the operation's response")
		retry, err := s.Run(ctx, sc, "fp", r.op)
		check.ErrorIs(t, err, idem.ErrInFlight, "the key stays held: %s", retry.Outcome)
		check.Equal(t, 0, r.count())

		dsc := scope(t, "do-not-recorded")
		v, outcome, err := idem.Do(ctx, s, dsc, "fp", func(context.Context) (int, error) {
			return 42, fmt.Errorf("the receipt was lost: %w", idem.ErrNotRecorded)
		})
		check.ErrorIs(t, err, idem.ErrNotRecorded)
		check.Equal(t, idem.OutcomeNotRecorded, outcome)
		check.Equal(t, 42, v, "the value the operation made")
		_, outcome, err = idem.Do(ctx, s, dsc, "fp", func(context.Context) (int, error) { return 0, nil })
		check.ErrorIs(t, err, idem.ErrInFlight, "the key stays held: %s", outcome)

		time.Sleep(62*time.Second + time.Millisecond)
		retry, err = s.Run(ctx, sc, "fp", r.op)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeTakeover, retry.Outcome, "after the lease, Run's window: the effect may run again")
	})
}
