package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// deposit is one batch item's payload: cents added to an account, which
// lives in the products table (any table keyed by "id" will do).
type deposit struct {
	key     string
	account string
	cents   int
}

// ledger turns deposits into batch items and aggregated account updates.
type ledger struct {
	env   *testEnv
	limit int // an account's balance may not pass it (0: no limit)

	mu    sync.Mutex
	calls [][]int // the executing sets the shared writes function was called with
}

func (l *ledger) items(t testing.TB, ds []deposit) []idem.BatchItem {
	t.Helper()
	out := make([]idem.BatchItem, len(ds))
	for i, d := range ds {
		fp, err := idem.Fingerprint(map[string]any{"account": d.account, "cents": d.cents})
		must.NoError(t, err)
		out[i] = idem.BatchItem{Scope: scope(t, d.key), Fingerprint: fp,
			Response: idem.Response{Body: []byte(fmt.Sprintf(`{"key":%q}`, d.key))}}
	}
	return out
}

// shared adds each account's deposits among the executing items in one
// update, under a condition that keeps the balance within the limit.
func (l *ledger) shared(ds []deposit) func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
	return func(executing []int, _ []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
		l.mu.Lock()
		l.calls = append(l.calls, executing)
		l.mu.Unlock()
		sums := map[string]int{}
		var order []string
		for _, i := range executing {
			if _, ok := sums[ds[i].account]; !ok {
				order = append(order, ds[i].account)
			}
			sums[ds[i].account] += ds[i].cents
		}
		var writes []types.TransactWriteItem
		for _, a := range order {
			u := &types.Update{
				TableName:                 aws.String(l.env.Tables.Products),
				Key:                       map[string]types.AttributeValue{"id": sAttr(a)},
				UpdateExpression:          aws.String("ADD balance :c"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberN{Value: strconv.Itoa(sums[a])}},
			}
			if l.limit > 0 {
				u.ConditionExpression = aws.String("attribute_not_exists(balance) OR balance <= :room")
				u.ExpressionAttributeValues[":room"] = &types.AttributeValueMemberN{Value: strconv.Itoa(l.limit - sums[a])}
			}
			writes = append(writes, types.TransactWriteItem{Update: u})
		}
		return writes, nil
	}
}

func (l *ledger) balance(t testing.TB, account string) int {
	t.Helper()
	out, err := l.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(l.env.Tables.Products), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": sAttr(account)},
	})
	must.NoError(t, err)
	n, ok := out.Item["balance"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	must.NoError(t, err)
	return v
}

func (l *ledger) run(t testing.TB, s *idem.Store, ds []deposit) []idem.BatchResult {
	t.Helper()
	res, err := s.ExecuteBatch(context.Background(), l.items(t, ds), l.shared(ds))
	must.NoError(t, err)
	must.Len(t, res, len(ds))
	return res
}

func outcomes(res []idem.BatchResult) []idem.Outcome {
	out := make([]idem.Outcome, len(res))
	for i, r := range res {
		out[i] = r.Outcome
	}
	return out
}

func TestExecuteBatchCommitsEveryKeyInOneTransaction(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &ledger{env: env}
	s := newStore(t, env)
	var ds []deposit
	for i := range 10 {
		ds = append(ds, deposit{key: fmt.Sprintf("k-%d", i), account: []string{"a", "b", "c"}[i%3], cents: i + 1})
	}
	res := l.run(t, s, ds)
	for i, r := range res {
		check.NoError(t, r.Err)
		check.Equal(t, idem.OutcomeExecuted, r.Outcome)
		check.Equal(t, fmt.Sprintf(`{"key":"k-%d"}`, i), string(r.Response.Body))
	}
	check.Equal(t, map[string]int{"TransactWriteItems": 1}, env.Counter.Snapshot(), "ten keys, three accounts, one call")
	check.Equal(t, 1+4+7+10, l.balance(t, "a"))
	check.Equal(t, 2+5+8, l.balance(t, "b"))
	check.Equal(t, 3+6+9, l.balance(t, "c"))
}

