package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// wideMeta is n metadata entries of 3-byte keys and empty values: 3n bytes
// of keys and values, but 4n+3 bytes as DynamoDB counts a map (its 3
// bytes, and 1 per element), which the strict store counts as DynamoDB
// does against the 400 KB item.
func wideMeta(n int) map[string]string {
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	m := make(map[string]string, n)
	for i := 0; len(m) < n; i++ {
		m[string([]byte{abc[i/4096%64], abc[i/64%64], abc[i%64]})] = ""
	}
	return m
}

// overflow is a response the old size check counted at exactly 300 KB
// (102,400 entries of 3 bytes), which DynamoDB counts at 409,603 bytes:
// no record can hold it.
func overflow() idem.Response { return idem.Response{Meta: wideMeta(102400)} }

// hugeFingerprint is a caller's fingerprint of 350 KB: with a 60 KB body
// its completed record is past 400 KB, at the default limits.
var hugeFingerprint = strings.Repeat("f", 350<<10)

// body60K is a 60 KB body, within the default 64 KB response limit.
var body60K = []byte(strings.Repeat("b", 60<<10))

// afterLease is past a lease of a holder with no deadline (60 s and a 2 s
// margin by default), when a retry would take its key over.
const afterLease = idem.DefaultLease + idem.DefaultLeaseMargin + time.Second

