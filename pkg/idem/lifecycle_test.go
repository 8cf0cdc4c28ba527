package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

const leaseTotal = idem.DefaultLease + idem.DefaultLeaseMargin

// TestCrashedHolderIsInFlightUntilLeaseEndsThenTakenOver: a reserve-mode
// holder reserves and dies; a caller of either mode is told 409 until the
// lease ends, then takes the key over in one write, executes once and
// replays from then on.
func TestCrashedHolderIsInFlightUntilLeaseEndsThenTakenOver(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		clk := newClock()
		holder := newStore(t, env, idem.WithClock(clk.Now))
		s := newStore(t, env, idem.WithClock(clk.Now), idem.WithMode(mode))
		sc := scope(t, "crash")
		ctx := context.Background()

		crashed, err := holder.Reserve(ctx, sc, "fp") // reserves, then "dies"
		must.NoError(t, err)
		must.NotNil(t, crashed.Lease)
		check.Equal(t, idem.OutcomeExecuted, crashed.Outcome)
		check.Equal(t, clk.Now().Add(leaseTotal), crashed.Lease.ExpiresAt())

		clk.Advance(10 * time.Second)
		res, err := s.Execute(ctx, sc, "fp", effect(env))
		var inflight *idem.InFlightError
		must.ErrorAs(t, err, &inflight)
		must.ErrorIs(t, err, idem.ErrInFlight)
		check.Equal(t, idem.OutcomeInFlight, res.Outcome)
		check.Equal(t, leaseTotal-10*time.Second+time.Millisecond, inflight.RetryAfter, "time until the dead holder's lease has ended")

		clk.Advance(leaseTotal - 10*time.Second) // exactly at the lease end: still held
		_, err = s.Execute(ctx, sc, "fp", effect(env))
		must.ErrorIs(t, err, idem.ErrInFlight)
		check.Zero(t, countItems(t, env, env.Tables.Products), "nothing ran while the key was held")

		clk.Advance(time.Millisecond)
		first, err := s.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		if mode == idem.ModeReserve {
			assertTakeover(t, env, first.Outcome)
		} else {
			check.Equal(t, idem.OutcomeExecuted, first.Outcome)
		}

		rec, ok, err := s.Get(ctx, sc)
		must.NoError(t, err)
		must.True(t, ok)
		check.Equal(t, idem.StatusCompleted, rec.Status)
		check.Equal(t, first.Response, idem.Response(rec.Result))
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))

		again, err := s.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, again.Outcome)
		check.Equal(t, first.Response, again.Response, "status, headers and body replay exactly")
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))

		// The dead holder wakes up: its commit is fenced out.
		id, items := businessWrites(env)
		must.ErrorIs(t, crashed.Lease.Commit(ctx, created(id), items...), idem.ErrLeaseLost)
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))
	})
}

// TestZombieHolderCannotCommitAfterTakeover: holder A's operation outlives
// its lease; B (either mode) takes the key over and completes it; A's
// commit, when its operation finally returns, writes nothing.
func TestZombieHolderCannotCommitAfterTakeover(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		clk := newClock()
		a := newStore(t, env, idem.WithClock(clk.Now)) // A reserves: it has a lease to outlive
		b := newStore(t, env, idem.WithClock(clk.Now), idem.WithMode(mode))
		sc := scope(t, "zombie")
		ctx := context.Background()

		var bRes idem.Result
		aRes, err := a.Execute(ctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
			clk.Advance(leaseTotal + time.Second) // A stalls past its lease
			var berr error
			// B is another process: A's context, whose lease has ended by
			// the clock, is cancelled by now.
			bRes, berr = b.Execute(context.Background(), sc, "fp", effect(env))
			must.NoError(t, berr)
			must.NotEqual(t, idem.OutcomeReplayed, bRes.Outcome, "B executes")
			return effect(env)(ctx) // A wakes up with its own product
		})
		must.ErrorIs(t, err, idem.ErrLeaseLost)
		check.Equal(t, idem.OutcomeLeaseLost, aRes.Outcome)
		var txErr *idem.TxError
		must.ErrorAs(t, err, &txErr)
		check.Equal(t, 0, txErr.Index, "the completion goes first in the transaction")
		check.Equal(t, "ConditionalCheckFailed", txErr.Code)
		must.NotNil(t, txErr.Item, "the record that fenced A out")

		check.Equal(t, 1, countItems(t, env, env.Tables.Products), "only B's product")
		check.Equal(t, 1, countItems(t, env, env.Tables.Outbox))
		rec, _, err := b.Get(ctx, sc)
		must.NoError(t, err)
		check.Equal(t, bRes.Response, idem.Response(rec.Result), "B's response stands")
		check.Equal(t, rec.LeaseToken, txErr.Item[env.Layout.WithDefaults().Attributes.LeaseToken].(*types.AttributeValueMemberS).Value)

		replay, err := a.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, bRes.Response, replay.Response, "A's client retries and gets B's answer")
	})
}

