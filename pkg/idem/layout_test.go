package idem_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// coreSuites are the tests every layout must pass: concurrent duplicates,
// crashed and zombie holders, release, expiry, ExecuteBatch, and Execute,
// Transact and Run mixed on one key, and waiting duplicates.
const coreSuites = "^(TestSixtyFourConcurrentCallersOneKeyExecuteOnce|TestManyKeysTimesEightDuplicatesExecuteOncePerKey|" +
	"TestConcurrentTakeoverHasOneWinner|TestCrashedHolderIsInFlightUntilLeaseEndsThenTakenOver|" +
	"TestZombieHolderCannotCommitAfterTakeover|TestFailedOperationOnACancelledContextFreesTheKey|" +
	"TestReleaseOnCancelledContextFreesTheKey|TestReleaseNeverDeletesAnotherHoldersOrACompletedRecord|" +
	"TestKeyReuseWithAnotherPayload|TestExpiredRecordCountsAsAbsent|TestBusinessConditionFailureWritesNothing|" +
	"TestExecuteBatch.*|TestReserveHolderInFlightMakesTransactCallerWait|TestTransactCallerTakesOverADeadReserveHolder|" +
	"TestTransactCompletedKeyReplaysToReserveCaller|TestMixedModesRaceOnOneKey|TestLayoutRecordsLiveWhereTheLayoutSays|" +
	"TestWaitingDuplicateGetsTheWinnersResponse|TestConcurrentWaitingDuplicatesRunOnce)$"

// TestCoreSuitesOnEachLayout runs the core suites again, in a child test
// process each, on every layout other than the default (which this run's
// own tests cover): parametrized by IDEM_TEST_LAYOUT, not copied.
func TestCoreSuitesOnEachLayout(t *testing.T) {
	if os.Getenv("IDEM_TEST_LAYOUT") != "" {
		t.Skip("a child run: one layout only")
	}
	if testing.Short() {
		t.Skip("-short: the default layout only")
	}
	for _, name := range []string{"single", "spread", "prefix"} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", coreSuites, "-test.count", "1", "-test.v")
			cmd.Env = append(os.Environ(), "IDEM_TEST_LAYOUT="+name)
			out, err := cmd.CombinedOutput()
			passed := strings.Count(string(out), "--- PASS")
			if err != nil {
				t.Fatalf("core suites on layout %s: %v\n%s", name, err, out)
			}
			t.Logf("layout %s: %d tests and subtests passed", name, passed)
			check.NotContains(t, string(out), "--- SKIP: TestSixtyFour", "the concurrency suite ran")
			check.Greater(t, passed, 20)
		})
	}
}

// TestLayoutRecordsLiveWhereTheLayoutSays reads a completed record back
// by the layout's own key and attribute names.
func TestLayoutRecordsLiveWhereTheLayoutSays(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env)
	sc := scope(t, "where")
	ctx := context.Background()
	_, err := s.Execute(ctx, sc, "fp", effect(env))
	must.NoError(t, err)
	l := env.Layout.WithDefaults()
	out, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(env.Tables.Idempotency), Key: l.Key(sc.ID()), ConsistentRead: aws.Bool(true),
	})
	must.NoError(t, err)
	must.NotEmpty(t, out.Item, "the record is at the layout's key")
	check.Equal(t, sAttr(idem.StatusCompleted), out.Item[l.Attributes.Status])
	check.Equal(t, sAttr("fp"), out.Item[l.Attributes.Fingerprint])
	for _, name := range []string{l.Attributes.ExpiresAt, l.Attributes.Format, l.Attributes.CompletionID, l.Attributes.CompletedAt} {
		check.Contains(t, out.Item, name)
	}
	id, ok := l.ID(out.Item)
	check.True(t, ok)
	check.Equal(t, sc.ID(), id)
}

func TestLayoutLimitsTheScopeIDToItsKey(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s, err := idem.NewStore(env.Client, env.Tables.Idempotency, idem.WithLayout(idemtable.Layout{SortKey: "SK", PartitionKey: "PK", PartitionValue: "I"}))
	must.NoError(t, err)
	// Fits the default 2048-byte partition key, not a 1024-byte sort key.
	sc, err := idem.NewScope("POST /"+strings.Repeat("x", 1000), "user-1", "k")
	must.NoError(t, err)
	res, err := s.Execute(context.Background(), sc, "fp", effect(env))
	must.ErrorIs(t, err, idem.ErrInvalidKey)
	check.Equal(t, idem.OutcomeRejected, res.Outcome)

	_, err = idem.NewStore(env.Client, env.Tables.Idempotency, idem.WithLayout(idemtable.Layout{SortKey: "SK"}))
	must.Error(t, err, "a sort key needs a partition value")
}
