package idemconform

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sampledFaults are the faults run on every layout and mode; the others
// run on the default layout in the plain mode.
var sampledFaults = []string{"crash-before-effect", "crash-after-completion", "conflict-storm"}

// Run runs way through the suite, as a subtest of t named after it whose
// subtests, <fault>/<layout>-<mode>, run in parallel, and prints its
// table (Table.Write) to standard output once they are done. A cell that
// finds violations fails, names them, and writes porcupine's view of its
// history (see the package documentation).
func Run(t *testing.T, way Way) {
	t.Helper()
	var tb Table
	t.Cleanup(func() { _ = tb.Write(os.Stdout) })
	tb.Run(t, way)
}

// Table runs ways through the suite and keeps one line per way and fault
// for the table Write prints: several ways' runs make one table, as the
// library's own suite's do. Its methods may be called from parallel
// tests.
type Table struct {
	mu    sync.Mutex
	start time.Time
	ways  []string
	cells []cellResult
}

// Run runs way through the suite, as a subtest of t named after it whose
// subtests, <fault>/<layout>-<mode>, run in parallel (with the other
// ways' too), and adds their lines to the table: t/<way>/<fault>/<cell>.
// They are done once t's own test function has returned and its
// subtests with it: write the table from t.Cleanup or TestMain.
func (tb *Table) Run(t *testing.T, way Way) {
	t.Helper()
	if err := way.check(); err != nil {
		t.Fatal(err)
	}
	tb.mu.Lock()
	if tb.start.IsZero() {
		tb.start = time.Now()
	}
	if slices.Contains(tb.ways, way.Name) {
		tb.mu.Unlock()
		t.Fatalf("idemconform: a way named %q is already in the table", way.Name)
	}
	tb.ways = append(tb.ways, way.Name)
	tb.mu.Unlock()
	wy := &way
	t.Run(way.Name, func(t *testing.T) {
		t.Parallel()
		for _, f := range faults {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				if why := f.skip(wy); why != "" {
					tb.record(cellResult{way: wy.Name, fault: f.name, skipped: why})
					t.Skip(why)
				}
				for _, c := range variants(wy, f) {
					t.Run(layouts[c.layout].name+"-"+c.mode, func(t *testing.T) {
						t.Parallel()
						tb.record(runCell(t, c))
					})
				}
			})
		}
	})
}

func (w Way) check() error {
	switch {
	case w.Name == "" || strings.ContainsAny(w.Name, " /"):
		return fmt.Errorf("idemconform: a way's Name must be a non-empty word without spaces or slashes, not %q", w.Name)
	case w.Deliver == nil:
		return fmt.Errorf("idemconform: way %s has no Deliver", w.Name)
	case w.Source < Requests || w.Source > Stream:
		return fmt.Errorf("idemconform: way %s has an unknown Source %d", w.Name, w.Source)
	case w.Effect != Outside && w.Effect != Writes:
		return fmt.Errorf("idemconform: way %s has an unknown Effect %d", w.Name, w.Effect)
	case w.Deadline < DeadlineLambda || w.Deadline > DeadlineEither:
		return fmt.Errorf("idemconform: way %s has an unknown Deadline %d", w.Name, w.Deadline)
	}
	return nil
}

func (tb *Table) record(r cellResult) {
	tb.mu.Lock()
	tb.cells = append(tb.cells, r)
	tb.mu.Unlock()
}

// variants are the cells of a way in under a fault.
func variants(wy *Way, f *fault) []cell {
	if !slices.Contains(sampledFaults, f.name) {
		return []cell{{way: wy, fault: f, layout: 0, mode: "plain"}}
	}
	var cells []cell
	for l := range layouts {
		for _, m := range modes {
			cells = append(cells, cell{way: wy, fault: f, layout: l, mode: m})
		}
	}
	return cells
}

// Violations is how many violations the table's cells found so far.
func (tb *Table) Violations() int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	n := 0
	for _, c := range tb.cells {
		n += c.violations
	}
	return n
}

// DoubleExecutions is how many keys the table's cells across Regions in
// mode, under the named scenario ("lag-0", "lag-100ms", "lag-1s",
// "lag-10s", "paused", "evacuate", "home-unreachable", "home-lost"; on
// MRSC "three", "witness", "conflict-storm", "lost-answer",
// "decision-throttled", "region-isolated", "region-down",
// "witness-isolated", "witness-replica-down", "crash-after-decision",
// "crash-between-writes", "crash-before-finish"), ran more than once
// outside Run's window, so far.
func (tb *Table) DoubleExecutions(mode RegionMode, scenario string) int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	n := 0
	for _, c := range tb.cells {
		if c.regions != nil && c.regions.mode == mode && c.regions.scenario.name == scenario {
			n += c.doubles
		}
	}
	return n
}

