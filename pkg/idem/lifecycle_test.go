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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/ddbtest"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

const leaseTotal = idem.DefaultLease + idem.DefaultLeaseMargin

func TestCrashedHolderIsInFlightUntilLeaseEndsThenTakenOver(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	clk := newClock()
	s := newStore(t, env, idem.WithClock(clk.Now))
	sc := scope(t, "crash")
	ctx := context.Background()

	crashed, err := s.Reserve(ctx, sc, "fp") // reserves, then "dies"
	require.NoError(t, err)
	require.NotNil(t, crashed.Lease)
	assert.Equal(t, idem.OutcomeExecuted, crashed.Outcome)
	assert.Equal(t, clk.Now().Add(leaseTotal), crashed.Lease.ExpiresAt)

	clk.Advance(10 * time.Second)
	_, err = s.Reserve(ctx, sc, "fp")
	var inflight *idem.InFlightError
	require.ErrorAs(t, err, &inflight)
	require.ErrorIs(t, err, idem.ErrInFlight)
	assert.Equal(t, leaseTotal-10*time.Second, inflight.RetryAfter, "time until the dead holder's lease ends")

	clk.Advance(leaseTotal - 10*time.Second) // exactly at the lease end: still held
	_, err = s.Reserve(ctx, sc, "fp")
	require.ErrorIs(t, err, idem.ErrInFlight)

	clk.Advance(time.Millisecond)
	retry, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)
	require.NotNil(t, retry.Lease)
	assertTakeover(t, env, retry)
	id, items := businessWrites(env)
	require.NoError(t, retry.Lease.Commit(ctx, created(id), items...))

	rec, ok, err := s.Get(ctx, sc)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, idem.StatusCompleted, rec.Status)
	assert.Equal(t, created(id), rec.Response)
	assert.Equal(t, 1, countItems(t, env, env.Tables.Products))

	again, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)
	require.NotNil(t, again.Replay)
	assert.Equal(t, created(id), *again.Replay, "status, headers and body replay exactly")
}

func TestZombieHolderCannotCommitAfterTakeover(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	clk := newClock()
	s := newStore(t, env, idem.WithClock(clk.Now))
	sc := scope(t, "zombie")
	ctx := context.Background()

	a, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)
	clk.Advance(leaseTotal + time.Second) // A stalls past its lease

	b, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)
	assertTakeover(t, env, b)
	bID, bItems := businessWrites(env)
	require.NoError(t, b.Lease.Commit(ctx, created(bID), bItems...))

	// A wakes up and commits its own product: fenced out, nothing lands.
	aID, aItems := businessWrites(env)
	err = a.Lease.Commit(ctx, created(aID), aItems...)
	require.ErrorIs(t, err, idem.ErrLeaseLost)
	assert.Equal(t, idem.OutcomeLeaseLost, idem.OutcomeOf(err))
	var txErr *idem.TxError
	require.ErrorAs(t, err, &txErr)
	assert.Equal(t, 2, txErr.Index, "the completion item, after the two business items")
	assert.Equal(t, "ConditionalCheckFailed", txErr.Code)
	require.NotNil(t, txErr.Item, "the record that fenced A out")
	assert.Equal(t, sAttr(b.Lease.Token), txErr.Item["lease_token"])

	assert.Equal(t, 1, countItems(t, env, env.Tables.Products), "business items")
	assert.Equal(t, 1, countItems(t, env, env.Tables.Outbox))
	rec, _, err := s.Get(ctx, sc)
	require.NoError(t, err)
	assert.Equal(t, created(bID), rec.Response, "B's response stands")

	// A's non-transactional completion and release are fenced out too.
	require.ErrorIs(t, a.Lease.Complete(ctx, created(aID)), idem.ErrLeaseLost)
	require.ErrorIs(t, a.Lease.Release(ctx), idem.ErrLeaseLost)
	rec, _, err = s.Get(ctx, sc)
	require.NoError(t, err)
	assert.Equal(t, created(bID), rec.Response)
}

func TestReleaseOnCancelledContextFreesTheKey(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	s := newStore(t, env)
	sc := scope(t, "cancelled")
	ctx, cancel := context.WithCancel(context.Background())

	claim, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)
	cancel() // the client went away; the work failed with ctx.Err()
	require.NoError(t, claim.Lease.Release(ctx), "release must reach the table on a cancelled context")

	_, ok, err := s.Get(context.Background(), sc)
	require.NoError(t, err)
	assert.False(t, ok, "the reservation is gone")

	retry, err := s.Reserve(context.Background(), sc, "fp")
	require.NoError(t, err)
	require.NotNil(t, retry.Lease, "an immediate retry executes")
	assert.Equal(t, idem.OutcomeExecuted, retry.Outcome)
}

