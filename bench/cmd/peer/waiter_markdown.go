package main

import (
	"fmt"
	"strings"
)

// waiterSection is workload 5's section: each waiter's calls and wait.
func waiterSection(b *strings.Builder, wr *WaiterRun) {
	if wr == nil {
		return // a run recorded before the bench had workload 5
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("## 5. A waiting duplicate\n\n")
	w("idemlambda only (Powertools has no wait: a duplicate while the first call runs gets `IdempotencyAlreadyInProgressError`, and idemlambda's 409 without a wait is workload 2). ")
	w("For each of %d keys in turn, a first call holds the key for %.0f ms (`pkg/idem`'s `Store.Run` with an operation that sleeps, on a store and client of its own, as another Lambda execution environment), ", wr.Keys, wr.HoldMs)
	w("and a duplicate arrives just after its claim on a store of its own that waits (`idem.WithWait(%.0f ms)`): it claims (one conditional PutItem, which returns the holder's record), then polls the record with consistent GetItems until the holder completes, and replays its response. ", 3*wr.HoldMs)
	w("The waiter's store lives across the keys, as one execution environment's does: at the first key it knows nothing of the operation and polls at full jitter under a limit of 25 ms doubling to 500 ms; at the others it has watched an execution complete, and polls at most every 500 ms until the holder's claim plus that execution time plus a transaction's, then more often. ")
	w("Calls are the waiter's own, counted by its client. Load average %s at the start.\n\n", wr.LoadAvgBefore)
	w("| key | the waiter's store knows the operation | DynamoDB calls of the waiter | of them GetItem | its wait (ms) |\n")
	w("| ---: | --- | ---: | ---: | ---: |\n")
	for i := range wr.Calls {
		knows := "yes"
		if i == 0 {
			knows = "no"
		}
		w("| %d | %s | %d | %d | %.0f |\n", i+1, knows, wr.Calls[i], wr.Gets[i], wr.WaitMs[i])
	}
	w("\n")
}

// waiterFinding is the closing note's line on workload 5.
func waiterFinding(b *strings.Builder, wr *WaiterRun) {
	if wr == nil || len(wr.Calls) == 0 {
		return
	}
	line := fmt.Sprintf("- **5. A waiting duplicate of a %.0f ms holder**: %d calls (%d of them GetItem) from a store that knew nothing of the operation", wr.HoldMs, wr.Calls[0], wr.Gets[0])
	if n := len(wr.Calls) - 1; n > 0 {
		calls, gets, wait := 0, 0, 0.0
		for i := 1; i < len(wr.Calls); i++ {
			calls += wr.Calls[i]
			gets += wr.Gets[i]
			wait += wr.WaitMs[i]
		}
		line += fmt.Sprintf("; %.1f calls (%.1f of them GetItem) on average from one that had watched an execution complete, answering %.0f ms after it arrived", float64(calls)/float64(n), float64(gets)/float64(n), wait/float64(n))
	}
	fmt.Fprintf(b, "%s (first key: %.0f ms). Powertools has no wait.\n", line, wr.WaitMs[0])
}
