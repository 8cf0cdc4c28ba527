package main

import (
	"io"
	"testing"
)

// -sort-value describes a layout whose partition key holds the scope's ID
// and whose sort key a fixed value; it and -partition-value exclude each
// other.
func TestIdemctlSortValue(t *testing.T) {
	base := []string{"lookup", "-table", "app", "-operation", "POST /orders", "-anonymous", "-key", "k-1", "-partition-key", "PK", "-sort-key", "SK"}
	req, err := parse(append(base, "-sort-value", "#IDEMPOTENCY", "-key-prefix", "IDEM#"), "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if req.table.Layout.SortValue != "#IDEMPOTENCY" || req.table.Layout.PartitionValue != "" {
		t.Errorf("layout %+v", req.table.Layout)
	}
	if got := req.table.Layout.Key(req.scope.ID())["PK"]; got == nil {
		t.Error("no partition key")
	}
	if _, err := parse(append(base, "-sort-value", "A", "-partition-value", "B"), "", io.Discard); err == nil {
		t.Error("-sort-value with -partition-value should be refused")
	}
}
