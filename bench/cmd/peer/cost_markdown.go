package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// costIntro says where the units and the prices come from, and what the
// Lambda figures are and are not.
func costIntro(b *strings.Builder, pr *Prices) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("Capacity units are counted at the endpoint, like the calls: the store's running totals (`GET /consumed` of `internal/dev/embedded`, read before and after the step, on the step's tables), computed as DynamoDB documents them for on-demand tables: a write unit per KB of each item written (the larger of the item before and after), twice that inside a transaction (prepare and commit); a read unit per 4 KB strongly consistent. ")
	w("Every request counts, whatever its `ReturnConsumedCapacity` asked and though no answer is touched: a failed condition consumes the write units of the item it met (at least 1), as DynamoDB documents; a transaction cancelled on a condition consumes its prepare phase, 1 write unit per KB of each item it met (a Put of an absent item: 1), not doubled (DynamoDB documents the two phases, not a cancelled transaction's bill; its answer carries no ConsumedCapacity, so only the store can count it). A write refused by a running transaction (`TransactionConflictException`, or a transaction cancelled with reason `TransactionConflict`) reaches no item and consumes nothing here; DynamoDB does not document its cost. ")
	if pr != nil {
		w("Prices: on-demand list prices in %s, read %s (%s): DynamoDB (Standard table class) $%.3f per million write request units and $%.3f per million read request units; Lambda $%.2f per million requests and $%.10f per GB-second of %s duration (the template's architecture; first tier), billed per invocation rounded up to 1 ms. ",
			pr.Region, pr.Read, strings.Join(pr.Sources, ", "), pr.WriteRequestUnit*1e6, pr.ReadRequestUnit*1e6, pr.LambdaRequest*1e6, pr.LambdaGBSecond, pr.LambdaArchitecture)
		w("Both pages fill their price tables in the browser; the figures were checked against transcriptions of them dated 2025-07 to 2026-10, which agree. Free tiers, storage, API Gateway and SQS are left out (the same for every implementation). ")
	}
	w("Lambda $/M is a million requests plus their duration: billed ms is the mean over the step's invocations of each one's duration, measured around the handler, rounded up to the next ms; the mean, not the p50, because the bill is the sum of every invocation's billed duration, the slow tail included. ")
	w("**That duration is measured on this 2-CPU machine against a local store, not on Lambda**: on Lambda each DynamoDB call is a network round trip of milliseconds, so the calls per request above, not this machine's store time, would dominate the duration; and a 128 MB function gets about 128/1769 of a vCPU, so its CPU-bound part (CPU µs/req above) would run about 14 times longer there. The same measured duration is priced at both sizes; read the Lambda columns as the order of magnitude, the DynamoDB columns as the bill.\n\n")
}

