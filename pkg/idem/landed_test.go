package idem_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A call that fails after the SDK's retries may have landed on an earlier
// attempt: here the first attempt's write lands and its answer is lost
// (a 500), then every retry is throttled, so the last answer is a
// throttling refusal. The call must be treated as possibly landed.
func TestACallThatFailedAfterRetriesMayHaveLanded(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode idem.Mode) {
		env := newEnv(t)
		if env.Store == nil {
			t.Skipf("fault injection is the embedded store's; %s backend in use", env.Kind)
		}
		client, _ := env.NewClient(t, func(o *dynamodb.Options) {
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = 3
				so.MaxBackoff = 5 * time.Millisecond
			})
		})
		s, err := idem.NewStore(client, env.Tables.Idempotency, idem.WithMode(mode))
		must.NoError(t, err)
		ctx := context.Background()
		op := idemtest.OpPutItem // the claim
		if mode == idem.ModeTransact {
			op = idemtest.OpTransactWriteItems // the claim and the writes
		}
		env.Store.Inject(op, idemtest.LostAnswer, 1)
		env.Store.Inject(op, idemtest.Throttled, 2)
		res, err := s.Execute(ctx, scope(t, "landed"), "fp", effect(env))
		env.Store.ClearFaults()

		switch mode {
		case idem.ModeReserve:
			// The claim landed; the release, fenced by this call's token,
			// removes it, so the client's retry runs instead of being told
			// that its own request is in flight.
			must.Error(t, err)
			check.True(t, idem.IsUnavailable(err), "%v", err)
			check.Equal(t, idem.OutcomeUnavailable, res.Outcome)
			retried, err := s.Execute(ctx, scope(t, "landed"), "fp", effect(env))
			must.NoError(t, err)
			check.Equal(t, idem.OutcomeExecuted, retried.Outcome)
		case idem.ModeTransact:
			// The transaction landed: the record read back says so, and
			// the call answers as executed rather than unavailable.
			must.NoError(t, err)
			check.Equal(t, idem.OutcomeExecuted, res.Outcome)
			check.Equal(t, "application/json", res.Response.Meta["Content-Type"])
		}
		check.Equal(t, 1, countItems(t, env, env.Tables.Products), "the effect happened once")
	})
}
