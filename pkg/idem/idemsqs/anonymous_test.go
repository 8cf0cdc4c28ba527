package idemsqs_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// decodeFrom reads "<producer> <event id> <account> <cents>", the
// producer "-" being one that cannot be named (the anonymous scope).
func decodeFrom(m events.SQSMessage) (idemsqs.Entry[deposit], error) {
	producer, rest, _ := strings.Cut(m.Body, " ")
	e, err := decode(events.SQSMessage{Body: rest})
	e.Principal, e.Anonymous = producer, producer == "-"
	if e.Anonymous {
		e.Principal = ""
	}
	return e, err
}

// A producer named "anonymous" never shares the anonymous scope, on
// either way: the same event id from both is two events, each applied
// once and acknowledged as a duplicate on redelivery.
func TestAProducerNamedAnonymousIsNotTheAnonymousScope(t *testing.T) {
	t.Parallel()
	batch := func(suffix string) events.SQSEvent {
		return events.SQSEvent{Records: []events.SQSMessage{
			message("m-anon"+suffix, "- ev-1 acct 10"),
			message("m-named"+suffix, "anonymous ev-1 acct 10"),
		}}
	}
	t.Run("Transact", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		for round, want := range []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed} {
			resp, results := consumer(t, f.store, "deposit", decodeFrom).Transact(context.Background(), batch(fmt.Sprint(round)), shared("accounts"))
			must.Empty(t, resp.BatchItemFailures, "%v", results)
			for _, r := range results {
				check.Equal(t, want, r.Outcome, "round %d: %v", round, r.Err)
			}
		}
		total, n := f.account(t, "acct")
		check.EqualValues(t, 20, total, "each producer's event applied once")
		check.EqualValues(t, 2, n)
	})
	t.Run("Run", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		var sent atomic.Int64
		effect := func(context.Context, deposit) error { sent.Add(1); return nil }
		for round, want := range []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed} {
			resp, results := consumer(t, f.store, "email", decodeFrom).Run(context.Background(), batch(fmt.Sprint(round)), effect)
			must.Empty(t, resp.BatchItemFailures, "%v", results)
			for _, r := range results {
				check.Equal(t, want, r.Outcome, "round %d: %v", round, r.Err)
			}
		}
		check.EqualValues(t, 2, sent.Load())
	})
}

// An entry that is anonymous and names a producer is neither: it fails.
func TestAnAnonymousEntryWithAPrincipalIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	both := func(m events.SQSMessage) (idemsqs.Entry[deposit], error) {
		e, err := decode(m)
		e.Anonymous = true
		return e, err
	}
	_, results := consumer(t, f.store, "email", both).Run(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m", "ev-1 acct 10")}},
		func(context.Context, deposit) error { t.Error("ran"); return nil })

	must.Len(t, results, 1)
	check.ErrorIs(t, results[0].Err, idem.ErrInvalidKey)
}
