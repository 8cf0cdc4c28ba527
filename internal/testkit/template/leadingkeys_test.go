package template_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/api"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/expiry"
	"github.com/idemlambda/idemlambda/internal/sellers/sellersqs"
	"github.com/idemlambda/idemlambda/internal/testkit/template"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// itemActions are the DynamoDB actions that name each item's key, so
// dynamodb:LeadingKeys is present on every request. On any other action
// (Scan, DescribeTable) the key is absent and ForAllValues holds
// vacuously: the condition would confine nothing.
var itemActions = []string{
	"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
	"dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:Query",
}

// TestIdempotencyRecordsConfinedToOwnOperation checks that each function
// sharing the idempotency table may touch only the records of the
// operation its code scopes them by: every statement on the table carries
// ForAllValues:StringLike dynamodb:LeadingKeys of that operation's
// prefix, computed here by pkg/idem from the operation constant, so a
// renamed operation or a changed id encoding fails until the template
// follows.
func TestIdempotencyRecordsConfinedToOwnOperation(t *testing.T) {
	want := map[string]string{
		"createproduct": idemtable.LeadingKeyPrefix(api.OperationCreateProduct) + "*",
		"sellerstats":   idemtable.LeadingKeyPrefix(sellersqs.Operation) + "*",
	}
	for fn, p := range want {
		// IAM reads * and ? as wildcards and ${...} as a policy variable;
		// inside the prefix they would widen or break it.
		if lit := strings.TrimSuffix(p, "*"); strings.ContainsAny(lit, "*?$") {
			t.Errorf("%s: prefix %q holds an IAM wildcard or variable character", fn, lit)
		}
	}
	// The sweeper deletes every operation's expired records: its deletes
	// are confined to the records' encoding version, its checkpoint's
	// read and write to the checkpoint's key, and its Scan, which names
	// no key, to nothing (it reads).
	version, _, _ := strings.Cut(idemtable.LeadingKeyPrefix(api.OperationCreateProduct), "|")
	checkpoint, _, _ := strings.Cut(expiry.CheckpointID, "|")
	sweeper := map[string][]string{
		"dynamodb:Scan": nil, "dynamodb:DeleteItem": {version + "|*"},
		"dynamodb:GetItem": {checkpoint + "|*"}, "dynamodb:PutItem": {checkpoint + "|*"},
	}
	tpl := load(t)
	seen := map[string]int{}
	for fn, id := range functionIDs(t, tpl) {
		role, _, ok := template.GetAttTarget(tpl.Resources[id].Properties["Role"])
		if !ok {
			t.Errorf("%s: Role is not !GetAtt <role>.Arn", id)
			continue
		}
		found := map[string][]map[string]any{}
		statements(tpl.Resources[role].Properties["Policies"], role, found)
		for where, list := range found {
			for _, s := range list {
				if !onIdempotencyTable(s) {
					continue
				}
				seen[fn]++
				if fn == config.NameSweeper {
					for _, a := range actionsOf(s) {
						want, ok := sweeper[a]
						if got := leadingKeys(s["Condition"]); !ok || !slices.Equal(got, want) {
							t.Errorf("sweeper: %s grants %s on the idempotency table confined to %v, want %v (granted: %v)", where, a, got, want, ok)
						}
					}
					continue
				}
				prefix, scoped := want[fn]
				if !scoped {
					t.Errorf("%s: %s may use the idempotency table, but no operation of its code is known here: %v", fn, where, s)
					continue
				}
				for _, a := range actionsOf(s) {
					if !slices.Contains(itemActions, a) {
						t.Errorf("%s: %s grants %s, on which dynamodb:LeadingKeys does not confine", fn, where, a)
					}
				}
				if got := leadingKeys(s["Condition"]); !slices.Equal(got, []string{prefix}) {
					t.Errorf("%s: %s Condition = %v\n  want ForAllValues:StringLike dynamodb:LeadingKeys [%q] (idemtable.LeadingKeyPrefix of its operation)",
						fn, where, s["Condition"], prefix)
				}
			}
		}
	}
	for _, fn := range append(slices.Collect(maps.Keys(want)), config.NameSweeper) {
		if seen[fn] == 0 {
			t.Errorf("%s: no statement on the idempotency table found; the walk is broken or the grant moved", fn)
		}
	}
}

// onIdempotencyTable reports whether a statement's Resource names the
// idempotency table, or anything under it.
func onIdempotencyTable(s map[string]any) bool {
	res := s["Resource"]
	rl, isList := res.([]any)
	if !isList {
		rl = []any{res}
	}
	for _, r := range rl {
		if name, ok := tableResource(r); ok && strings.HasPrefix(name, "IdempotencyTable.") {
			return true
		}
	}
	return false
}

// leadingKeys returns the values of a condition that is exactly
// {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": values}}, or nil.
func leadingKeys(cond any) []string {
	m, ok := cond.(map[string]any)
	if !ok || len(m) != 1 {
		return nil
	}
	op, ok := m["ForAllValues:StringLike"].(map[string]any)
	if !ok || len(op) != 1 {
		return nil
	}
	var out []string
	switch v := op["dynamodb:LeadingKeys"].(type) {
	case string:
		out = []string{v}
	case []any:
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}