// TestFailedOperationOnACancelledContextFreesTheKey: the client goes away
// and the operation fails with ctx.Err(); the key is free for the retry at
// once (released in reserve mode, never claimed in transact mode).
func TestFailedOperationOnACancelledContextFreesTheKey(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		s := newStore(t, env, idem.WithMode(mode))
		sc := scope(t, "cancelled")
		ctx, cancel := context.WithCancel(context.Background())
		res, err := s.Execute(ctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
			cancel()
			return idem.Effect{}, ctx.Err()
		})
		must.ErrorIs(t, err, context.Canceled)
		check.Equal(t, idem.OutcomeReleased, res.Outcome)
		_, ok, err := s.Get(context.Background(), sc)
		must.NoError(t, err)
		check.False(t, ok, "no record left behind")

		retry, err := s.Execute(context.Background(), sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, retry.Outcome, "an immediate retry executes")
	})
}

func TestReleaseOnCancelledContextFreesTheKey(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env)
	sc := scope(t, "cancelled")
	ctx, cancel := context.WithCancel(context.Background())

	claim, err := s.Reserve(ctx, sc, "fp")
	must.NoError(t, err)
	cancel() // the client went away; the work failed with ctx.Err()
	must.NoError(t, claim.Lease.Release(ctx), "release must reach the table on a cancelled context")

	_, ok, err := s.Get(context.Background(), sc)
	must.NoError(t, err)
	check.False(t, ok, "the reservation is gone")

	retry, err := s.Reserve(context.Background(), sc, "fp")
	must.NoError(t, err)
	must.NotNil(t, retry.Lease, "an immediate retry executes")
	check.Equal(t, idem.OutcomeExecuted, retry.Outcome)
}

func TestReleaseNeverDeletesAnotherHoldersOrACompletedRecord(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	clk := newClock()
	s := newStore(t, env, idem.WithClock(clk.Now))
	ctx := context.Background()

	// Another holder's fresh reservation.
	sc := scope(t, "taken-over")
	a, err := s.Reserve(ctx, sc, "fp")
	must.NoError(t, err)
	clk.Advance(leaseTotal + time.Second)
	b, err := s.Reserve(ctx, sc, "fp")
	must.NoError(t, err)
	must.ErrorIs(t, a.Lease.Release(ctx), idem.ErrLeaseLost)
	rec, ok, err := s.Get(ctx, sc)
	must.NoError(t, err)
	must.True(t, ok, "B's reservation survives A's release")
	check.Equal(t, b.Lease.Token(), rec.LeaseToken)
	check.Equal(t, idem.StatusInProgress, rec.Status)

	// A completed record, even by its own holder.
	must.NoError(t, b.Lease.Commit(ctx, created("x")))
	must.ErrorIs(t, b.Lease.Release(ctx), idem.ErrLeaseLost)
	rec, ok, err = s.Get(ctx, sc)
	must.NoError(t, err)
	must.True(t, ok)
	check.Equal(t, idem.StatusCompleted, rec.Status)
}