// Nine keys done before and one new: the nine replay their stored
// responses, and the new one commits in a second transaction whose shared
// writes are computed for it alone.
func TestExecuteBatchDropsDuplicatesAndCommitsTheRest(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &ledger{env: env}
	s := newStore(t, env)
	var ds []deposit
	for i := range 10 {
		ds = append(ds, deposit{key: fmt.Sprintf("k-%d", i), account: "a", cents: 1 << i})
	}
	l.run(t, s, ds[:9])
	env.Counter.Reset()
	l.calls = nil
	res := l.run(t, s, append([]deposit{ds[9]}, ds[:9]...))
	check.Equal(t, idem.OutcomeExecuted, res[0].Outcome)
	for i, r := range res[1:] {
		check.NoError(t, r.Err)
		check.Equal(t, idem.OutcomeReplayed, r.Outcome)
		check.Equal(t, fmt.Sprintf(`{"key":"k-%d"}`, i), string(r.Response.Body), "the stored response")
	}
	check.LessOrEqual(t, env.Counter.Get("TransactWriteItems"), 2)
	if env.TransactPutReturnsOldItem {
		check.Equal(t, map[string]int{"TransactWriteItems": 2}, env.Counter.Snapshot(), "the records came with the cancellation")
	}
	check.Equal(t, [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {0}}, l.calls, "the second transaction's writes are the new key's alone")
	check.Equal(t, 1<<10-1, l.balance(t, "a"))
}

// Key reuse, a key twice in the batch, an invalid response: each answers
// for itself, and the others commit.
func TestExecuteBatchAnswersEachKeyForItself(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &ledger{env: env}
	s := newStore(t, env)
	l.run(t, s, []deposit{{key: "reused", account: "a", cents: 1}})
	ds := []deposit{
		{key: "reused", account: "a", cents: 999}, // another payload
		{key: "new-1", account: "a", cents: 10},
		{key: "twice", account: "b", cents: 100},
		{key: "twice", account: "b", cents: 100}, // the same delivery again
		{key: "twice", account: "b", cents: 5},   // the same key, another payload
		{key: "bad", account: "b", cents: 7},
	}
	items := l.items(t, ds)
	items[5].Response.Meta = map[string]string{"": "no name"}
	res, err := s.ExecuteBatch(context.Background(), items, l.shared(ds))
	must.NoError(t, err)
	check.Equal(t, []idem.Outcome{idem.OutcomeKeyReuse, idem.OutcomeExecuted, idem.OutcomeExecuted,
		idem.OutcomeReplayed, idem.OutcomeKeyReuse, idem.OutcomeRejected}, outcomes(res))
	check.ErrorIs(t, res[0].Err, idem.ErrKeyReuse)
	check.ErrorIs(t, res[4].Err, idem.ErrKeyReuse)
	check.ErrorIs(t, res[5].Err, idem.ErrInvalidResponse)
	check.Equal(t, res[2].Response, res[3].Response)
	check.Equal(t, 11, l.balance(t, "a"))
	check.Equal(t, 100, l.balance(t, "b"))
}

// A shared write that fails its condition fails only the key whose own
// writes cannot commit.
func TestExecuteBatchASharedConditionFailsOnlyItsKey(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &ledger{env: env, limit: 100}
	s := newStore(t, env)
	for _, a := range []string{"a", "b"} {
		_, err := env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.Tables.Products),
			Item: map[string]types.AttributeValue{"id": sAttr(a), "balance": &types.AttributeValueMemberN{Value: "0"}}})
		must.NoError(t, err)
	}
	ds := []deposit{
		{key: "fits-1", account: "a", cents: 40},
		{key: "over", account: "a", cents: 101},
		{key: "fits-2", account: "a", cents: 50},
		{key: "other", account: "b", cents: 99},
	}
	res := l.run(t, s, ds)
	check.Equal(t, []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReleased, idem.OutcomeExecuted, idem.OutcomeExecuted}, outcomes(res))
	check.ErrorIs(t, res[1].Err, idem.ErrConditionFailed)
	var txErr *idem.TxError
	must.ErrorAs(t, res[1].Err, &txErr)
	check.Equal(t, 1, txErr.Index, "the account's update, after the key's record")
	check.Equal(t, 90, l.balance(t, "a"))
	check.Equal(t, 99, l.balance(t, "b"))
	// Nothing was recorded for it: the same key commits once it fits.
	res = l.run(t, s, []deposit{{key: "over", account: "b", cents: 1}})
	check.Equal(t, idem.OutcomeExecuted, res[0].Outcome)
}

