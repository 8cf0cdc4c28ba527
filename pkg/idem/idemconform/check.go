package idemconform

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// The workload of a cell: keys per caller, and concurrent duplicates of
// each request.
const (
	keysPerCaller = 3
	duplicates    = 3
)

// workload is a cell's actors: every caller's keys, each sent by
// `duplicates` concurrent actors; the first caller's first key also with
// another payload (key reuse); for a queue, a poison message. With the
// empty-principal fault, two of the callers have a principal function
// that names nobody.
func (w *world) workload() (actors []*actor, scopes int) {
	callers := []string{"alice", "bob"}
	empty := map[string]bool{}
	if w.cell.fault.emptyPrincipal {
		callers = []string{"alice", "carol", "dave"}
		empty["carol"], empty["dave"] = true, true
	}
	add := func(a *actor) {
		a.id = len(actors)
		a.req = &Request{a}
		actors = append(actors, a)
	}
	// Across Regions, the duplicates of a key are delivered in different
	// Regions.
	regions := w.regionNames()
	in := func(i int) string { return regions[i%len(regions)] }
	for _, c := range callers {
		for k := range keysPerCaller {
			for d := range duplicates {
				add(&actor{caller: c, key: fmt.Sprintf("k%d", k), variant: "a", emptyPrincipal: empty[c], region: in(d)})
			}
			scopes++
		}
	}
	add(&actor{caller: callers[0], key: "k0", variant: "b", region: in(1)})
	for _, a := range actors {
		if a.caller == callers[0] && a.key == "k0" {
			a.otherVariant = true
		}
	}
	if w.cell.way.Source == Queue || w.cell.way.Source == Stream {
		add(&actor{caller: "mallory", key: "k9", variant: "a", poison: true, region: in(2)})
	}
	// Interleave the actors so a queue's batches mix keys.
	w.rngMu.Lock()
	w.rng.Shuffle(len(actors), func(i, j int) { actors[i], actors[j] = actors[j], actors[i] })
	w.rngMu.Unlock()
	w.actors = actors
	return actors, scopes
}

// cellResult is a cell's line in the table.
type cellResult struct {
	way, fault, variant string
	skipped             string
	effects, windowed   int
	histories, ops      int
	violations          int
	// Across Regions: the cell, its keys, the keys whose effect ran more
	// than once (outside Run's window), and those the detector reported.
	regions                 *regionCell
	keys, doubles, detected int
}

// runCell runs one cell in its own bubble, then checks its history.
func runCell(t *testing.T, c cell) cellResult {
	res := cellResult{way: c.way.Name, fault: c.fault.name, variant: layouts[c.layout].name + "-" + c.mode}
	var w *world
	if c.regions != nil {
		res.fault, res.regions = c.regions.name(), c.regions
	}
	synctest.Test(t, func(t *testing.T) {
		w = newWorld(t, c)
		actors, scopes := w.workload()
		res.keys = scopes
		c.fault.arm(w, scopes)
		if w.regions != nil {
			w.regions.start(scopes)
		}
		switch c.way.Source {
		case Requests:
			w.runRequests(actors)
		case Async:
			w.runAsync(actors)
		case Queue:
			w.runQueue(actors)
		case Stream:
			w.runStream(actors)
		}
		w.sweep()
		// Abandoned invocations of stopped environments end too.
		w.bg.Wait()
		if w.regions != nil {
			w.regions.finish()
		}
		res.effects, res.windowed = w.validate()
	})
	res.doubles, res.detected = w.doubles, w.detected
	history := w.rec.history()
	if w.regions != nil && w.regions.cell.scenario.detects {
		// A key the lost home ran, and the new home again, is the
		// limit of a failover, which validate held to the detector's
		// reports: its history is not the idempotent operation's.
		history = slices.DeleteFunc(history, func(o *op) bool { return w.regions.excused(o.actor.scope()) })
	}
	chk := checkHistory(history)
	res.histories, res.ops = chk.partitions, chk.ops
	violations := w.violations
	switch chk.result {
	case porcupine.Illegal:
		violations = append(violations, "the history is not linearizable against the idempotent operation's specification:"+illegalScopes(history))
	case porcupine.Unknown:
		violations = append(violations, "the history check timed out")
	}
	res.violations = len(violations)
	if c.regions != nil && c.regions.mode == Local {
		// The baseline: its violations are what it measures; but the
		// detector must report every key it ran twice.
		if len(violations) > 0 {
			t.Logf("%d violations in %s (the baseline without homes, measured, not failed): %d of %d keys ran more than once", len(violations), c.name(), res.doubles, res.keys)
		}
		if missed := w.regions.undetected; len(missed) > 0 {
			t.Errorf("%s: the detector missed %d keys run more than once:\n  - %s", c.name(), len(missed), strings.Join(missed, "\n  - "))
		}
		return res
	}
	if len(violations) > 0 {
		path, err := visualize(c.name(), history, w.rec.marks, violations)
		if err != nil {
			path = "(not written: " + err.Error() + ")"
		}
		t.Errorf("%d violations in %s; history (%d operations) visualised at %s\n  - %s",
			len(violations), c.name(), len(history), path, strings.Join(violations, "\n  - "))
	}
	return res
}

