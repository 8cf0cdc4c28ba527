package api_test

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkCreateFirstExecution is a POST with a fresh key: decode,
// validate, reserve, commit product + outbox + completion. It includes the
// embedded store's work in this process (see make bench for a run against
// a store in another process).
func BenchmarkCreateFirstExecution(b *testing.B) {
	f := newBenchFixture(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		resp, _ := f.create.Handle(context.Background(), postReq(jsonHeaders("bench-"+strconv.Itoa(i)), widget))
		if resp.StatusCode != 201 {
			b.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
		}
		i++
	}
	b.ReportMetric(float64(f.env.Counter.Total())/float64(i), "ddb-calls/op")
}

// BenchmarkCreateReplay is a retry of a completed key.
func BenchmarkCreateReplay(b *testing.B) {
	f := newBenchFixture(b)
	if resp, _ := f.create.Handle(context.Background(), postReq(jsonHeaders("bench-replay"), widget)); resp.StatusCode != 201 {
		b.Fatalf("status %d", resp.StatusCode)
	}
	f.env.Counter.Reset()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		resp, _ := f.create.Handle(context.Background(), postReq(jsonHeaders("bench-replay"), widget))
		if resp.Headers["Idempotent-Replayed"] != "true" {
			b.Fatalf("not a replay: %d", resp.StatusCode)
		}
		n++
	}
	b.ReportMetric(float64(f.env.Counter.Total())/float64(n), "ddb-calls/op")
}

// BenchmarkCreateRejected is a request refused before any DynamoDB call.
func BenchmarkCreateRejected(b *testing.B) {
	f := newBenchFixture(b)
	bad := `{"name":"Widget","price_cents":9.99,"currency":"EUR","seller_id":"` + sellerID + `"}`
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := f.create.Handle(context.Background(), postReq(jsonHeaders("k"), bad))
		if resp.StatusCode != 400 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	if f.env.Counter.Total() != 0 {
		b.Fatalf("a rejected request reached DynamoDB: %s", f.env.Counter)
	}
}