func TestKeyReuseWithAnotherPayload(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		s := newStore(t, env, idem.WithMode(mode))
		ctx := context.Background()

		// Against a record in flight (only reserve mode makes those).
		inFlight := scope(t, "reuse-in-flight")
		_, err := newStore(t, env).Reserve(ctx, inFlight, "fp-1")
		must.NoError(t, err)
		res, err := s.Execute(ctx, inFlight, "fp-2", effect(env))
		must.ErrorIs(t, err, idem.ErrKeyReuse)
		check.Equal(t, idem.OutcomeKeyReuse, res.Outcome)

		done := scope(t, "reuse-completed")
		first, err := s.Execute(ctx, done, "fp-1", effect(env))
		must.NoError(t, err)
		res, err = s.Execute(ctx, done, "fp-2", effect(env))
		must.ErrorIs(t, err, idem.ErrKeyReuse)
		check.Equal(t, idem.OutcomeKeyReuse, res.Outcome)
		replay, err := s.Execute(ctx, done, "fp-1", effect(env))
		must.NoError(t, err)
		check.Equal(t, first.Response, replay.Response)
		check.Equal(t, 1, countItems(t, env, env.Tables.Products))
	})
}

func TestExpiredRecordCountsAsAbsent(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		clk := newClock()
		const retention = 5 * time.Minute
		s := newStore(t, env, idem.WithClock(clk.Now), idem.WithRetention(retention), idem.WithMode(mode))
		ctx := context.Background()
		sc := scope(t, "expired")

		_, err := s.Execute(ctx, sc, "fp-old", effect(env))
		must.NoError(t, err)
		clk.Advance(retention + time.Second) // past expires_at; TTL has not deleted it

		_, ok, err := s.Get(ctx, sc)
		must.NoError(t, err)
		check.False(t, ok, "an expired record reads as absent")
		check.Equal(t, 1, countItems(t, env, env.Tables.Idempotency), "the item is still in the table")

		fresh, err := s.Execute(ctx, sc, "fp-new", effect(env)) // another payload: not key reuse any more
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, fresh.Outcome)
		check.Equal(t, 2, countItems(t, env, env.Tables.Products))
	})
}

// TestCallsPerOutcome counts the DynamoDB requests of each path. On
// DynamoDB (and moto) a lost claim returns the record that beat it; the
// embedded store does not, which costs one consistent GetItem more.
func TestCallsPerOutcome(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		client, counter := env.NewClient(t)
		s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithLayout(env.Layout), idem.WithMode(mode))
		must.NoError(t, err)
		ctx := context.Background()
		fallback := 0
		if !returnsOldItem(env, mode) {
			fallback = 1
		}
		claimOp := "PutItem"
		if mode == idem.ModeTransact {
			claimOp = "TransactWriteItems"
		}

		// A holder in flight (a reserve-mode caller).
		busy := scope(t, "calls-busy")
		_, err = newStore(t, env).Reserve(ctx, busy, "fp")
		must.NoError(t, err)
		counter.Reset()
		_, err = s.Execute(ctx, busy, "fp", effect(env))
		must.ErrorIs(t, err, idem.ErrInFlight)
		t.Logf("%s in flight: %s", mode, counter)
		check.Equal(t, map[string]int{claimOp: 1, "GetItem": fallback}, withZero(counter.Snapshot(), "GetItem"))

		counter.Reset()
		sc := scope(t, "calls")
		_, err = s.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		t.Logf("%s first execution: %s", mode, counter)
		want := map[string]int{"PutItem": 1, "TransactWriteItems": 1}
		if mode == idem.ModeTransact {
			want = map[string]int{"TransactWriteItems": 1}
		}
		check.Equal(t, want, counter.Snapshot())

		counter.Reset()
		replay, err := s.Execute(ctx, sc, "fp", effect(env))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, replay.Outcome)
		t.Logf("%s replay: %s", mode, counter)
		check.Equal(t, map[string]int{claimOp: 1, "GetItem": fallback}, withZero(counter.Snapshot(), "GetItem"))
	})
}

// returnsOldItem says whether a lost claim in this mode comes back with
// the record that beat it on this backend (see testEnv).
func returnsOldItem(env *testEnv, mode idem.Mode) bool {
	if mode == idem.ModeTransact {
		return env.TransactPutReturnsOldItem
	}
	return env.PutItemReturnsOldItem
}

