package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// What authorization and the limit cost each request, in DynamoDB calls
// (asserted: they are counts, the same on every run) and write units (the
// embedded store's, logged for docs/operations.md): a creation's checks
// ride in its own transaction, so they add items to it and no call; a
// token's refusal costs nothing; an IAM caller's costs what a transaction
// cancelled on a business condition costs.
func TestCallsAndUnitsPerRequest(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		f := newFixtureMode(t, mode, slog.LevelInfo, idem.WithCache(0, 0))
		if f.env.Store == nil {
			t.Skipf("the units are the embedded store's; %s backend in use", f.env.Kind)
		}
		require.NoError(t, access.Grant(context.Background(), f.env.Client, f.env.Tables.Callers, importer, sellerID))
		transact := mode == config.ModeTransact
		pick := func(reserve, transactMode int) int {
			if transact {
				return transactMode
			}
			return reserve
		}
		for _, tc := range []struct {
			name   string
			who    *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
			key    string
			body   string
			status int
			calls  int
		}{
			// reserve: claim, commit; transact: the commit, which claims
			{"token, first", jwtCaller("cost", sellerID), "c-1", widget, 201, pick(2, 1)},
			{"token, replay", jwtCaller("cost", sellerID), "c-1", widget, 201, 1},
			{"token, another seller", jwtCaller("cost", otherSeller), "c-2", widget, 403, 0},
			{"IAM, first", iamCaller("Importer", "s"), "c-3", widget, 201, pick(2, 1)},
			{"IAM, replay", iamCaller("Importer", "s"), "c-3", widget, 201, 1},
			// reserve: claim, commit, read-back, release; transact: the
			// commit, read-back
			{"IAM, not granted", iamCaller("Importer", "s"), "c-4", strings.Replace(widget, sellerID, otherSeller, 1), 403, pick(4, 2)},
		} {
			f.env.Counter.Reset()
			before := f.env.Store.Consumed().Total()
			resp := f.postAs(t, tc.who, tc.key, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.name, resp.Body)
			used := f.env.Store.Consumed().Total()
			assert.Equal(t, tc.calls, f.env.Counter.Total(), "%s: DynamoDB calls (%s)", tc.name, f.env.Counter)
			t.Logf("%-8s %-22s %d  %d calls  %4.1f write units  %4.1f read units  %s", mode, tc.name, tc.status,
				f.env.Counter.Total(), used.Write-before.Write, used.Read-before.Read, f.env.Counter)
		}
	})
}

// The limit's refusals: the first one in an environment that did not know
// the window was full costs what a cancelled transaction costs; once it
// knows, none costs a call.
func TestCallsOfALimitRefusal(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode config.Mode) {
		env := newFixture(t).env
		c := newClock(fixedWindowStart)
		h1 := limitedEnv(t, env, mode, access.Limit{Creates: 1, Window: 10 * time.Second}, c)
		client, counter := env.NewClient(t)
		h2 := limitedEnvOn(t, client, env, mode, access.Limit{Creates: 1, Window: 10 * time.Second}, c)
		who := jwtCaller("cost", "*")
		require.Equal(t, 201, serve(h1, who, "l-1").StatusCode)
		for i, want := range []int{map[config.Mode]int{config.ModeReserve: 4, config.ModeTransact: 2}[mode], 0} {
			counter.Reset()
			resp := serve(h2, who, fmt.Sprintf("l-%d", i+2))
			assertProblem(t, resp, 429, "too-many-requests")
			assert.Equal(t, want, counter.Total(), "refusal %d in the other environment (%s)", i+1, counter)
			t.Logf("%-8s limit refusal %d: %d calls, Retry-After %s", mode, i+1, counter.Total(), resp.Headers["Retry-After"])
		}
	})
}