// costTable is the cost of every workload row of the main table.
func costTable(b *strings.Builder, r *Results, ps []*Phase) {
	var rows []*Phase
	for _, p := range ps {
		if p.Cost != nil {
			rows = append(rows, p)
		}
	}
	if len(rows) == 0 {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	mbs := memorySizes(r.Prices)
	w("### What each request costs\n\n")
	costIntro(b, r.Prices)
	w("| workload | implementation | write units per request by operation | WRU/req | RRU/req | DynamoDB $/M | billed ms |")
	for _, mb := range mbs {
		w(" Lambda $/M %d MB |", mb)
	}
	for _, mb := range mbs {
		w(" total $/M %d MB |", mb)
	}
	w("\n| --- | --- | --- | ---: | ---: | ---: | ---: |%s\n", strings.Repeat(" ---: |", 2*len(mbs)))
	for _, p := range rows {
		c := p.Cost
		w("| %s | %s | %s | %.2f | %.2f | %s | %s |", p.Label, implName(p.Impl), writesByOp(c, p.Requests), c.WRU, c.RRU, usd(c.DynamoDB), billed(c))
		for _, mb := range mbs {
			w(" %s |", lambdaUSD(c, mb))
		}
		for _, mb := range mbs {
			w(" %s |", totalUSD(c, mb))
		}
		w("\n")
	}
	w("\n")
}

// consumerCostTable is the cost of every consumer run, per event.
func consumerCostTable(b *strings.Builder, ps []*ConsumerPhase) {
	var rows []*ConsumerPhase
	for _, p := range ps {
		if p.Cost != nil {
			rows = append(rows, p)
		}
	}
	if len(rows) == 0 {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	mbs := prices.MemoryMB
	for _, p := range rows {
		if m := pricedSizes(p.Cost); len(m) > 0 {
			mbs = m
			break
		}
	}
	w("### What each event costs\n\n")
	w("Per distinct event, counted and priced as for the requests above (the same caveats on the duration). A Lambda invocation is a batch: invocations per event is the run's invocations over its distinct events, billed ms is per invocation.\n\n")
	w("| sellers | invocations at once | implementation | write units per event by operation | WRU/event | RRU/event | DynamoDB $/M events | invocations per event | billed ms |")
	for _, mb := range mbs {
		w(" Lambda $/M %d MB |", mb)
	}
	for _, mb := range mbs {
		w(" total $/M %d MB |", mb)
	}
	w("\n| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |%s\n", strings.Repeat(" ---: |", 2*len(mbs)))
	for _, p := range rows {
		c := p.Cost
		w("| %d | %d | %s | %s | %.2f | %.2f | %s | %.3f | %s |", p.Sellers, p.Procs, consumerName(p.Impl), writesByOp(c, p.Events), c.WRU, c.RRU, usd(c.DynamoDB), c.Invocations, billed(c))
		for _, mb := range mbs {
			w(" %s |", lambdaUSD(c, mb))
		}
		for _, mb := range mbs {
			w(" %s |", totalUSD(c, mb))
		}
		w("\n")
	}
	w("\n")
}

// memorySizes are the Lambda sizes a run priced.
func memorySizes(pr *Prices) []int {
	if pr == nil || len(pr.MemoryMB) == 0 {
		return prices.MemoryMB
	}
	return pr.MemoryMB
}

func billed(c *Cost) string {
	if c.BilledMs <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", c.BilledMs)
}

func lambdaUSD(c *Cost, mb int) string {
	if v, ok := c.Lambda[mb]; ok {
		return usd(v)
	}
	return "—"
}

func totalUSD(c *Cost, mb int) string {
	if v, ok := c.Total[mb]; ok {
		return usd(v)
	}
	return "—"
}

// costOf is a measure's value from a phase's cost, NaN without one (no
// comparison then holds).
func costOf(p *Phase, f func(*Cost) float64) float64 {
	if p.Cost == nil {
		return math.NaN()
	}
	return f(p.Cost)
}

// totalAt is the total $/M at the largest priced size, NaN when the step
// measured no duration.
func totalAt(c *Cost) float64 {
	mbs := pricedSizes(c)
	if len(mbs) == 0 {
		return math.NaN()
	}
	return c.Total[mbs[len(mbs)-1]]
}

// costFindings is the closing note's cost: each implementation's cost per
// million requests in workloads 1 and 2b, and every step where a mode of
// idemlambda consumes more write units than Powertools, by how much and
// why (the consumer's comparison is in its own section).
func costFindings(b *strings.Builder, ps []*Phase) {
	if !slices.ContainsFunc(ps, func(p *Phase) bool { return p.Cost != nil }) {
		return // a run recorded before the bench counted units
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	line := func(p *Phase) string {
		c := p.Cost
		var lam, tot []string
		for _, mb := range pricedSizes(c) {
			lam = append(lam, fmt.Sprintf("%s at %d MB", lambdaUSD(c, mb), mb))
			tot = append(tot, totalUSD(c, mb))
		}
		return fmt.Sprintf("%s %.2f WRU + %.2f RRU = %s DynamoDB, Lambda %s (%s billed ms), total %s",
			shortName(p.Impl), c.WRU, c.RRU, usd(c.DynamoDB), strings.Join(lam, ", "), billed(c), strings.Join(tot, " / "))
	}
	for _, wl := range []string{"seq", "dupp"} {
		var parts []string
		label := ""
		for _, impl := range impls {
			if p := find(ps, impl, wl, "run"); p != nil && p.Cost != nil {
				parts = append(parts, line(p))
				label = p.Label
			}
		}
		if len(parts) > 0 {
			num, what, _ := strings.Cut(label, ". ")
			w("- **What it costs in workload %s** (%s), per million requests: %s.\n", num, what, strings.Join(parts, "; "))
		}
	}

	var more []string
	reasons := map[string]bool{}
	for _, s := range []struct{ workload, step string }{{"seq", "run"}, {"dup", "run"}, {"dupp", "run"}, {"crash", "retry"}} {
		t := find(ps, Powertools, s.workload, s.step)
		if t == nil || t.Cost == nil {
			continue
		}
		for _, impl := range []string{Ours, OursTransact} {
			o := find(ps, impl, s.workload, s.step)
			if o == nil || o.Cost == nil || o.Cost.WRU <= t.Cost.WRU+1e-9 {
				continue
			}
			d := o.Cost.WRU - t.Cost.WRU
			more = append(more, fmt.Sprintf("workload %s, %s: %.2f against %.2f WRU per request (+%.2f, +%.0f%%; DynamoDB %s against %s per million requests): %s, against Powertools' %s",
				strings.SplitN(o.Label, ".", 2)[0], shortName(impl), o.Cost.WRU, t.Cost.WRU, d, 100*d/t.Cost.WRU,
				usd(o.Cost.DynamoDB), usd(t.Cost.DynamoDB), writesByOp(o.Cost, o.Requests), writesByOp(t.Cost, t.Requests)))
			reasons[impl+" "+s.workload] = true
		}
	}
	// The bullet's sentences, each ending in a space, then the newline.
	var sb strings.Builder
	defer func() { b.WriteString(strings.TrimRight(sb.String(), " ") + "\n") }()
	w = func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	w("- **Where exactly once in one transaction consumes more write units than Powertools' separate writes** (a transaction bills each item's write units twice, prepare and commit; the consumer's comparison is in section 4): ")
	if len(more) == 0 {
		w("nowhere in workloads 1 to 3 of this run.")
		return
	}
	w("%s. ", strings.Join(more, "; "))
	if reasons[Ours+" seq"] || reasons[Ours+" dup"] || reasons[Ours+" dupp"] {
		w("A first execution in reserve mode writes the key's completion inside the business transaction, so that item is billed twice, where Powertools completes the key with a separate UpdateItem billed once; the claim's PutItem is the same on both sides, and so is a duplicate's failed PutItem (workload 2 is one first execution and seven duplicates per key). ")
	}
	if t := find(ps, OursTransact, "seq", "run"); t != nil && !reasons[OursTransact+" seq"] {
		w("Transact mode's first execution is not among them: it writes the record once, inside the transaction (twice its units), in place of Powertools' claim PutItem and completion UpdateItem (once each), the same units for a record under 1 KB, in one call instead of three. ")
	}
	if reasons[OursTransact+" dup"] || reasons[OursTransact+" dupp"] || reasons[OursTransact+" crash"] {
		w("In transact mode every duplicate, and the retry after a crash, sends its whole transaction (the claim with its own product and outbox Puts) and the store cancels it on the claim's condition: the cancelled transaction's prepare consumes 1 unit per KB of each item it met (the record, and two absent items at 1 each), where a reserve or Powertools duplicate's failed PutItem consumes the record's. ")
	}
}

// pricedSizes are the memory sizes a cost was priced at, smallest first.
func pricedSizes(c *Cost) []int {
	var mbs []int
	for mb := range c.Lambda {
		mbs = append(mbs, mb)
	}
	slices.Sort(mbs)
	return mbs
}
