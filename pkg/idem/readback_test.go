package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A write whose answer was lost may have landed, and a release whose
// operation failed may not have: what the call answers then, in fake
// time, on the strict store.

// forgetful is a backend that ignores TransactWriteItems'
// ClientRequestToken (moto and minidyn do; DynamoDB answers a repeated
// token from its first success) and loses the answer to the next lose
// TransactWriteItems it serves: the SDK's retry of a transaction that
// landed meets the transaction's own writes.
type forgetful struct {
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
	mu   sync.Mutex
	lose int
}

func (f *forgetful) Do(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		return f.inner.Do(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	delete(in, "ClientRequestToken")
	if body, err = json.Marshal(in); err != nil {
		return nil, err
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp, err := f.inner.Do(r)
	f.mu.Lock()
	drop := err == nil && f.lose > 0
	if drop {
		f.lose--
	}
	f.mu.Unlock()
	if !drop {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return fakeAnswer(r, http.StatusInternalServerError, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"lost"}`), nil
}

// A transaction that landed, whose answer was lost, and whose retry by
// the SDK met its own writes on a backend that ignores the request's
// token: the retry fails its condition (the completion's fence, the
// transaction's claim), and the record it fails on is the call's own
// completion. The call executed, once: Execute in both modes and
// ExecuteBatch say so, with the call's own response.
func TestATransactionRetriedOntoItsOwnWritesExecuted(t *testing.T) {
	for _, way := range []string{"Execute/" + string(idem.ModeReserve), "Execute/" + string(idem.ModeTransact), "ExecuteBatch"} {
		t.Run(way, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBubble(t)
				ctx := context.Background()
				sc := scope(t, "retried-onto-itself")
				f := &forgetful{lose: 1}
				client := b.srv.HandlerClient(func(o *dynamodb.Options) { f.inner, o.HTTPClient = o.HTTPClient, f })
				mode := idem.ModeReserve
				if way == "Execute/"+string(idem.ModeTransact) {
					mode = idem.ModeTransact
				}
				s, err := idem.NewStore(client, b.env.Tables.Idempotency, idem.WithMode(mode))
				must.NoError(t, err)
				call := func() (idem.Result, error) { return s.Execute(ctx, sc, "fp", effect(b.env)) }
				if way == "ExecuteBatch" {
					l := &ledger{env: b.env}
					ds := []deposit{{key: "retried-onto-itself", account: "a", cents: 1}}
					call = func() (idem.Result, error) {
						res := l.run(t, s, ds)
						return res[0].Result, res[0].Err
					}
				}
				res, err := call()
				must.NoError(t, err, "the transaction landed; only its answer was lost")
				check.Equal(t, idem.OutcomeExecuted, res.Outcome, "the call's own execution, not a replay")
				check.Equal(t, 0, f.lose, "the answer was lost")
				check.Equal(t, 1, countItems(t, b.env, b.env.Tables.Products), "one product (or account), written once")

				replay, err := call()
				must.NoError(t, err)
				check.Equal(t, idem.OutcomeReplayed, replay.Outcome)
				check.Equal(t, res.Response, replay.Response)
			})
		})
	}
}

// A claim the SDK sent twice (the first landed, its answer lost), whose
// retry met a running transaction, and whose record could then not be
// read, may have left the call's claim on the key: the call fails (503)
// and removes it, fenced by its token, so that the client's retry runs
// at once instead of meeting a key held by a claim nobody runs.
func TestAClaimThatMayHaveLandedAndCannotBeReadIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		ctx := context.Background()
		sc := scope(t, "unread-claim")
		s, _ := b.store(t)
		b.srv.Inject(idemtest.OpPutItem, idemtest.LostAnswer, 1)
		b.srv.Inject(idemtest.OpPutItem, idemtest.Conflict, 1)
		b.srv.Inject(idemtest.OpGetItem, idemtest.ThrottledPastRetries, 1)
		var r runs
		res, err := s.Run(ctx, sc, "fp", r.op)
		check.True(t, idem.IsUnavailable(err), "the record could not be read: %v", err)
		check.Equal(t, idem.OutcomeUnavailable, res.Outcome)
		check.Equal(t, 0, r.count())

		_, held, err := s.Get(ctx, sc)
		must.NoError(t, err)
		check.False(t, held, "the claim that landed was released")
		retry, err := s.Run(ctx, sc, "fp", r.op)
		must.NoError(t, err, "the client's retry runs at once")
		check.Equal(t, idem.OutcomeExecuted, retry.Outcome)
		check.Equal(t, 1, r.count())
	})
}

// An operation that failed, whose release failed too (the store
// throttled every attempt of its DeleteItem), leaves its key held until
// the lease ends: the call says error, with both failures, never
// released, and a retry before the lease's end is in flight.
func TestAFailureWhoseReleaseFailedIsNotReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		ctx := context.Background()
		sc := scope(t, "release-refused")
		s, _ := b.store(t)
		b.srv.Inject(idemtest.OpDeleteItem, idemtest.ThrottledPastRetries, 1)
		failure := errors.New("the operation failed")
		res, err := s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, failure })
		check.ErrorIs(t, err, failure)
		check.True(t, idem.IsUnavailable(err), "the release's own failure is in the error: %v", err)
		check.Equal(t, idem.OutcomeError, res.Outcome, "the key is not free")

		var r runs
		retry, err := s.Run(ctx, sc, "fp", r.op)
		check.ErrorIs(t, err, idem.ErrInFlight, "the key stays held until its lease ends: %s", retry.Outcome)
		check.Equal(t, 0, r.count())
		time.Sleep(62*time.Second + time.Millisecond)
		retry, err = s.Run(ctx, sc, "fp", r.op)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeTakeover, retry.Outcome)
	})
}

// An operation's own error that reads like the store's (its context
// ended) is the operation's failure: its key is released and the call
// says released, not unavailable.
func TestAnOperationsOwnTimeoutIsReleasedNotUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		ctx := context.Background()
		sc := scope(t, "own-timeout")
		s, _ := b.store(t)
		res, err := s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) {
			return idem.Response{}, context.DeadlineExceeded // a call of its own timed out
		})
		check.ErrorIs(t, err, context.DeadlineExceeded)
		check.Equal(t, idem.OutcomeReleased, res.Outcome)
		var r runs
		retry, err := s.Run(ctx, sc, "fp", r.op)
		must.NoError(t, err)
		check.Equal(t, idem.OutcomeExecuted, retry.Outcome)
	})
}

// A batch transaction that landed and whose every answer was lost (the
// SDK gave up on 500s) reads its first key's record: it carries the
// batch's own token, so every key of the transaction executed, once.
func TestABatchWhoseEveryAnswerWasLostExecuted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		l := &ledger{env: b.env}
		s, calls := b.store(t)
		b.srv.Inject(idemtest.OpTransactWriteItems, idemtest.LostAnswer, 100) // every attempt of the SDK's
		res := l.run(t, s, []deposit{{key: "lost-1", account: "a", cents: 1}})
		b.srv.ClearFaults()
		check.Equal(t, []idem.Outcome{idem.OutcomeExecuted}, outcomes(res), "the transaction landed: %v", res[0].Err)
		check.Greater(t, calls.Get("TransactWriteItems"), 1, "one transaction, sent until the SDK gave up: %s", calls)
		check.Equal(t, 1, l.balance(t, "a"))

		again := l.run(t, s, []deposit{{key: "lost-1", account: "a", cents: 1}})
		check.Equal(t, []idem.Outcome{idem.OutcomeReplayed}, outcomes(again))
		check.Equal(t, 1, l.balance(t, "a"), "counted once")
	})
}

// A Transact call whose transaction the SDK sent twice (the first
// attempt's answer a 500) and whose second attempt met its record held
// by another request's transaction cannot tell from its answers whether
// the first landed: it reads the record. Its own completed record: it
// executed, with its response. No record: a duplicate is committing, in
// flight, and nothing of this call was written.
func TestATransactionSentTwiceThenHeldReadsItsRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  idemtest.Fault
		landed bool
	}{
		{"the first landed", idemtest.LostAnswer, true},
		{"the first did not land", idemtest.ServerError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBubble(t)
				ctx := context.Background()
				sc := scope(t, "sent-twice-then-held")
				s, calls := b.store(t)
				b.srv.Inject(idemtest.OpTransactWriteItems, tc.first, 1)
				b.srv.Inject(idemtest.OpTransactWriteItems, idemtest.Conflict, 1)
				var sent idem.Response
				res, err := s.Transact(ctx, sc, "fp", func(ctx context.Context) (idem.Effect, error) {
					eff, err := effect(b.env)(ctx)
					sent = eff.Response
					return eff, err
				})
				check.Equal(t, 2, calls.Get("TransactWriteItems"), "one transaction, sent twice: %s", calls)
				check.Equal(t, 1, calls.Get("GetItem"), "then one read: %s", calls)
				if !tc.landed {
					check.ErrorIs(t, err, idem.ErrInFlight, "nothing of this call landed: %s", res.Outcome)
					check.Equal(t, idem.OutcomeInFlight, res.Outcome)
					check.Equal(t, 0, countItems(t, b.env, b.env.Tables.Products))
					return
				}
				must.NoError(t, err, "the first attempt landed")
				check.Equal(t, idem.OutcomeExecuted, res.Outcome)
				check.Equal(t, sent, res.Response, "the call's own response")
				check.Equal(t, 1, countItems(t, b.env, b.env.Tables.Products))
			})
		})
	}
}

// amnesiac is a backend that returns no record with a failed condition
// (minidyn returns none for PutItem): it drops the Item of a
// ConditionalCheckFailedException and of every cancellation reason, and
// calls then, once, as the first such answer comes back.
type amnesiac struct {
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
	mu   sync.Mutex
	then func()
}

func (a *amnesiac) Do(r *http.Request) (*http.Response, error) {
	resp, err := a.inner.Do(r)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var failure map[string]any
	if err := json.Unmarshal(body, &failure); err != nil {
		return nil, err
	}
	kind, _ := failure["__type"].(string)
	if !strings.HasSuffix(kind, "ConditionalCheckFailedException") && !strings.HasSuffix(kind, "TransactionCanceledException") {
		return fakeAnswer(r, resp.StatusCode, string(body)), nil
	}
	delete(failure, "Item")
	reasons, _ := failure["CancellationReasons"].([]any)
	for _, reason := range reasons {
		if m, ok := reason.(map[string]any); ok {
			delete(m, "Item")
		}
	}
	if body, err = json.Marshal(failure); err != nil {
		return nil, err
	}
	a.mu.Lock()
	then := a.then
	a.then = nil
	a.mu.Unlock()
	if then != nil {
		then()
	}
	return fakeAnswer(r, resp.StatusCode, string(body)), nil
}

// A claim that lost its condition to a live holder, on a backend that
// returns no record with the failure, reads the record: gone by then
// (the holder released it in the meantime), the key is free, and the
// claim is made again and wins, whichever way claims: Run's put,
// Transact's transaction, ExecuteBatch's.
func TestAClaimWhoseRecordVanishedBeforeItWasReadClaimsAgain(t *testing.T) {
	for _, w := range []struct {
		name string
		call func(s *idem.Store, sc idem.Scope, r *runs) (idem.Outcome, error)
	}{
		{"Run", func(s *idem.Store, sc idem.Scope, r *runs) (idem.Outcome, error) {
			res, err := s.Run(context.Background(), sc, "fp", r.op)
			return res.Outcome, err
		}},
		{"Transact", func(s *idem.Store, sc idem.Scope, r *runs) (idem.Outcome, error) {
			res, err := s.Transact(context.Background(), sc, "fp", func(ctx context.Context) (idem.Effect, error) {
				resp, _ := r.op(ctx)
				return idem.Effect{Response: resp}, nil
			})
			return res.Outcome, err
		}},
		{"ExecuteBatch", func(s *idem.Store, sc idem.Scope, r *runs) (idem.Outcome, error) {
			res, err := s.ExecuteBatch(context.Background(), []idem.BatchItem{{Scope: sc, Fingerprint: "fp"}},
				func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
					_, _ = r.op(context.Background())
					return nil, nil
				})
			if err != nil {
				return "", err
			}
			return res[0].Outcome, res[0].Err
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBubble(t)
				ctx := context.Background()
				sc := scope(t, "vanished")
				holder, _ := b.store(t)
				claim, err := holder.Reserve(ctx, sc, "fp")
				must.NoError(t, err)
				a := &amnesiac{then: func() { must.NoError(t, claim.Lease.Release(ctx), "the holder releases the key") }}
				client := b.srv.HandlerClient(func(o *dynamodb.Options) { a.inner, o.HTTPClient = o.HTTPClient, a })
				s, err := idem.NewStore(client, b.env.Tables.Idempotency)
				must.NoError(t, err)
				var r runs
				outcome, err := w.call(s, sc, &r)
				must.NoError(t, err, "the key was free when read: %s", outcome)
				check.Equal(t, idem.OutcomeExecuted, outcome)
				check.Nil(t, a.then, "the claim met the holder first")
				rec, ok, err := s.Get(ctx, sc)
				must.NoError(t, err)
				must.True(t, ok)
				check.Equal(t, idem.StatusCompleted, rec.Status)
			})
		})
	}
}
