package idem_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A lease completes once: a second completion, of either kind, is fenced
// out and the first response stands, whatever the second carries.
func TestALeaseCompletesOnce(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env)
	ctx := context.Background()
	sc := scope(t, "once")
	claim, err := s.Reserve(ctx, sc, "fp")
	must.NoError(t, err)
	must.NoError(t, claim.Lease.Complete(ctx, created("first")))

	id, items := businessWrites(env)
	must.ErrorIs(t, claim.Lease.Commit(ctx, created(id), items...), idem.ErrLeaseLost, "a completed lease commits nothing")
	must.ErrorIs(t, claim.Lease.Complete(ctx, created("second")), idem.ErrLeaseLost)
	check.Zero(t, countItems(t, env, env.Tables.Products))
	rec, _, err := s.Get(ctx, sc)
	must.NoError(t, err)
	check.Equal(t, created("first"), idem.Response(rec.Result))
}

func TestExecuteRefusesEffectsNoTransactionCanCarry(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		client, counter := env.NewClient(t)
		s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithMode(mode))
		must.NoError(t, err)
		ctx := context.Background()
		sc := scope(t, "effects")
		tooMany := func(context.Context) (idem.Effect, error) {
			eff := idem.Effect{Response: created("x")}
			for range idem.MaxWrites + 1 {
				_, w := businessWrites(env)
				eff.Writes = append(eff.Writes, w[0])
			}
			return eff, nil
		}
		ownRecord := func(context.Context) (idem.Effect, error) {
			return idem.Effect{Response: created("x"), Writes: []types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String(env.Tables.Idempotency),
				Item:      map[string]types.AttributeValue{"id": sAttr(sc.ID()), "status": sAttr("COMPLETED")},
			}}}}, nil
		}
		for name, fn := range map[string]func(context.Context) (idem.Effect, error){"100 writes": tooMany, "own record": ownRecord} {
			counter.Reset()
			res, err := s.Execute(ctx, sc, "fp", fn)
			must.ErrorIs(t, err, idem.ErrInvalidEffect, name)
			check.Equal(t, idem.OutcomeReleased, res.Outcome, name)
			check.Zero(t, counter.Get("TransactWriteItems"), "%s: refused before any transaction", name)
		}
		check.Zero(t, countItems(t, env, env.Tables.Products))
		// Other items of the idempotency table are fine (single-table designs).
		res, err := s.Execute(ctx, sc, "fp", func(context.Context) (idem.Effect, error) {
			return idem.Effect{Response: created("y"), Writes: []types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String(env.Tables.Idempotency),
				Item:      map[string]types.AttributeValue{"id": sAttr("order#1"), "total": &types.AttributeValueMemberN{Value: "5"}},
			}}}}, nil
		})
		must.NoError(t, err, "the key was left free by the refusals")
		check.Equal(t, idem.OutcomeExecuted, res.Outcome)
	})
}

func TestAScopeNotMadeByNewScopeIsRefused(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	client, counter := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency)
	must.NoError(t, err)
	ctx := context.Background()
	// The anonymous scope with a principal set by hand: neither a named
	// caller's scope nor the anonymous one.
	named, err := idem.NewAnonymousScope("POST /x", "k")
	must.NoError(t, err)
	named.Principal = "anonymous"
	for name, sc := range map[string]idem.Scope{
		"zero":                 {},
		"no principal":         {Operation: "POST /x", Key: "k"},
		"bad key":              {Operation: "POST /x", Principal: "p", Key: "a b"},
		"too long":             {Operation: strings.Repeat("o", 2100), Principal: "p", Key: "k"},
		"anonymous and a name": named,
	} {
		res, err := s.Execute(ctx, sc, "fp", effect(env))
		must.ErrorIs(t, err, idem.ErrInvalidKey, name)
		check.Equal(t, idem.OutcomeRejected, res.Outcome, name)
		_, err = s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return created("x"), nil })
		must.ErrorIs(t, err, idem.ErrInvalidKey, name)
		_, err = s.Reserve(ctx, sc, "fp")
		must.ErrorIs(t, err, idem.ErrInvalidKey, name)
	}
	check.Zero(t, counter.Total(), "refused before any call")
}

// A panic in a reserve-mode operation releases the key (nothing was
// committed) and goes on; the retry runs at once.
func TestPanickingOperationReleasesTheKey(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env)
	sc := scope(t, "panic")
	must.PanicsWithValue(t, "boom", func() {
		_, _ = s.Execute(context.Background(), sc, "fp", func(context.Context) (idem.Effect, error) { panic("boom") })
	})
	res, err := s.Execute(context.Background(), sc, "fp", effect(env))
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeExecuted, res.Outcome, "no 409 for the retry")
}

// A holder whose operation fails after its lease was taken over does not
// report a release it could not make.
func TestFailureAfterATakeoverIsLeaseLost(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	clk := newClock()
	a := newStore(t, env, idem.WithClock(clk.Now))
	b := newStore(t, env, idem.WithClock(clk.Now))
	sc := scope(t, "late-failure")
	res, err := a.Execute(context.Background(), sc, "fp", func(ctx context.Context) (idem.Effect, error) {
		clk.Advance(leaseTotal + time.Second)
		_, berr := b.Reserve(context.Background(), sc, "fp") // B takes over and is still running
		must.NoError(t, berr)
		return idem.Effect{}, errors.New("A's work failed")
	})
	must.EqualError(t, err, "A's work failed")
	check.Equal(t, idem.OutcomeLeaseLost, res.Outcome)
	rec, _, err := b.Get(context.Background(), sc)
	must.NoError(t, err)
	check.Equal(t, idem.StatusInProgress, rec.Status, "B's claim survives A's failure")
}

// throttling answers every PutItem itself with a 400 throttling error, as
// DynamoDB does when it refuses a write.
// A response Run cannot store is recorded without its body: the effect
// runs once, the first caller gets everything, the replays the status
// and a header that says what is missing.
func TestRunRecordsAnUnstorableResponseWithoutItsBody(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env, idem.WithMaxResponseBytes(1024))
	ctx := context.Background()
	var runs atomic.Int64
	big := idem.Response{Meta: map[string]string{"Content-Type": "text/plain"}, Body: []byte(strings.Repeat("x", 2048))}
	send := func(context.Context) (idem.Response, error) { runs.Add(1); return big, nil }

	first, err := s.Run(ctx, scope(t, "big"), "fp", send)
	must.NoError(t, err)
	check.Equal(t, big, first.Response, "the first caller gets the whole response")
	again, err := s.Run(ctx, scope(t, "big"), "fp", send)
	must.NoError(t, err)
	check.Equal(t, idem.OutcomeReplayed, again.Outcome)
	check.Equal(t, "too large", again.Response.Omitted)
	check.Equal(t, "text/plain", again.Response.Meta["Content-Type"])
	check.Empty(t, again.Response.Body)
	check.EqualValues(t, 1, runs.Load(), "the effect ran once")

	// Do: the value goes to the first caller; replays say it was not kept.
	v, _, err := idem.Do(ctx, s, scope(t, "big-do"), "fp", func(context.Context) (string, error) { return strings.Repeat("y", 2048), nil })
	must.NoError(t, err)
	check.Len(t, v, 2048)
	_, outcome, err := idem.Do(ctx, s, scope(t, "big-do"), "fp", func(context.Context) (string, error) {
		t.Error("ran twice")
		return "", nil
	})
	must.ErrorIs(t, err, idem.ErrResponseTooLarge)
	check.Equal(t, idem.OutcomeReplayed, outcome)
}