// assertTakeover checks the takeover label where the backend can report it
// (see testEnv.PutItemReturnsOldItem); on others it reads "executed".
func assertTakeover(t *testing.T, env *testEnv, o idem.Outcome) {
	t.Helper()
	if env.PutItemReturnsOldItem {
		check.Equal(t, idem.OutcomeTakeover, o)
	} else {
		check.Equal(t, idem.OutcomeExecuted, o, "embedded server cannot show a takeover")
	}
}

func withZero(m map[string]int, keys ...string) map[string]int {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			m[k] = 0
		}
	}
	return m
}

// TestBusinessConditionFailureWritesNothing: the operation's own condition
// fails; nothing lands, and the key is free again.
func TestBusinessConditionFailureWritesNothing(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		s := newStore(t, env, idem.WithMode(mode))
		ctx := context.Background()
		id, items := businessWrites(env)
		_, err := s.Execute(ctx, scope(t, "first"), "fp", func(context.Context) (idem.Effect, error) {
			return idem.Effect{Response: created(id), Writes: items}, nil
		})
		must.NoError(t, err)

		// A second key tries to create the same product id.
		sc := scope(t, "second")
		_, outbox := businessWrites(env)
		res, err := s.Execute(ctx, sc, "fp", func(context.Context) (idem.Effect, error) {
			return idem.Effect{Response: created(id), Writes: []types.TransactWriteItem{items[0], outbox[1]}}, nil
		})
		must.ErrorIs(t, err, idem.ErrConditionFailed)
		must.NotErrorIs(t, err, idem.ErrLeaseLost)
		check.Equal(t, idem.OutcomeReleased, res.Outcome)
		var txErr *idem.TxError
		must.ErrorAs(t, err, &txErr)
		check.Equal(t, 1, txErr.Index, "the product put, after the key's item")
		// FailedWrite names it among the caller's own writes, in either
		// mode, whatever the library put before them.
		w, named := idem.FailedWrite(err)
		check.True(t, named, "FailedWrite of a failed business condition")
		check.Equal(t, 0, w, "the Effect's first write")
		check.Equal(t, 1, countItems(t, env, env.Tables.Outbox), "the second outbox put rolled back")
		_, ok, err := s.Get(ctx, sc)
		must.NoError(t, err)
		check.False(t, ok, "the key is free: released, or never claimed")

		if w, named := idem.FailedWrite(nil); named {
			t.Errorf("FailedWrite(nil) = %d, true", w)
		}
		_, err = s.Execute(ctx, scope(t, "first"), "other fp", func(context.Context) (idem.Effect, error) {
			return idem.Effect{Response: created(id), Writes: items}, nil
		})
		must.ErrorIs(t, err, idem.ErrKeyReuse)
		if w, named := idem.FailedWrite(err); named {
			t.Errorf("FailedWrite(key reuse) = %d, true: the key's record is none of the writes", w)
		}
	})
}