// deadExpected reports whether an actor's message was dead-lettered as it
// should be: poison, or a request no delivery can apply (another
// payload's key, a caller refused).
func (w *world) deadExpected(a *actor) bool {
	if a.emptyPrincipal {
		return true // never to be applied: validate says whether it was refused
	}
	switch a.last.class {
	case Refused:
		return true
	case KeyReuse:
		// Only if another payload's execution fixed the key.
		for _, b := range w.actors {
			if b.scope() == a.scope() && b.variant == a.variant && b.oks > 0 {
				return false
			}
		}
		return true
	}
	return a.poison
}

// sweep clears the faults, lets every lease end, and delivers once more
// every request whose source still wants it: it must succeed (never 409).
func (w *world) sweep() {
	w.clearFaults()
	time.Sleep(invocationTimeout + 2*noDeadlineLease + 4*leaseMargin)
	for _, a := range w.actors {
		wants := !a.settled
		if w.cell.way.Source != Requests {
			wants = a.dead && !w.deadExpected(a)
			if wants {
				w.violateScope(a.scope(), "%s (%s) was dead-lettered after %d deliveries though its key could be applied; last: %s", a.scope(), a.msgID(), a.attempts, a.last)
			}
		}
		if !wants {
			continue
		}
		out := w.deliverOne(w.poolOf(a).fresh(), a, true)
		if out.class != OK && out.class != KeyReuse {
			w.violate("%s (%s) is still unusable after the faults were cleared and every lease ended: %s", a.scope(), a.msgID(), out)
		}
	}
}