// TestARecordDynamoDBCannotHoldNeverRunsTheEffectTwice is hole 1 of issue
// 36: a completed record past DynamoDB's 400 KB (metadata whose map
// overhead the size check did not count, or an unbounded fingerprint) was
// refused after the effect, the call answered ErrNotRecorded, and the
// retry after the lease ran the effect again. On every way in, each call
// is made twice, the second after the lease: the effect runs at most
// once, and whatever cannot be recorded is refused before it, or
// recorded without what does not fit.
func TestARecordDynamoDBCannotHoldNeverRunsTheEffectTwice(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	twice := func(t *testing.T, clk *clock, call func(n int) (idem.Outcome, error)) (outcomes [2]idem.Outcome, errs [2]error) {
		t.Helper()
		for n := range 2 {
			outcomes[n], errs[n] = call(n)
			clk.Advance(afterLease)
		}
		return outcomes, errs
	}

	t.Run("wide metadata/Run", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := newStore(t, env, idem.WithClock(clk.Now), idem.WithMaxResponseBytes(300<<10))
		var runs atomic.Int32
		sc := scope(t, "wide-run")
		outcomes, errs := twice(t, clk, func(int) (idem.Outcome, error) {
			res, err := s.Run(context.Background(), sc, "fp", func(context.Context) (idem.Response, error) {
				runs.Add(1)
				return overflow(), nil
			})
			if err == nil && res.Outcome == idem.OutcomeReplayed {
				check.Equal(t, "too large", res.Response.Omitted, "the replay says what was not stored")
			}
			return res.Outcome, err
		})
		check.Equal(t, int32(1), runs.Load(), "the effect ran again: %v %v", outcomes, errs)
		check.NoError(t, errs[0], "the effect happened: its record stands in for what does not fit")
		check.Equal(t, idem.OutcomeReplayed, outcomes[1])
	})

	t.Run("wide metadata/idemhttp", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := newStore(t, env, idem.WithClock(clk.Now), idem.WithMaxResponseBytes(300<<10))
		var runs atomic.Int32
		mw, err := idemhttp.New(s, idemhttp.WithOperation("POST /wide"), idemhttp.WithPrincipalV2(func(events.APIGatewayV2HTTPRequestContext) (string, error) { return "user-1", nil }))
		must.NoError(t, err)
		h := mw.APIGatewayV2(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			runs.Add(1)
			// 102,396 headers and the stored status: the old count's 300 KB.
			return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: wideMeta(102396)}, nil
		})
		req := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"idempotency-key": "wide-http", "content-type": "application/json"}, Body: "{}"}
		req.RequestContext.HTTP.Method = "POST"
		var statuses [2]int
		twice(t, clk, func(n int) (idem.Outcome, error) {
			resp, err := h(context.Background(), req)
			statuses[n] = resp.StatusCode
			return "", err
		})
		check.Equal(t, int32(1), runs.Load(), "the handler ran again: %v", statuses)
		check.Equal(t, [2]int{201, 201}, statuses)
	})

	for _, way := range []string{"Execute", "Transact"} {
		t.Run("wide metadata/"+way, func(t *testing.T) {
			t.Parallel()
			mode := idem.ModeReserve
			if way == "Transact" {
				mode = idem.ModeTransact
			}
			clk := newClock()
			s := newStore(t, env, idem.WithClock(clk.Now), idem.WithMaxResponseBytes(300<<10), idem.WithMode(mode))
			_, errs := twice(t, clk, func(int) (idem.Outcome, error) {
				res, err := s.Execute(context.Background(), scope(t, "wide-"+way), "fp", func(context.Context) (idem.Effect, error) {
					_, writes := businessWrites(env)
					return idem.Effect{Response: overflow(), Writes: writes}, nil
				})
				return res.Outcome, err
			})
			for _, err := range errs {
				check.ErrorIs(t, err, idem.ErrResponseTooLarge, "the record cannot hold the response: say so, before its writes")
			}
			check.Equal(t, 0, countItems(t, env, env.Tables.Products), "no write may commit without its record")
		})
	}

	t.Run("wide metadata/ExecuteBatch", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := newStore(t, env, idem.WithClock(clk.Now), idem.WithMaxResponseBytes(300<<10))
		twice(t, clk, func(int) (idem.Outcome, error) {
			res, err := s.ExecuteBatch(context.Background(), []idem.BatchItem{{Scope: scope(t, "wide-batch"), Fingerprint: "fp", Response: overflow()}},
				func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })
			must.NoError(t, err)
			check.ErrorIs(t, res[0].Err, idem.ErrResponseTooLarge)
			check.Equal(t, idem.OutcomeRejected, res[0].Outcome, "refused before any transaction")
			return res[0].Outcome, res[0].Err
		})
	})

	// A fingerprint no record can hold with its response is refused at
	// admission, before the effect, on every way in that takes one
	// (idemevent's is the hash of its entry's Value: 64 bytes).
	fingerprintCases := map[string]func(t *testing.T, s *idem.Store, effect func()) error{
		"Run": func(t *testing.T, s *idem.Store, effect func()) error {
			_, err := s.Run(context.Background(), scope(t, "fp-run"), hugeFingerprint, func(context.Context) (idem.Response, error) {
				effect()
				return idem.Response{Body: body60K}, nil
			})
			return err
		},
		"Do": func(t *testing.T, s *idem.Store, effect func()) error {
			_, _, err := idem.Do(context.Background(), s, scope(t, "fp-do"), hugeFingerprint, func(context.Context) (string, error) {
				effect()
				return string(body60K[:50<<10]), nil
			})
			return err
		},
		"Execute": func(t *testing.T, s *idem.Store, effect func()) error {
			_, err := s.Execute(context.Background(), scope(t, "fp-execute"), hugeFingerprint, func(context.Context) (idem.Effect, error) {
				effect()
				return idem.Effect{Response: idem.Response{Body: body60K}}, nil
			})
			return err
		},
		"Transact": func(t *testing.T, s *idem.Store, effect func()) error {
			_, err := s.Transact(context.Background(), scope(t, "fp-transact"), hugeFingerprint, func(context.Context) (idem.Effect, error) {
				effect()
				return idem.Effect{Response: idem.Response{Body: body60K}}, nil
			})
			return err
		},
		"ExecuteBatch": func(t *testing.T, s *idem.Store, effect func()) error {
			res, err := s.ExecuteBatch(context.Background(), []idem.BatchItem{{Scope: scope(t, "fp-batch"), Fingerprint: hugeFingerprint, Response: idem.Response{Body: body60K}}},
				func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) {
					effect()
					return nil, nil
				})
			must.NoError(t, err)
			return res[0].Err
		},
	}
	for way, call := range fingerprintCases {
		t.Run("huge fingerprint/"+way, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			s := newStore(t, env, idem.WithClock(clk.Now))
			var runs atomic.Int32
			_, errs := twice(t, clk, func(int) (idem.Outcome, error) {
				return "", call(t, s, func() { runs.Add(1) })
			})
			check.Equal(t, int32(0), runs.Load(), "the effect ran though its record could never be stored: %v", errs)
			for _, err := range errs {
				check.ErrorIs(t, err, idem.ErrInvalidKey, "a fingerprint no record holds is refused before the effect")
				check.True(t, err != nil && strings.Contains(err.Error(), "fingerprint"), "the error names the fingerprint: %v", err)
			}
		})
	}
}

