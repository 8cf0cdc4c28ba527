package idem_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/idemlambda/idemlambda/internal/ddbtest"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// BenchmarkReserveCommit is one first execution: reserve a fresh key, then
// commit a product, its outbox event and the completion in one transaction.
// The embedded server's cost is included: it is the same HTTP round trips
// the Lambda makes, against a local server.
func BenchmarkReserveCommit(b *testing.B) {
	env := ddbtest.New(b)
	s := newStore(b, env)
	ctx := context.Background()
	env.Counter.Reset()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		claim, err := s.Reserve(ctx, scope(b, fmt.Sprintf("bench-%d", i)), "fp")
		if err != nil || claim.Lease == nil {
			b.Fatalf("reserve: %v", err)
		}
		id, items := businessWrites(env)
		if err := claim.Lease.Commit(ctx, created(id), items...); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(env.Counter.Total())/float64(i), "ddb-calls/op")
}

// BenchmarkReplay is a retry of a completed key.
func BenchmarkReplay(b *testing.B) {
	env := ddbtest.New(b)
	s := newStore(b, env)
	ctx := context.Background()
	sc := scope(b, "replayed")
	claim, err := s.Reserve(ctx, sc, "fp")
	if err != nil {
		b.Fatal(err)
	}
	id, items := businessWrites(env)
	if err := claim.Lease.Commit(ctx, created(id), items...); err != nil {
		b.Fatal(err)
	}
	env.Counter.Reset()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c, err := s.Reserve(ctx, sc, "fp")
		if err != nil || c.Replay == nil {
			b.Fatalf("replay: %v", err)
		}
		n++
	}
	b.ReportMetric(float64(env.Counter.Total())/float64(n), "ddb-calls/op")
}

// BenchmarkScopeAndFingerprint is the CPU-only work per request.
func BenchmarkScopeAndFingerprint(b *testing.B) {
	body := []byte(`{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"5f1c2a4e-8d6b-4f3a-9c2e-1b7d3e5a9f00"}`)
	b.ReportAllocs()
	for b.Loop() {
		sc, err := idem.NewScope("POST /products", "arn:aws:iam::123456789012:user/alice", "4b0c-key-1")
		if err != nil {
			b.Fatal(err)
		}
		_ = sc.ID()
		if _, err := idem.FingerprintJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}