// validate checks what a history cannot show, per scope, and returns the
// effects counted, and how many of them ran again in Run's documented
// window.
func (w *world) validate() (effects, windowed int) {
	byScope := map[string][]*actor{}
	for _, a := range w.actors {
		byScope[a.scope()] = append(byScope[a.scope()], a)
	}
	opsOf := map[*actor][]*op{}
	for _, o := range w.rec.history() {
		opsOf[o.actor] = append(opsOf[o.actor], o)
	}
	way := w.cell.way
	notRecorded := 0
	for _, scope := range slices.Sorted(func(yield func(string) bool) {
		for s := range byScope {
			if !yield(s) {
				return
			}
		}
	}) {
		as := byScope[scope]
		w.mu.Lock()
		execs := slices.Clone(w.execs[scope])
		w.mu.Unlock()
		anyOK := false
		var found findings
		for _, a := range as {
			anyOK = anyOK || a.oks > 0
			for _, o := range opsOf[a] {
				out := o.out
				where := fmt.Sprintf("%s attempt %d in env %d", a.msgID(), o.attempt, o.env)
				if r, ok := replyIn(out.answer); ok && (out.class == OK || out.class == NotRecorded) && (r.Caller != a.caller || r.Key != a.key) {
					found.add("answered with another caller's answer", where, fmt.Sprintf("%s|%s's execution %d: %s", r.Caller, r.Key, r.Exec, short(out.answer)))
				}
				if a.emptyPrincipal && out.class != Refused && !out.untried {
					found.add("not refused, though its caller's principal function returned \"\" (intended: 403 over HTTP, idem.ErrInvalidKey elsewhere)", where, out.String())
				}
				switch {
				case out.class == Unclassified:
					found.add("an unclassified answer", where, out.detail)
				case out.unacked:
					found.add(fmt.Sprintf("its effect ran and could not be recorded, and the delivery was not acknowledged, so its source delivers it again and the effect runs again (intended: acknowledged, Outcome %q)", idem.OutcomeNotRecorded), where, out.detail)
				}
				if out.wrong != "" {
					found.add("an answer that contradicts itself", where, out.wrong)
				}
				// (Refused "for a while" can last until the invocation's
				// time is spent, less the margin: three completions
				// throttled past the SDK's retries take up to 9 s of a
				// 10 s invocation. Run tried while it could then.)
				if out.class == NotRecorded && !out.fencedOut && !out.outOfTime && !w.mayNotRecord() {
					found.add("its effect was reported not recorded, though the store refused its completion only for a while (intended: Run tries a refused completion again while the lease lasts, and records it)", where, out.detail)
				}
				if out.class == NotRecorded && !out.fencedOut {
					notRecorded++
				}
			}
		}
		found.report(w, scope)
		if as[0].poison {
			if len(execs) > 0 {
				w.violate("%s: a poison message ran %d executions", scope, len(execs))
			}
			continue
		}

		var n, excused int
		var which string
		if way.Effect == Writes {
			count, committed, err := w.committed(scope)
			if err != nil {
				w.violate("%s: read its effects: %v", scope, err)
				continue
			}
			n, which = count, "executions "+strings.Join(committed, ", ")
		} else {
			var applied []string
			for _, ex := range execs {
				if !ex.applied {
					continue
				}
				n++
				note := ""
				if !ex.landed && ex.call.crashed.Load() {
					excused++
					note = " (its environment stopped before the completion)"
				} else if !ex.landed && ex.ackedNotRecorded {
					excused++
					note = " (its completion could not be written, and the delivery was acknowledged as not recorded)"
				}
				applied = append(applied, fmt.Sprintf("%d in env %d at %s%s", ex.n, ex.env.id, ex.appliedT.Format("15:04:05.000"), note))
			}
			which = "executions " + strings.Join(applied, "; ")
		}
		effects += n
		windowed += min(excused, max(n-1, 0))
		if w.regions != nil {
			w.regions.check(scope, n, excused)
		}
		switch {
		case n > 1+excused && w.regions != nil && w.regions.excused(scope):
			// The lost home's unreplicated claim, run again by the new
			// home, and reported by the detector (check).
			w.doubles++
		case n > 1+excused:
			w.doubles++
			w.violate("%s: the effect ran %d times (%d of them in Run's documented window): %s", scope, n, excused, which)
		case anyOK && n == 0:
			w.violate("%s: its source was told of a success, yet its effect never ran", scope)
		case n == 0 && !as[0].emptyPrincipal: // those must be refused: checked above
			var untold []string
			for _, a := range as {
				if c := a.last.class; c != Failed && c != Refused && c != KeyReuse {
					untold = append(untold, a.msgID()+" (last: "+a.last.String()+")")
				}
			}
			if len(untold) > 0 {
				w.violate("%s: its effect never ran, and not every source was told a definitive failure: %s", scope, strings.Join(untold, "; "))
			}
		}
		if way.Effect == Outside && (w.regions == nil || !w.regions.excused(scope)) {
			w.checkExclusive(scope, execs)
		}
	}
	if w.regions != nil {
		w.regions.deferred()
	}
	w.checkNotStuck()
	w.checkFaultShowed(notRecorded)
	return effects, windowed
}

// mayNotRecord reports whether the cell's fault may leave an effect's
// completion unwritten for good: a completion refused for a whole lease,
// or, across Regions, the home out of reach while its holders ran.
func (w *world) mayNotRecord() bool {
	return w.cell.fault.notRecorded || w.regions != nil && w.regions.cell.scenario.unreachable
}

// violateScope records a violation of one scope's; across Regions, where
// the home is lost, once the detector's reports say whether the scope
// ran again in the new home (then it is that, not a violation).
func (w *world) violateScope(scope, format string, args ...any) {
	if w.regions != nil && w.regions.cell.scenario.detects {
		w.regions.later(scope, fmt.Sprintf(format, args...))
		return
	}
	w.violate(format, args...)
}