func TestResponseLimits(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		s := newStore(t, env, idem.WithMaxResponseBytes(1024), idem.WithMode(mode))
		ctx := context.Background()
		with := func(resp idem.Response) func(context.Context) (idem.Effect, error) {
			return func(context.Context) (idem.Effect, error) {
				_, items := businessWrites(env)
				return idem.Effect{Response: resp, Writes: items}, nil
			}
		}

		_, err := s.Execute(ctx, scope(t, "big"), "fp", with(idem.Response{Body: []byte(strings.Repeat("x", 1025))}))
		must.ErrorIs(t, err, idem.ErrResponseTooLarge)
		check.Contains(t, err.Error(), "limit 1024")
		check.Zero(t, countItems(t, env, env.Tables.Products), "nothing written")
		_, err = s.Execute(ctx, scope(t, "unnamed"), "fp", with(idem.Response{Meta: map[string]string{"": "x"}}))
		must.ErrorIs(t, err, idem.ErrInvalidResponse)
		_, err = s.Execute(ctx, scope(t, "header"), "fp", with(idem.Response{Meta: map[string]string{"X": "\xff"}}))
		must.ErrorIs(t, err, idem.ErrInvalidResponse)
		check.Zero(t, countItems(t, env, env.Tables.Products), "nothing written")

		// A body that is not UTF-8 is stored as binary and replays exactly.
		binary := idem.Response{Meta: map[string]string{"Content-Type": "image/png"}, Body: []byte{0x89, 'P', 'N', 'G', 0xff, 0x00, 0xfe}}
		first, err := s.Execute(ctx, scope(t, "binary"), "fp", with(binary))
		must.NoError(t, err)
		again, err := s.Execute(ctx, scope(t, "binary"), "fp", with(binary))
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeReplayed, again.Outcome)
		check.Equal(t, first.Response, again.Response)
		check.Equal(t, binary.Body, again.Response.Body)

		// The default limit is 64 KiB.
		def := newStore(t, env, idem.WithMode(mode))
		_, err = def.Execute(ctx, scope(t, "default-limit"), "fp", with(idem.Response{Body: make([]byte, 64<<10+1)}))
		must.ErrorIs(t, err, idem.ErrResponseTooLarge)
		_, err = def.Execute(ctx, scope(t, "default-ok"), "fp", with(idem.Response{Body: []byte(strings.Repeat("y", 60<<10))}))
		must.NoError(t, err)
	})
}

func TestLeaseFollowsContextDeadline(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const margin = 1500 * time.Millisecond
	s := newStore(t, env, idem.WithLeaseMargin(margin))
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute) // longer than the default lease
	defer cancel()
	dl, _ := ctx.Deadline()
	claim, err := s.Reserve(ctx, scope(t, "deadline"), "fp")
	must.NoError(t, err)
	check.Equal(t, dl.Add(margin), claim.Lease.ExpiresAt())

	rec, _, err := s.Get(ctx, scope(t, "deadline"))
	must.NoError(t, err)
	check.Equal(t, dl.Add(margin).UnixMilli(), rec.LeaseExpiresAt.UnixMilli())
}

func TestCorruptRecordIsAnErrorNotAPanic(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		env.defaultLayoutOnly(t)
		s := newStore(t, env, idem.WithMode(mode))
		sc := scope(t, "corrupt")
		exp := &types.AttributeValueMemberN{Value: "9999999999"}
		for name, item := range map[string]map[string]types.AttributeValue{
			"no status":      {"id": sAttr(sc.ID()), "fingerprint": sAttr("fp"), "expires_at": exp},
			"bad status":     {"id": sAttr(sc.ID()), "status": sAttr("WAT"), "fingerprint": sAttr("fp"), "expires_at": exp},
			"body number":    {"id": sAttr(sc.ID()), "status": sAttr("COMPLETED"), "fingerprint": sAttr("fp"), "expires_at": exp, "response_status": &types.AttributeValueMemberN{Value: "201"}, "response_body": &types.AttributeValueMemberN{Value: "1"}},
			"header number":  {"id": sAttr(sc.ID()), "status": sAttr("COMPLETED"), "fingerprint": sAttr("fp"), "expires_at": exp, "response_status": &types.AttributeValueMemberN{Value: "201"}, "response_body": sAttr("{}"), "response_headers": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"X": &types.AttributeValueMemberN{Value: "1"}}}},
			"completed only": {"id": sAttr(sc.ID()), "status": sAttr("COMPLETED"), "fingerprint": sAttr("fp"), "expires_at": exp},
			"status as text": {"id": sAttr(sc.ID()), "status": sAttr("COMPLETED"), "fingerprint": sAttr("fp"), "expires_at": exp, "response_status": sAttr("201"), "response_body": sAttr("{}")},
		} {
			_, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Idempotency), Item: item})
			must.NoError(t, err)
			res, err := s.Execute(context.Background(), sc, "fp", effect(env))
			must.True(t, errors.Is(err, idem.ErrCorruptRecord), "%s: %v", name, err)
			check.Equal(t, idem.OutcomeError, res.Outcome, name)
		}
		check.Zero(t, countItems(t, env, env.Tables.Products))
	})
}
