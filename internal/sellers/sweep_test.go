package sellers_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestHotSellerConcurrencySweep measures what one seller's events cost at
// 1, 2, 5 and 10 concurrent environments (batches of 10, 400 events, 1 to
// 2 deliveries each, isolation modelled): the figures the event source
// mapping's settings in template.yaml are chosen from. It asserts only
// the counts; the table is the point. It takes a while, so it runs only
// with SELLERS_SWEEP=1 (make sweep-sellers).
func TestHotSellerConcurrencySweep(t *testing.T) {
	if os.Getenv("SELLERS_SWEEP") == "" {
		t.Skip("set SELLERS_SWEEP=1 (make sweep-sellers) to measure the hot-seller concurrency sweep")
	}
	var table strings.Builder
	table.WriteString("| environments | batches | calls per event | conflicts per event | redeliveries | dead-lettered |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, workers := range []int{1, 2, 5, 10} {
		f := newFixture(t)
		h := runHotSeller(t, f, uint64(workers), 400, workers, 10)
		fmt.Fprintf(&table, "| %d | %d | %.2f | %.2f | %d | %d |\n", workers, h.Batches, h.callsPerEvent(), h.conflictsPerEvent(), h.Redelivered, len(h.DeadLettered))
	}
	t.Logf("hot seller, 400 events, batches of 10, %v transactions:\n%s", txLatency, table.String())
}