// More than a transaction holds is split, each part with its own shared
// writes.
func TestExecuteBatchSplitsBeyondOneHundredActions(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &ledger{env: env}
	s := newStore(t, env)
	var ds []deposit
	for i := range 150 {
		ds = append(ds, deposit{key: fmt.Sprintf("k-%d", i), account: fmt.Sprintf("acc-%d", i%2), cents: 1})
	}
	res := l.run(t, s, ds)
	for _, r := range res {
		must.NoError(t, r.Err)
		must.Equal(t, idem.OutcomeExecuted, r.Outcome)
	}
	check.Equal(t, 2, env.Counter.Get("TransactWriteItems"), "152 actions are over the limit: two halves of 75 keys and 2 updates")
	check.Equal(t, 75, l.balance(t, "acc-0"))
	check.Equal(t, 75, l.balance(t, "acc-1"))
}

// With the cache on, keys this store completed answer from memory.
func TestExecuteBatchReplaysFromTheCache(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := &ledger{env: env}
	s := newStore(t, env, idem.WithCache(100, 0))
	ds := []deposit{{key: "k-1", account: "a", cents: 1}, {key: "k-2", account: "a", cents: 2}}
	l.run(t, s, ds)
	env.Counter.Reset()
	res := l.run(t, s, ds)
	check.Equal(t, []idem.Outcome{idem.OutcomeReplayed, idem.OutcomeReplayed}, outcomes(res))
	check.Zero(t, env.Counter.Total(), "no DynamoDB call")
	check.Equal(t, 3, l.balance(t, "a"))
}

// Faults: a conflict is retried, a lost answer is found to have landed.
func TestExecuteBatchRetriesConflictsAndFindsLostAnswers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault injection needs the strict test store")
	}
	env := newEnv(t)
	if env.Store == nil {
		t.Skip("fault injection needs the strict test store")
	}
	l := &ledger{env: env}
	s := newStore(t, env)
	env.Store.Inject(idemtest.OpTransactWriteItems, idemtest.Conflict, 2)
	res := l.run(t, s, []deposit{{key: "k-1", account: "a", cents: 1}, {key: "k-2", account: "a", cents: 2}})
	check.Equal(t, []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeExecuted}, outcomes(res))
	check.Equal(t, 3, env.Counter.Get("TransactWriteItems"), "two conflicts, then the commit")

	env.Store.Inject(idemtest.OpTransactWriteItems, idemtest.LostAnswer, 1)
	res = l.run(t, s, []deposit{{key: "k-3", account: "a", cents: 4}, {key: "k-4", account: "a", cents: 8}})
	check.Equal(t, []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeExecuted}, outcomes(res))
	check.Equal(t, 15, l.balance(t, "a"), "the lost answer's transaction counted once")

	// Another transaction holds the account for longer than the retries
	// last: the key fails, retryable, and nothing is written.
	held := env.Store.Hold(idemtest.OpTransactWriteItems)
	var wg sync.WaitGroup
	wg.Go(func() { l.run(t, s, []deposit{{key: "holder-1", account: "a", cents: 100}}) })
	<-held.Arrived()
	res = l.run(t, s, []deposit{{key: "k-5", account: "a", cents: 16}})
	check.Equal(t, idem.OutcomeUnavailable, res[0].Outcome)
	check.ErrorIs(t, res[0].Err, idem.ErrConflict)
	check.True(t, idem.IsUnavailable(res[0].Err))

	// It holds a key's record instead: that key is in flight, and its
	// neighbour commits without it.
	res = l.run(t, s, []deposit{{key: "holder-1", account: "b", cents: 100}, {key: "k-6", account: "b", cents: 32}})
	check.Equal(t, []idem.Outcome{idem.OutcomeInFlight, idem.OutcomeExecuted}, outcomes(res))
	check.ErrorIs(t, res[0].Err, idem.ErrInFlight)
	held.Release()
	wg.Wait()
	check.Equal(t, 115, l.balance(t, "a"))
	check.Equal(t, 32, l.balance(t, "b"))
}

