package main

import (
	"math"
	"testing"

	"github.com/idemlambda/idemlambda/bench/proxy"
	"github.com/idemlambda/idemlambda/internal/dev/embedded"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %.12f, want %.12f", what, got, want)
	}
}

// Lambda bills each invocation's duration rounded up to the next
// millisecond: 1 µs is 1 ms, 1000 µs too, 1001 µs is 2.
func TestBilledMsRoundsEachInvocationUp(t *testing.T) {
	near(t, "billed", billedMs([]int64{1, 1000, 1001, 2500}), (1+1+2+3)/4.0)
	near(t, "none", billedMs(nil), 0)
}

// A step's cost: units per request at the DynamoDB prices, and a million
// invocations of the billed duration at each memory size.
func TestNewCostPricesUnitsAndDuration(t *testing.T) {
	units := map[string]Units{"PutItem": {Write: 10}, "TransactWriteItems": {Write: 60}, "GetItem": {Read: 2}}
	c := newCost("request", units, 10, 10, 3, prices)
	near(t, "WRU", c.WRU, 7)
	near(t, "RRU", c.RRU, 0.2)
	near(t, "DynamoDB", c.DynamoDB, 7*0.625+0.2*0.125)
	near(t, "invocations", c.Invocations, 1)
	// $0.20 of requests, and 3 ms of 0.125 GB at $0.0000133334 a GB-second, a million times.
	near(t, "Lambda 128", c.Lambda[128], 0.20+1e6*0.003*0.125*0.0000133334)
	near(t, "Lambda 1024", c.Lambda[1024], 0.20+1e6*0.003*1*0.0000133334)
	near(t, "total 1024", c.Total[1024], c.DynamoDB+c.Lambda[1024])

	// Per event: a batch's invocation shared by its events.
	e := newCost("event", units, 10, 2, 3, prices)
	near(t, "invocations per event", e.Invocations, 0.2)
	near(t, "Lambda per event", e.Lambda[128], 0.2*(0.20+1e6*0.003*0.125*0.0000133334))

	// No duration measured (the crash): DynamoDB only.
	if n := newCost("request", units, 10, 10, 0, prices); len(n.Lambda) != 0 || len(n.Total) != 0 {
		t.Errorf("a step without durations has Lambda %v, total %v", n.Lambda, n.Total)
	}
	if newCost("request", units, 0, 0, 3, prices) != nil {
		t.Error("a step without requests has a cost")
	}
}

// A step's units are the difference of two readings on its own tables.
func TestStepUnitsOnTheStepsTables(t *testing.T) {
	before := map[string]map[string]embedded.Units{
		"a-products": {"PutItem": {Write: 5, Requests: 5}},
	}
	after := map[string]map[string]embedded.Units{
		"a-products":    {"PutItem": {Write: 8, Requests: 7}, "TransactWriteItems": {Write: 4, Requests: 1}},
		"a-idempotency": {"TransactWriteItems": {Write: 2, Requests: 1}, "GetItem": {Read: 1, Requests: 1}},
		"b-products":    {"PutItem": {Write: 100, Requests: 100}},
	}
	units, requests := stepUnits(before, after, []string{"a-products", "a-idempotency", "a-outbox"})
	want := map[string]Units{"PutItem": {Write: 3}, "TransactWriteItems": {Write: 6}, "GetItem": {Read: 1}}
	if len(units) != len(want) {
		t.Fatalf("units %v, want %v", units, want)
	}
	for op, u := range want {
		if units[op] != u {
			t.Errorf("%s: %v, want %v", op, units[op], u)
		}
	}
	if requests["PutItem"] != 2 || requests["GetItem"] != 1 {
		t.Errorf("requests %v", requests)
	}
}

// The store's single-item requests must be the proxy's, less the writes
// a running transaction refused.
func TestCheckUnitsMatchesTheProxysRequests(t *testing.T) {
	c := proxy.Counts{
		Ops:    map[string]int{"PutItem": 10, "GetItem": 2, "TransactWriteItems": 3},
		Errors: map[string]int{"PutItem TransactionConflictException": 2},
	}
	if err := checkUnits(c, map[string]int{"PutItem": 8, "GetItem": 2}); err != nil {
		t.Error(err)
	}
	if err := checkUnits(c, map[string]int{"PutItem": 10, "GetItem": 2}); err == nil {
		t.Error("a refused write counted by the store passed")
	}
	if err := checkUnits(c, map[string]int{"PutItem": 8}); err == nil {
		t.Error("GetItems the store did not count passed")
	}
}