// checkFaultShowed reports a cell whose fault never did what it is there
// for, and refusals for good that no source was told of. notRecorded is
// how many deliveries were answered not recorded (not fenced out).
func (w *world) checkFaultShowed(notRecorded int) {
	f := w.cell.fault
	if f.notRecorded && notRecorded == 0 {
		w.violate("no delivery was answered not recorded: the fault (a completion refused for a whole lease) never showed")
	}
	if !f.refusal {
		return
	}
	served, oneKey, told := w.refusalsServed.Load(), w.refusalsOneKey.Load(), w.refusalsTold.Load()
	switch {
	case served == 0:
		w.violate("the store refused no transaction: the fault (ValidationError) never showed")
	case told < oneKey || (told != oneKey && w.cell.way.Source != Queue):
		// One key's refused transaction is its call's answer, as it is;
		// a batch splits a refused transaction of several keys to find
		// the one it is about, and answers an item that repeats a
		// refused one's scope with that refusal too.
		w.violate("the store refused %d transactions of one key for good (ValidationError), and %d deliveries were told of a failure: a refusal no retry can help was retried (intended: the key released, the error returned)", oneKey, told)
	}
}

// findings groups a scope's per-delivery violations by kind: one line
// each, with a count and the first example.
type findings struct {
	kinds []string
	by    map[string][]string
}

func (f *findings) add(kind, where, what string) {
	if f.by == nil {
		f.by = map[string][]string{}
	}
	if _, ok := f.by[kind]; !ok {
		f.kinds = append(f.kinds, kind)
	}
	f.by[kind] = append(f.by[kind], where+": "+what)
}

func (f *findings) report(w *world, scope string) {
	for _, k := range f.kinds {
		ex := f.by[k]
		w.violate("%s: %s, on %d deliver%s; first, %s", scope, k, len(ex), map[bool]string{true: "y", false: "ies"}[len(ex) == 1], ex[0])
	}
}

// checkExclusive reports executions of one scope that ran at once: one
// started (its caller held the key) before another, which had started
// earlier, applied its effect.
func (w *world) checkExclusive(scope string, execs []*execution) {
	for _, a := range execs {
		if !a.applied {
			continue
		}
		for _, b := range execs {
			if b != a && b.startAt > a.startAt && b.startAt < a.appliedAt {
				w.violate("%s: executions %d (env %d) and %d (env %d) held the key at once (a holder's context must be cancelled before its lease ends, so nobody else can claim the key while it may still apply its effect): %d started at %s, before %d, which started at %s, applied its effect at %s",
					scope, a.n, a.env.id, b.n, b.env.id, b.n, b.start.Format("15:04:05.000"), a.n, a.start.Format("15:04:05.000"), a.appliedT.Format("15:04:05.000"))
			}
		}
	}
}

// checkNotStuck reports a record still held by a live lease after the
// faults were cleared and every lease ended, or with a status the
// library never writes. It reads the whole table, so it needs no scope:
// a way may name its callers as it likes.
func (w *world) checkNotStuck() {
	attr := w.layout.WithDefaults().Attributes
	p := dynamodb.NewScanPaginator(w.admin, &dynamodb.ScanInput{TableName: aws.String(idemTable), ConsistentRead: aws.Bool(true)})
	now := time.Now()
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			w.violate("read the idempotency table: %v", err)
			return
		}
		for _, item := range page.Items {
			st, ok := item[attr.Status].(*types.AttributeValueMemberS)
			if !ok {
				continue // not a record: the single-table layout's effects
			}
			id, _ := w.layout.ID(item)
			switch st.Value {
			case "COMPLETED":
			case "IN_PROGRESS":
				n, _ := item[attr.LeaseExpiresAt].(*types.AttributeValueMemberN)
				if n == nil {
					w.violate("record %s: IN_PROGRESS without a lease", id)
					continue
				}
				if ms, err := strconv.ParseInt(n.Value, 10, 64); err == nil && time.UnixMilli(ms).After(now) {
					w.violate("record %s: still held by a live lease (until %s) after every lease should have ended", id, time.UnixMilli(ms).Format(time.RFC3339Nano))
				}
			default:
				w.violate("record %s: status %q", id, st.Value)
			}
		}
	}
}
