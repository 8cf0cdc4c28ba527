package template_test

import (
	"slices"
	"testing"
)

// Every table outlives the stack and any replacement, and refuses a
// DeleteTable: each holds what nothing else can rebuild. The products
// and the sellers' statistics are the system of record; the idempotency
// records are the only guard against a second execution of a retried
// request and against counting an event twice (deleted with the stack,
// a retry within IDEMPOTENCY_RETENTION, or a redelivered event, would
// run again against the retained products and sellers); the outbox holds
// the events not yet relayed, the only copy of the products' effect on
// the statistics; the callers table holds the IAM callers' grants, which
// operators wrote and nothing else records. docs/operations.md, Security,
// says so table by table.
func TestEveryTableIsRetainedAndProtected(t *testing.T) {
	t.Parallel()
	tpl := load(t)
	tables := tpl.OfType("AWS::DynamoDB::Table")
	slices.Sort(tables)
	if want := []string{"CallersTable", "IdempotencyTable", "OutboxTable", "ProductsTable", "SellersTable"}; !slices.Equal(tables, want) {
		t.Fatalf("tables = %v, want %v: decide each new table's retention here and in docs/operations.md", tables, want)
	}
	for _, id := range tables {
		r := tpl.Resources[id]
		if r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
			t.Errorf("%s DeletionPolicy/UpdateReplacePolicy = %q/%q, want Retain/Retain", id, r.DeletionPolicy, r.UpdateReplacePolicy)
		}
		if p, ok := r.Properties["DeletionProtectionEnabled"].(bool); !ok || !p {
			t.Errorf("%s DeletionProtectionEnabled = %v, want true", id, r.Properties["DeletionProtectionEnabled"])
		}
	}
}
