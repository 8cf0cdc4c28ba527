package idem_test

import (
	"context"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// A caller named "anonymous" and the anonymous scope are two scopes on
// every way in of the store: one key from each is two executions, in one
// batch (ExecuteBatch) as in single calls (Run, Execute), and each
// replays only its own.
func TestACallerNamedAnonymousIsNotTheAnonymousScope(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := newStore(t, env)
	ctx := context.Background()
	anon, err := idem.NewAnonymousScope("POST /things", "k-1")
	must.NoError(t, err)
	named, err := idem.NewScope("POST /things", "anonymous", "k-1")
	must.NoError(t, err)

	l := &ledger{env: env}
	ds := []deposit{{key: "k-1", account: "a", cents: 1}, {key: "k-1", account: "a", cents: 1}}
	items := l.items(t, ds)
	items[0].Scope, items[1].Scope = anon, named
	for round, want := range []idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed} {
		res, err := s.ExecuteBatch(ctx, items, l.shared(ds))
		must.NoError(t, err)
		check.Equal(t, []idem.Outcome{want, want}, outcomes(res), "round %d", round)
	}
	check.Equal(t, 2, l.balance(t, "a"), "each scope's deposit once")

	for _, op := range []string{"POST /run", "POST /execute"} {
		anon, named := anon, named
		anon.Operation, named.Operation = op, op
		bodies := map[bool]string{}
		for range 2 {
			for _, sc := range []idem.Scope{anon, named} {
				body := "for " + sc.Principal
				var res idem.Result
				if op == "POST /run" {
					res, err = s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return created(body), nil })
				} else {
					res, err = s.Execute(ctx, sc, "fp", func(context.Context) (idem.Effect, error) {
						return idem.Effect{Response: created(body)}, nil
					})
				}
				must.NoError(t, err)
				if prev, ok := bodies[sc.Anonymous()]; ok {
					check.Equal(t, idem.OutcomeReplayed, res.Outcome, "%s %q", op, sc.Principal)
					check.Equal(t, prev, string(res.Response.Body))
				} else {
					check.Equal(t, idem.OutcomeExecuted, res.Outcome, "%s %q: another scope's response", op, sc.Principal)
					bodies[sc.Anonymous()] = string(res.Response.Body)
				}
			}
		}
		check.NotEqual(t, bodies[true], bodies[false])
	}
}
