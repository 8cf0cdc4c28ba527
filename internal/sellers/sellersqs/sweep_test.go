package sellersqs_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/sellers"
)

// TestHotSellerConcurrencySweep measures what one seller's events cost
// (batches of 10, 400 events, 1 to 2 deliveries each, isolation
// modelled): at 1, 2, 5 and 10 concurrent environments, the figures the
// event source mapping's settings in template.yaml are chosen from; and
// at 6 environments with 1 to 16 shards, the figures sellers.Shards is
// chosen from. Each row's conflicts are split by what they met held: a
// shard of the seller, or an event's record (a duplicate of it committing
// in another environment); "duplicates met" counts the transactions
// cancelled by an event another environment had counted (the batch's
// rest then commits in one more). It asserts only the counts; the tables
// are the point. It takes a while, so it runs only with SELLERS_SWEEP=1
// (make sweep-sellers).
func TestHotSellerConcurrencySweep(t *testing.T) {
	if os.Getenv("SELLERS_SWEEP") == "" {
		t.Skip("set SELLERS_SWEEP=1 (make sweep-sellers) to measure the hot-seller concurrency sweep")
	}
	const head = " | batches | calls per event | conflicts per event: on a shard | on a record | duplicates met per event | redeliveries | dead-lettered |\n" +
		"| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
	row := func(table *strings.Builder, first int, h hotSellerFigures) {
		fmt.Fprintf(table, "| %d | %d | %.2f | %.2f | %.2f | %.2f | %d | %d |\n", first, h.Batches, h.callsPerEvent(),
			h.perEvent(h.Shards), h.perEvent(h.OnRecord), h.perEvent(h.Duplicates), h.Redelivered, len(h.DeadLettered))
	}
	var envs strings.Builder
	envs.WriteString("| environments" + head)
	for _, workers := range []int{1, 2, 5, 10} {
		f := newFixture(t)
		row(&envs, workers, runHotSeller(t, f, uint64(workers), 400, workers, 10))
	}
	t.Logf("hot seller, 400 events, batches of 10, %v transactions, %d shards:\n%s", txLatency, sellers.Shards, envs.String())

	var shards strings.Builder
	shards.WriteString("| shards" + head)
	for _, n := range []int{1, 2, 4, 8, 10, 16} {
		f := newFixture(t)
		f.shards = n
		row(&shards, n, runHotSeller(t, f, 6, 400, 6, 10))
	}
	t.Logf("hot seller at 6 environments, 400 events, batches of 10, %v transactions:\n%s", txLatency, shards.String())
}