// Write writes the table: one line per way and fault (runs, effects,
// effects run again in Run's documented window, histories and operations
// checked, violations), a header and a total with the wall time since
// the first Run, every line prefixed "conformance: ". It writes nothing
// before a cell has run.
func (tb *Table) Write(out io.Writer) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.cells) == 0 {
		return nil
	}
	type row struct {
		runs, effects, windowed, histories, ops, violations int
		skipped                                             string
	}
	rows := map[[2]string]*row{}
	for _, c := range tb.cells {
		if c.regions != nil {
			continue // writeRegions
		}
		k := [2]string{c.way, c.fault}
		r := rows[k]
		if r == nil {
			r = &row{}
			rows[k] = r
		}
		if c.skipped != "" {
			r.skipped = c.skipped
			continue
		}
		r.runs++
		r.effects += c.effects
		r.windowed += c.windowed
		r.histories += c.histories
		r.ops += c.ops
		r.violations += c.violations
	}
	var b strings.Builder
	if len(rows) == 0 {
		tb.writeRegions(&b)
		_, err := io.WriteString(out, b.String())
		return err
	}
	p := func(format string, args ...any) { fmt.Fprintf(&b, "conformance: "+format+"\n", args...) }
	var layoutNames []string
	for _, l := range layouts {
		layoutNames = append(layoutNames, l.name)
	}
	p("every way in x every fault on layout default, mode plain (1 run); every way in x layout (%s) x mode (%s) under %s (9 runs)",
		strings.Join(layoutNames, ", "), strings.Join(modes, ", "), strings.Join(sampledFaults, ", "))
	p("%d keys per caller x %d concurrent duplicates, an environment per concurrent invocation (a queue: %d consumers, batches of %d); histories checked with porcupine per scope (caller and key)", keysPerCaller, duplicates, consumers, batchSize)
	p("effects: counted per key (caller and key), %s: of them, effects run again in Run's documented window (the process died after the effect, or its completion could not be written and was reported as not recorded)", "window")
	p("%-28s %-24s %5s %8s %7s %10s %7s %11s", "way in", "fault", "runs", "effects", "window", "histories", "ops", "violations")
	var total row
	for _, wy := range tb.ways {
		for _, f := range faults {
			r := rows[[2]string{wy, f.name}]
			switch {
			case r == nil:
			case r.runs == 0:
				p("%-28s %-24s skipped: %s", wy, f.name, r.skipped)
			default:
				p("%-28s %-24s %5d %8d %7d %10d %7d %11d", wy, f.name, r.runs, r.effects, r.windowed, r.histories, r.ops, r.violations)
				total.runs += r.runs
				total.effects += r.effects
				total.windowed += r.windowed
				total.histories += r.histories
				total.ops += r.ops
				total.violations += r.violations
			}
		}
	}
	p("total: %d runs, %d effects (%d in Run's window), %d histories checked (%d operations), %d violations; wall time %s (race detector: %v)",
		total.runs, total.effects, total.windowed, total.histories, total.ops, total.violations, time.Since(tb.start).Round(100*time.Millisecond), raceEnabled)
	tb.writeRegions(&b)
	_, err := io.WriteString(out, b.String())
	return err
}

// writeRegions writes the table's section across Regions (RunRegions),
// every line prefixed "regions: "; nothing without such a cell. Call it
// holding tb.mu.
func (tb *Table) writeRegions(b *strings.Builder) {
	type row struct {
		runs, keys, effects, doubles, detected, histories, ops, violations int
	}
	rows := map[[3]string]*row{}
	var ways []string
	for _, c := range tb.cells {
		if c.regions == nil {
			continue
		}
		if !slices.Contains(ways, c.way) {
			ways = append(ways, c.way)
		}
		k := [3]string{c.way, c.regions.mode.String(), c.regions.scenario.name}
		r := rows[k]
		if r == nil {
			r = &row{}
			rows[k] = r
		}
		r.runs++
		r.keys += c.keys
		r.effects += c.effects
		r.doubles += c.doubles
		r.detected += c.detected
		r.histories += c.histories
		r.ops += c.ops
		r.violations += c.violations
	}
	if len(rows) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, "regions: "+format+"\n", args...) }
	p("every way in x scenario on a simulated global table of %s (idemtest.NewGlobal); the duplicates of each key delivered in different Regions", strings.Join(regionNames, ", "))
	p("homes: MREC, idem.WithHomes, every key homed in %s (home lease %v, replication bound %v); local: MREC, idem.WithRegion, each Region claiming its own calls' keys: the baseline, measured, never failed", homeRegion, regionHomeLease, regionBound)
	p("mrsc: multi-Region strong consistency, three replicas (witness*: %s the witness), each store told nothing (it learns MRSC); no transaction, TTL change or waiting write allowed", regionNames[2])
	p("doubles: keys whose effect ran more than once outside Run's window; detected: keys idemglobal.Detector reported from the Regions' streams")
	p("%-28s %-6s %-17s %5s %5s %8s %8s %9s %10s %7s %11s", "way in", "mode", "scenario", "runs", "keys", "effects", "doubles", "detected", "histories", "ops", "violations")
	totals := map[string]*row{}
	for _, wy := range ways {
		for _, m := range []RegionMode{Homes, Local, MRSC} {
			for _, sc := range scenariosOf(m) {
				r := rows[[3]string{wy, m.String(), sc.name}]
				if r == nil {
					continue
				}
				p("%-28s %-6s %-17s %5d %5d %8d %8d %9d %10d %7d %11d", wy, m, sc.name, r.runs, r.keys, r.effects, r.doubles, r.detected, r.histories, r.ops, r.violations)
				t := totals[m.String()]
				if t == nil {
					t = &row{}
					totals[m.String()] = t
				}
				t.runs += r.runs
				t.keys += r.keys
				t.doubles += r.doubles
				t.detected += r.detected
				t.violations += r.violations
			}
		}
	}
	for _, m := range []RegionMode{Homes, Local, MRSC} {
		if t := totals[m.String()]; t != nil {
			p("total %s: %d runs, %d keys, %d ran more than once (%d detected), %d violations", m, t.runs, t.keys, t.doubles, t.detected, t.violations)
		}
	}
	p("wall time %s (race detector: %v)", time.Since(tb.start).Round(100*time.Millisecond), raceEnabled)
}