func TestReleaseNeverDeletesAnotherHoldersOrACompletedRecord(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	clk := newClock()
	s := newStore(t, env, idem.WithClock(clk.Now))
	ctx := context.Background()

	// Another holder's fresh reservation.
	sc := scope(t, "taken-over")
	a, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)
	clk.Advance(leaseTotal + time.Second)
	b, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)
	require.ErrorIs(t, a.Lease.Release(ctx), idem.ErrLeaseLost)
	rec, ok, err := s.Get(ctx, sc)
	require.NoError(t, err)
	require.True(t, ok, "B's reservation survives A's release")
	assert.Equal(t, b.Lease.Token, rec.LeaseToken)
	assert.Equal(t, idem.StatusInProgress, rec.Status)

	// A completed record, even by its own holder.
	require.NoError(t, b.Lease.Commit(ctx, created("x")))
	require.ErrorIs(t, b.Lease.Release(ctx), idem.ErrLeaseLost)
	rec, ok, err = s.Get(ctx, sc)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, idem.StatusCompleted, rec.Status)
}

func TestKeyReuseWithAnotherPayload(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	s := newStore(t, env)
	ctx := context.Background()

	inFlight := scope(t, "reuse-in-flight")
	_, err := s.Reserve(ctx, inFlight, "fp-1")
	require.NoError(t, err)
	_, err = s.Reserve(ctx, inFlight, "fp-2")
	require.ErrorIs(t, err, idem.ErrKeyReuse)
	assert.Equal(t, idem.OutcomeKeyReuse, idem.OutcomeOf(err))

	done := scope(t, "reuse-completed")
	claim, err := s.Reserve(ctx, done, "fp-1")
	require.NoError(t, err)
	require.NoError(t, claim.Lease.Commit(ctx, created("y")))
	_, err = s.Reserve(ctx, done, "fp-2")
	require.ErrorIs(t, err, idem.ErrKeyReuse)
	replay, err := s.Reserve(ctx, done, "fp-1")
	require.NoError(t, err)
	require.NotNil(t, replay.Replay)
}

func TestExpiredRecordCountsAsAbsent(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	clk := newClock()
	const retention = 5 * time.Minute
	s := newStore(t, env, idem.WithClock(clk.Now), idem.WithRetention(retention))
	ctx := context.Background()
	sc := scope(t, "expired")

	claim, err := s.Reserve(ctx, sc, "fp-old")
	require.NoError(t, err)
	require.NoError(t, claim.Lease.Commit(ctx, created("old")))
	clk.Advance(retention + time.Second) // past expires_at; TTL has not deleted it

	_, ok, err := s.Get(ctx, sc)
	require.NoError(t, err)
	assert.False(t, ok, "an expired record reads as absent")
	assert.Equal(t, 1, countItems(t, env, env.Tables.Idempotency), "the item is still in the table")

	fresh, err := s.Reserve(ctx, sc, "fp-new") // another payload: not key reuse any more
	require.NoError(t, err)
	require.NotNil(t, fresh.Lease)
	assert.Equal(t, idem.OutcomeExecuted, fresh.Outcome)
}

func TestCallsPerOutcome(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	client, counter := env.NewClient(t)
	s, err := idem.NewStore(client, env.Tables.Idempotency)
	require.NoError(t, err)
	ctx := context.Background()
	fallbackReads := 0
	if !env.PutItemReturnsOldItem {
		fallbackReads = 1
	}

	sc := scope(t, "calls")
	claim, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)

	counter.Reset()
	_, err = s.Reserve(ctx, sc, "fp")
	require.ErrorIs(t, err, idem.ErrInFlight)
	t.Logf("in flight: %s", counter)
	assert.Equal(t, map[string]int{"PutItem": 1, "GetItem": fallbackReads}, withZero(counter.Snapshot(), "GetItem"))

	counter.Reset()
	id, items := businessWrites(env)
	require.NoError(t, claim.Lease.Commit(ctx, created(id), items...))
	assert.Equal(t, map[string]int{"TransactWriteItems": 1}, counter.Snapshot())

	counter.Reset()
	fresh := scope(t, "calls-2")
	c2, err := s.Reserve(ctx, fresh, "fp")
	require.NoError(t, err)
	id2, items2 := businessWrites(env)
	require.NoError(t, c2.Lease.Commit(ctx, created(id2), items2...))
	t.Logf("first execution: %s", counter)
	assert.Equal(t, map[string]int{"PutItem": 1, "TransactWriteItems": 1}, counter.Snapshot())

	counter.Reset()
	replay, err := s.Reserve(ctx, fresh, "fp")
	require.NoError(t, err)
	require.NotNil(t, replay.Replay)
	t.Logf("replay: %s", counter)
	assert.Equal(t, map[string]int{"PutItem": 1, "GetItem": fallbackReads}, withZero(counter.Snapshot(), "GetItem"))
}

