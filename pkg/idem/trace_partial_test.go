package idem_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// TestPartialTraceNeverPanics: a trace with only some hooks, its Start
// hooks returning nil, and a nil store trace, on every way in, with a
// live and with a cancelled context: no hook is called that is not set.
func TestPartialTraceNeverPanics(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	nilStarts := &idemtrace.Trace{
		ClaimStart:  func(context.Context, idemtrace.ClaimStartInfo) context.Context { return nil },
		EffectStart: func(context.Context, idemtrace.EffectStartInfo) context.Context { return nil },
		WaitDone:    func(context.Context, idemtrace.WaitDoneInfo) {},
		Retry:       func(context.Context, idemtrace.RetryInfo) {},
	}
	onlyDone := &idemtrace.Trace{
		CommitDone:  func(context.Context, idemtrace.CommitDoneInfo) {},
		ReleaseDone: func(context.Context, idemtrace.ReleaseDoneInfo) {},
		BatchTxDone: func(context.Context, idemtrace.BatchTxDoneInfo) {},
	}
	for _, tr := range []*idemtrace.Trace{nil, {}, nilStarts, onlyDone} {
		for _, mode := range modes {
			s := newStore(t, env, idem.WithMode(mode), idem.WithTrace(tr))
			for _, cancelled := range []bool{false, true} {
				ctx, cancel := context.WithCancel(idemtrace.WithTrace(context.Background(), tr))
				if cancelled {
					cancel()
				}
				sc := scope(t, "partial-"+string(mode))
				_, _ = s.Execute(ctx, sc, "fp", effect(env))
				_, _ = s.Run(ctx, scope(t, "partial-run-"+string(mode)), "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
				_, _, _ = idem.Do(ctx, s, scope(t, "partial-do-"+string(mode)), "fp", func(context.Context) (int, error) { return 1, nil })
				_, err := s.ExecuteBatch(ctx, []idem.BatchItem{{Scope: scope(t, "partial-batch-"+string(mode)), Fingerprint: "fp"}},
					func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })
				if !cancelled {
					must.NoError(t, err)
				}
				cancel()
			}
		}
	}
}
