package main

import (
	"fmt"
	"slices"
	"strings"
)

// consumerName is a consumer implementation's name in the table.
func consumerName(impl string) string {
	if impl == ConsumerOurs {
		return "idemlambda sellerstats (Go)"
	}
	return "Powertools batch + makeIdempotent (TS)"
}

// consumerOps formats a consumer phase's calls per event by operation.
func consumerOps(p *ConsumerPhase) string {
	ops := make([]string, 0, len(p.Calls.Ops))
	for op := range p.Calls.Ops {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %.2f", op, float64(p.Calls.Ops[op])/float64(p.Events))
	}
	return strings.Join(parts, " + ")
}

// conflicts is the phase's writes refused or transactions cancelled by a
// running transaction, as the proxy counted them.
func conflicts(p *ConsumerPhase) int {
	n := 0
	for k, c := range p.Calls.Errors {
		if strings.HasSuffix(k, " TransactionConflictException") || strings.HasSuffix(k, " reason TransactionConflict") {
			n += c
		}
	}
	return n
}

func truthCell(p *ConsumerPhase) string {
	if p.TruthHeld {
		return "yes"
	}
	return "**no**: " + strings.Join(p.Mismatch, "; ")
}

// consumerSection is the consumer workload's table and findings.
func consumerSection(b *strings.Builder, ps []*ConsumerPhase) {
	if len(ps) == 0 {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	ps = slices.Clone(ps)
	slices.SortStableFunc(ps, func(a, b *ConsumerPhase) int {
		if a.Sellers != b.Sellers {
			return a.Sellers - b.Sellers
		}
		if a.Procs != b.Procs {
			return a.Procs - b.Procs
		}
		return slices.Index(consumerImpls, a.Impl) - slices.Index(consumerImpls, b.Impl)
	})
	w("## 4. Consumer: seller statistics from SQS\n\n")
	w("ProductCreated events as EventBridge delivers them through SQS (the message body is the EventBridge event, its detail the CloudEvent), each event delivered 1 or 2 times as its own message, shuffled, in batches of %d; the same messages for both implementations. ", batchSize)
	w("Several Lambda execution environments (one process each) take batches from one queue; a message a batch reports failed goes back to the end of the queue, up to %d receives, then to the dead-letter queue. ", maxReceives)
	w("idemlambda is the sellerstats function (`sellerstats.New`, transact mode): a batch's idempotency records and one aggregated update per seller (on one of its shards) in one TransactWriteItems (`idemsqs` Consumer.Transact on `Store.ExecuteBatch`). ")
	w("Powertools is its documented pattern: `processPartialResponse` with `BatchProcessor(EventType.SQS)` and the record handler wrapped by `makeIdempotent` (key: the CloudEvent id, `powertools_json(body).detail.id`), the handler one UpdateItem (ADD count and total) on the seller. ")
	w("Calls, conflicts and CPU are per distinct event; events per second is distinct events over the wall time from the first batch to the last answer. Truth: after the run, each seller's count and total in the sellers table equal its distinct events'.\n\n")
	w("| sellers | invocations at once | implementation | events (deliveries) | invocations | DynamoDB calls per event | total | conflicts | redelivered | dead-lettered | CPU µs/event | events/s | truth held | load |\n")
	w("| ---: | ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n")
	for _, p := range ps {
		w("| %d | %d | %s | %d (%d) | %d | %s | %.2f | %d | %d | %d | %.0f | %.0f | %s | %s |\n",
			p.Sellers, p.Procs, consumerName(p.Impl), p.Events, p.Deliveries, p.Invocations, consumerOps(p), p.CallsPerEvent,
			conflicts(p), p.Redelivered, p.DeadLettered, p.CPUPerEventUs, p.EventsPerSec, truthCell(p), p.LoadAvgBefore)
	}
	w("\n")
	var rs []string
	for i := 0; i+1 < len(ps); i += 2 {
		o, t := ps[i], ps[i+1]
		if o.Impl != ConsumerOurs || t.Impl != ConsumerPowertools || o.Sellers != t.Sellers || o.Procs != t.Procs {
			continue
		}
		rs = append(rs, fmt.Sprintf("%d seller(s), %d at once: %.2f vs %.2f calls per event (%.1f× fewer), %.0f vs %.0f µs CPU per event (%.1f× less), %.0f vs %.0f events/s",
			o.Sellers, o.Procs, o.CallsPerEvent, t.CallsPerEvent, t.CallsPerEvent/o.CallsPerEvent,
			o.CPUPerEventUs, t.CPUPerEventUs, t.CPUPerEventUs/o.CPUPerEventUs, o.EventsPerSec, t.EventsPerSec))
	}
	if len(rs) > 0 {
		w("idemlambda against Powertools, per run: %s.\n\n", strings.Join(rs, "; "))
	}
	consumerCostTable(b, ps)
	consumerUnits(b, ps)
	w("Powertools pays 3 calls for each new event (the claim's conditional PutItem, the handler's UpdateItem, the completion's UpdateItem) and 1 for each duplicate that finds the record completed; a duplicate that finds it IN_PROGRESS in another environment fails with `IdempotencyAlreadyInProgressError`, its message is redelivered and costs its PutItem again. ")
	w("idemlambda pays one TransactWriteItems per batch, two when some of the batch's events were counted before (the cancellation reasons name them; the rest commit in the second), plus retries when a concurrent batch holds the same seller's shard or a duplicate's record. ")
	w("Events per second here is bounded by this machine's two shared CPUs and the store (the load column), not by DynamoDB.\n\n")
}

// consumerUnits compares the write units per event of the two consumers,
// run by run, and says where the transaction consumes more.
func consumerUnits(b *strings.Builder, ps []*ConsumerPhase) {
	var more, less []string
	for _, o := range ps {
		for _, t := range ps {
			if o.Impl != ConsumerOurs || t.Impl != ConsumerPowertools || o.Sellers != t.Sellers || o.Procs != t.Procs || o.Cost == nil || t.Cost == nil {
				continue
			}
			d := o.Cost.WRU - t.Cost.WRU
			s := fmt.Sprintf("%d seller(s), %d at once: %.2f against %.2f WRU per event (%+.2f, %+.0f%%; DynamoDB %s against %s per million events, total at the largest size %s against %s), with %.1f× fewer calls",
				o.Sellers, o.Procs, o.Cost.WRU, t.Cost.WRU, d, 100*d/t.Cost.WRU, usd(o.Cost.DynamoDB), usd(t.Cost.DynamoDB),
				usd(totalAt(o.Cost)), usd(totalAt(t.Cost)), t.CallsPerEvent/o.CallsPerEvent)
			if d > 1e-9 {
				more = append(more, s)
			} else {
				less = append(less, s)
			}
		}
	}
	if len(more)+len(less) == 0 {
		return
	}
	var sb strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	if len(more) > 0 {
		w("**Where the consumer's one transaction consumes more write units than Powertools' separate writes**: %s. ", strings.Join(more, "; "))
		w("Each new event's record is written in the batch's transaction (2 units per record under 1 KB) with the batch's aggregated seller updates (2 each), and a batch holding an event counted before is first cancelled (its prepare: 1 unit per KB of each item it met) and then committed without it; Powertools pays 1 unit for the claim's PutItem, 1 for the handler's UpdateItem and 1 for the completion's per new event, and 1 per duplicate's PutItem. Fewer calls, more units: calls are not the bill. ")
	}
	if len(less) > 0 {
		w("Where it consumes no more: %s. ", strings.Join(less, "; "))
	}
	b.WriteString(strings.TrimRight(sb.String(), " ") + "\n\n")
}
