package api_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/idemlambda/idemlambda/internal/config"
)

// The API benchmarks run per mode, and the replay with and without the
// cache. make bench runs them against a store in another process, so
// B/op and allocs/op are this project's and the SDK's alone.

// BenchmarkCreateFirstExecution is a POST with a fresh key: decode,
// validate, claim, commit product + outbox + completion.
func BenchmarkCreateFirstExecution(b *testing.B) {
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			f := newBenchFixture(b, mode, 0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				resp, _ := f.create(context.Background(), postReq(jsonHeaders("bench-"+strconv.Itoa(i)), widget))
				if resp.StatusCode != 201 {
					b.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
				}
				i++
			}
			b.ReportMetric(float64(f.env.Counter.Total())/float64(i), "ddb-calls/op")
		})
	}
}

// BenchmarkCreateReplay is a retry of a completed key, from the table and
// from the cache.
func BenchmarkCreateReplay(b *testing.B) {
	for _, mode := range modes {
		for _, cache := range []int{0, 1000} {
			name := string(mode) + "/table"
			if cache > 0 {
				name = string(mode) + "/cache"
			}
			b.Run(name, func(b *testing.B) {
				f := newBenchFixture(b, mode, cache)
				if resp, _ := f.create(context.Background(), postReq(jsonHeaders("bench-replay"), widget)); resp.StatusCode != 201 {
					b.Fatalf("status %d", resp.StatusCode)
				}
				f.env.Counter.Reset()
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					resp, _ := f.create(context.Background(), postReq(jsonHeaders("bench-replay"), widget))
					if resp.Headers["Idempotent-Replayed"] != "true" {
						b.Fatalf("not a replay: %d", resp.StatusCode)
					}
					n++
				}
				b.ReportMetric(float64(f.env.Counter.Total())/float64(n), "ddb-calls/op")
			})
		}
	}
}

// BenchmarkCreateConcurrentDuplicates sends 8 identical requests at once
// per fresh key; one op is one request, so ddb-calls/op is the mean over
// the winner and its 7 duplicates.
func BenchmarkCreateConcurrentDuplicates(b *testing.B) {
	const dups = 8
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			f := newBenchFixture(b, mode, 0)
			b.ReportAllocs()
			requests, statuses := 0, map[int]int{}
			var mu sync.Mutex
			for i := 0; b.Loop(); i++ {
				if i%dups != 0 {
					continue // each round of 8 counts as 8 ops
				}
				key := fmt.Sprintf("dup-%d", i)
				var wg sync.WaitGroup
				for range dups {
					wg.Go(func() {
						resp, _ := f.create(context.Background(), postReq(jsonHeaders(key), widget))
						mu.Lock()
						statuses[resp.StatusCode]++
						mu.Unlock()
					})
				}
				wg.Wait()
				requests += dups
			}
			if statuses[201]+statuses[409] != requests {
				b.Fatalf("statuses %v", statuses)
			}
			b.ReportMetric(float64(f.env.Counter.Total())/float64(requests), "ddb-calls/op")
			b.ReportMetric(float64(statuses[409])/float64(requests), "409s/op")
		})
	}
}

// BenchmarkCreateRejected is a request refused before any DynamoDB call.
func BenchmarkCreateRejected(b *testing.B) {
	f := newBenchFixture(b, config.ModeReserve, 0)
	bad := `{"name":"Widget","price_cents":9.99,"currency":"EUR","seller_id":"` + sellerID + `"}`
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := f.create(context.Background(), postReq(jsonHeaders("k"), bad))
		if resp.StatusCode != 400 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	if f.env.Counter.Total() != 0 {
		b.Fatalf("a rejected request reached DynamoDB: %s", f.env.Counter)
	}
}