// Concurrent batches on one hot account, with overlapping keys and
// DynamoDB's isolation modelled: every key executes exactly once, and
// the balance is the sum of the distinct keys.
func TestExecuteBatchConcurrentBatchesOnOneAccount(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if env.Store != nil {
		env.Store.SetTransactionLatency(2 * time.Millisecond)
	}
	l := &ledger{env: env}
	s := newStore(t, env, idem.WithConflictAttempts(10))
	const keys, workers, per = 60, 6, 10
	want := 0
	var ds []deposit
	for i := range keys {
		ds = append(ds, deposit{key: fmt.Sprintf("k-%d", i), account: "hot", cents: i + 1})
		want += i + 1
	}
	var (
		mu       sync.Mutex
		executed = map[string]int{}
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			// Each worker sends every key, in its own order and batches:
			// every key meets its duplicates in flight.
			for b := range keys / per {
				var batch []deposit
				for j := range per {
					batch = append(batch, ds[((b+w)%(keys/per))*per+(j+w)%per])
				}
				for k, r := range l.run(t, s, batch) {
					switch {
					case r.Outcome == idem.OutcomeExecuted:
						mu.Lock()
						executed[batch[k].key]++
						mu.Unlock()
					case r.Outcome == idem.OutcomeReplayed:
					default:
						// A duplicate in flight, or a hot account's conflicts
						// outlasting the retries: retryable, nothing written.
						check.True(t, errors.Is(r.Err, idem.ErrInFlight) || errors.Is(r.Err, idem.ErrConflict), "%v", r.Err)
					}
				}
			}
		})
	}
	wg.Wait()
	// The retry of whatever failed, alone: every key has executed once.
	for k, r := range l.run(t, s, ds) {
		must.NoError(t, r.Err)
		if r.Outcome == idem.OutcomeExecuted {
			executed[ds[k].key]++
		}
	}
	for _, d := range ds {
		check.Equal(t, 1, executed[d.key], "key %s executed once", d.key)
	}
	check.Equal(t, want, l.balance(t, "hot"))
	if env.Store != nil {
		t.Logf("calls: %s; conflicts: %+v", env.Counter, env.Store.Stats())
	}
}

func TestExecuteBatchNeedsSharedWrites(t *testing.T) {
	t.Parallel()
	s := newStore(t, newEnv(t))
	_, err := s.ExecuteBatch(context.Background(), nil, nil)
	check.Error(t, err)
	res, err := s.ExecuteBatch(context.Background(), nil, func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })
	check.NoError(t, err)
	check.Empty(t, res)
	boom := errors.New("boom")
	res, err = s.ExecuteBatch(context.Background(), []idem.BatchItem{{Scope: scope(t, "k"), Fingerprint: "fp", Response: idem.Response{}}},
		func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, boom })
	must.NoError(t, err)
	check.ErrorIs(t, res[0].Err, boom)
}

// Throttling that outlasts the SDK's retries is about the table, not a
// key: the batch fails at once, retryable, instead of splitting into
// halves that would send more transactions into a throttled table.
func TestExecuteBatchThrottledFailsWithoutSplitting(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if env.Store == nil {
		t.Skipf("fault injection is the strict test store's; %s backend in use", env.Kind)
	}
	l := &ledger{env: env}
	s := newStore(t, env)
	env.Store.Inject(idemtest.OpTransactWriteItems, idemtest.Throttled, 1000)
	ds := []deposit{{key: "t-1", account: "a", cents: 1}, {key: "t-2", account: "a", cents: 2}, {key: "t-3", account: "b", cents: 3}, {key: "t-4", account: "b", cents: 4}}
	res := l.run(t, s, ds)
	env.Store.ClearFaults()
	for _, r := range res {
		check.True(t, idem.IsUnavailable(r.Err), "retryable: %v", r.Err)
	}
	t.Logf("calls at the store: %v; the client counted %s", env.Store.CallCounts(), env.Counter)
	// One transaction and the SDK's own attempts at it (4 for DynamoDB);
	// halves of four keys would send seven transactions.
	check.Equal(t, env.Counter.Get("TransactWriteItems"), env.Store.Calls(idemtest.OpTransactWriteItems))
	check.LessOrEqual(t, env.Store.Calls(idemtest.OpTransactWriteItems), 4, "one transaction's attempts, no halves")
}