// assertTakeover checks the takeover label where the backend can report it
// (see ddbtest.Env.PutItemReturnsOldItem); on others it reads "executed".
func assertTakeover(t *testing.T, env *ddbtest.Env, c idem.Claim) {
	t.Helper()
	if env.PutItemReturnsOldItem {
		assert.Equal(t, idem.OutcomeTakeover, c.Outcome)
		assert.True(t, c.Lease.Takeover)
	} else {
		assert.Equal(t, idem.OutcomeExecuted, c.Outcome, "embedded server cannot show a takeover")
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

func TestBusinessConditionFailureWritesNothingAndKeepsTheLease(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	s := newStore(t, env)
	ctx := context.Background()
	id, items := businessWrites(env)
	first, err := s.Reserve(ctx, scope(t, "first"), "fp")
	require.NoError(t, err)
	require.NoError(t, first.Lease.Commit(ctx, created(id), items...))

	// A second key tries to create the same product id.
	sc := scope(t, "second")
	second, err := s.Reserve(ctx, sc, "fp")
	require.NoError(t, err)
	_, outbox := businessWrites(env)
	err = second.Lease.Commit(ctx, created(id), items[0], outbox[1])
	require.ErrorIs(t, err, idem.ErrConditionFailed)
	require.NotErrorIs(t, err, idem.ErrLeaseLost)
	var txErr *idem.TxError
	require.ErrorAs(t, err, &txErr)
	assert.Equal(t, 0, txErr.Index)
	assert.Equal(t, 1, countItems(t, env, env.Tables.Outbox), "the second outbox put rolled back")
	rec, _, err := s.Get(ctx, sc)
	require.NoError(t, err)
	assert.Equal(t, idem.StatusInProgress, rec.Status, "the completion rolled back too")
	require.NoError(t, second.Lease.Release(ctx), "the holder still owns its lease")
}

func TestResponseLimits(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	s := newStore(t, env, idem.WithMaxResponseBytes(1024))
	ctx := context.Background()
	claim, err := s.Reserve(ctx, scope(t, "big"), "fp")
	require.NoError(t, err)

	big := idem.Response{Status: 201, Body: []byte(strings.Repeat("x", 1024))}
	id, items := businessWrites(env)
	err = claim.Lease.Commit(ctx, big, items...)
	require.ErrorIs(t, err, idem.ErrResponseTooLarge)
	assert.Contains(t, err.Error(), "limit 1024")
	assert.Zero(t, countItems(t, env, env.Tables.Products), "nothing sent")
	_ = id

	err = claim.Lease.Commit(ctx, idem.Response{Status: 201, Body: []byte{0xff, 0xfe}})
	require.ErrorIs(t, err, idem.ErrInvalidResponse)
	err = claim.Lease.Commit(ctx, idem.Response{Status: 42})
	require.ErrorIs(t, err, idem.ErrInvalidResponse)

	// The default limit is 64 KiB.
	def := newStore(t, env)
	c2, err := def.Reserve(ctx, scope(t, "default-limit"), "fp")
	require.NoError(t, err)
	err = c2.Lease.Commit(ctx, idem.Response{Status: 200, Body: make([]byte, 64<<10)})
	require.ErrorIs(t, err, idem.ErrResponseTooLarge)
	require.NoError(t, c2.Lease.Commit(ctx, idem.Response{Status: 200, Body: []byte(strings.Repeat("y", 60<<10))}))
}

func TestLeaseFollowsContextDeadline(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	const margin = 1500 * time.Millisecond
	s := newStore(t, env, idem.WithLeaseMargin(margin))
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute) // longer than the default lease
	defer cancel()
	dl, _ := ctx.Deadline()
	claim, err := s.Reserve(ctx, scope(t, "deadline"), "fp")
	require.NoError(t, err)
	assert.Equal(t, dl.Add(margin), claim.Lease.ExpiresAt)

	rec, _, err := s.Get(ctx, scope(t, "deadline"))
	require.NoError(t, err)
	assert.Equal(t, dl.Add(margin).UnixMilli(), rec.LeaseExpiresAt.UnixMilli())
}

func TestCorruptRecordIsAnErrorNotAPanic(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	s := newStore(t, env)
	sc := scope(t, "corrupt")
	for name, item := range map[string]map[string]types.AttributeValue{
		"no status":      {"id": sAttr(sc.ID()), "fingerprint": sAttr("fp"), "expires_at": &types.AttributeValueMemberN{Value: "9999999999"}},
		"bad status":     {"id": sAttr(sc.ID()), "status": sAttr("WAT"), "fingerprint": sAttr("fp"), "expires_at": &types.AttributeValueMemberN{Value: "9999999999"}},
		"body number":    {"id": sAttr(sc.ID()), "status": sAttr("COMPLETED"), "fingerprint": sAttr("fp"), "expires_at": &types.AttributeValueMemberN{Value: "9999999999"}, "response_status": &types.AttributeValueMemberN{Value: "201"}, "response_body": &types.AttributeValueMemberN{Value: "1"}},
		"completed only": {"id": sAttr(sc.ID()), "status": sAttr("COMPLETED"), "fingerprint": sAttr("fp"), "expires_at": &types.AttributeValueMemberN{Value: "9999999999"}},
	} {
		_, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Idempotency), Item: item})
		require.NoError(t, err)
		_, err = s.Reserve(context.Background(), sc, "fp")
		require.True(t, errors.Is(err, idem.ErrCorruptRecord), "%s: %v", name, err)
	}
}