// TestTheLargestRecordFitsDynamoDB stores a record at every bound at once
// (a scope ID of 2048 bytes, the longest fingerprint admitted, a response
// at the 300 KB limit counted as DynamoDB counts it, the metadata map's
// overhead included, and the count of the most writes an Effect carries)
// through Run, Execute and Transact on the strict store, which refuses an
// item past 400 KB as DynamoDB does: every record the store admits fits,
// so none is refused after its effect.
func TestTheLargestRecordFitsDynamoDB(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.defaultLayoutOnly(t)
	// 4,096 entries of 3-byte keys and 60-byte values are 262,147 bytes
	// as DynamoDB counts the map (4,099 more than their keys and values),
	// and the body takes the rest of the limit.
	const limit = 300 << 10
	meta := wideMeta(4096)
	for k := range meta {
		meta[k] = strings.Repeat("v", 60)
	}
	resp := idem.Response{Meta: meta, Body: []byte(strings.Repeat("x", limit-(3+4096*64)))}
	// The completion of so large an item can be slow under -race on a
	// loaded machine: no release timeout may decide this test.
	s := newStore(t, env, idem.WithMaxResponseBytes(limit), idem.WithReleaseTimeout(time.Hour))
	fp := strings.Repeat("f", idem.MaxFingerprintLength)
	// The most writes an Effect carries, each its own product: the record
	// counts them.
	maxWrites := func() []types.TransactWriteItem {
		writes := make([]types.TransactWriteItem, 0, idem.MaxWrites)
		for len(writes) < idem.MaxWrites {
			_, w := businessWrites(env)
			writes = append(writes, w[0])
		}
		return writes
	}
	for _, way := range []string{"Run", "Execute", "Transact"} {
		key := "largest-" + way
		// The principal that makes the scope's ID 2048 bytes long.
		pad := 2048
		for len(idem.Scope{Operation: "POST /things", Principal: strings.Repeat("p", pad), Key: key}.ID()) > 2048 {
			pad--
		}
		sc, err := idem.NewScope("POST /things", strings.Repeat("p", pad), key)
		must.NoError(t, err)
		check.Equal(t, 2048, len(sc.ID()))
		var res idem.Result
		writes := 0
		switch way {
		case "Run":
			res, err = s.Run(context.Background(), sc, fp, func(context.Context) (idem.Response, error) { return resp, nil })
		case "Execute":
			writes = idem.MaxWrites
			res, err = s.Execute(context.Background(), sc, fp, func(context.Context) (idem.Effect, error) {
				return idem.Effect{Response: resp, Writes: maxWrites()}, nil
			})
		default:
			writes = idem.MaxWrites
			res, err = s.Transact(context.Background(), sc, fp, func(context.Context) (idem.Effect, error) {
				return idem.Effect{Response: resp, Writes: maxWrites()}, nil
			})
		}
		must.NoError(t, err, "%s: the largest record admitted must fit DynamoDB's item", way)
		check.Equal(t, idem.OutcomeExecuted, res.Outcome)
		rec, ok, err := s.Get(context.Background(), sc)
		must.NoError(t, err)
		must.True(t, ok, "%s: no record", way)
		check.Equal(t, len(meta), len(rec.Result.Meta), "%s: the record holds the response as it was", way)
		check.Equal(t, writes, rec.Writes, "%s: the record counts the writes committed with it", way)
	}
	check.Equal(t, 2*idem.MaxWrites, countItems(t, env, env.Tables.Products), "every write committed with its record")
	// One byte more is over the limit.
	resp.Body = append(resp.Body, 'x')
	_, err := s.Transact(context.Background(), scope(t, "largest-plus-one"), "fp", func(context.Context) (idem.Effect, error) { return idem.Effect{Response: resp}, nil })
	check.ErrorIs(t, err, idem.ErrResponseTooLarge)
	if errors.Is(err, idem.ErrResponseTooLarge) {
		check.True(t, strings.Contains(err.Error(), "limit"), "the error says the limit: %v", err)
	}
}

// TestAdmissionBoundsEveryAttribute: every attribute a caller gives a
// record is bounded when the call is admitted, with an error that names
// it: the key (NewScope), the operation and the principal (UTF-8, since
// the SDK would store other bytes as U+FFFD and two principals could
// share a record; their ID within the key's limit), the fingerprint
// (UTF-8, at most 1024 bytes).
func TestAdmissionBoundsEveryAttribute(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ operation, principal, key, says string }{
		{"POST /things", "user-\xff", "k", "not UTF-8"},
		{"POST /\xfe", "user-1", "k", "not UTF-8"},
		{"POST /things", strings.Repeat("p", 2048), "k", "principal 2048"},
		{"POST /things", "user-1", strings.Repeat("k", 256), "at most 255"},
	} {
		_, err := idem.NewScope(c.operation, c.principal, c.key)
		check.ErrorIs(t, err, idem.ErrInvalidKey, "%q %q", c.operation, c.principal)
		check.ErrorContains(t, err, c.says)
	}
	env := newEnv(t)
	s := newStore(t, env)
	for i, c := range []struct{ fp, says string }{
		{"\xff", "not UTF-8"},
		{strings.Repeat("f", 1024+1), "fingerprint of 1025 bytes, at most 1024"},
		{strings.Repeat("f", 1024), ""},
	} {
		fp, says := c.fp, c.says
		ran := false
		_, err := s.Run(context.Background(), scope(t, fmt.Sprint("bounds-", i)), fp, func(context.Context) (idem.Response, error) {
			ran = true
			return idem.Response{}, nil
		})
		if says == "" {
			check.NoError(t, err, "a fingerprint of 1024 bytes is admitted")
			check.True(t, ran)
			continue
		}
		check.ErrorIs(t, err, idem.ErrInvalidKey)
		check.ErrorContains(t, err, says)
		check.False(t, ran, "refused before the effect")
	}
}
