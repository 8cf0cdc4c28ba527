package conformance

import (
	"fmt"
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

// results collects every cell's line for the table TestMain prints.
var results struct {
	sync.Mutex
	cells []cellResult
}

func record(r cellResult) {
	results.Lock()
	results.cells = append(results.cells, r)
	results.Unlock()
}

// TestConformance runs every way in under every fault (on the default
// layout, plain mode), and every way in on every layout and mode under
// the sampled faults: TestConformance/<way>/<fault>/<layout>-<mode>.
func TestConformance(t *testing.T) {
	for _, wy := range ways {
		t.Run(wy.name, func(t *testing.T) {
			t.Parallel()
			for _, f := range faults {
				t.Run(f.name, func(t *testing.T) {
					t.Parallel()
					if why := f.skip(wy); why != "" {
						record(cellResult{way: wy.name, fault: f.name, skipped: why})
						t.Skip(why)
					}
					for _, c := range variants(wy, f) {
						t.Run(layouts[c.layout].name+"-"+c.mode, func(t *testing.T) {
							t.Parallel()
							record(runCell(t, c))
						})
					}
				})
			}
		})
	}
}

// variants are the cells of a way in under a fault.
func variants(wy *way, f *fault) []cell {
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

func TestMain(m *testing.M) {
	start := time.Now()
	code := m.Run()
	printTable(time.Since(start))
	os.Exit(code)
}

// printTable prints one line per way in and fault, prefixed
// "conformance:" (scripts/test.sh passes such lines through).
func printTable(wall time.Duration) {
	results.Lock()
	defer results.Unlock()
	if len(results.cells) == 0 {
		return
	}
	type row struct {
		runs, effects, windowed, histories, ops, violations int
		skipped                                             string
	}
	rows := map[[2]string]*row{}
	for _, c := range results.cells {
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
	p := func(format string, args ...any) { fmt.Printf("conformance: "+format+"\n", args...) }
	var layoutNames []string
	for _, l := range layouts {
		layoutNames = append(layoutNames, l.name)
	}
	p("every way in x every fault on layout default, mode plain (1 run); every way in x layout (%s) x mode (%s) under %s (9 runs)",
		strings.Join(layoutNames, ", "), strings.Join(modes, ", "), strings.Join(sampledFaults, ", "))
	p("%d keys per caller x %d concurrent duplicates, an environment per concurrent invocation (a queue: %d consumers, batches of %d); histories checked with porcupine per scope (caller and key)", keysPerCaller, duplicates, consumers, batchSize)
	p("effects: counted per key (caller and key), %s: of them, effects run again in Run's documented window (the process died after the effect, or its completion could not be written and was reported as not recorded)", "window")
	p("%-22s %-24s %5s %8s %7s %10s %7s %11s", "way in", "fault", "runs", "effects", "window", "histories", "ops", "violations")
	var total row
	for _, wy := range ways {
		for _, f := range faults {
			r := rows[[2]string{wy.name, f.name}]
			switch {
			case r == nil:
			case r.runs == 0:
				p("%-22s %-24s skipped: %s", wy.name, f.name, r.skipped)
			default:
				p("%-22s %-24s %5d %8d %7d %10d %7d %11d", wy.name, f.name, r.runs, r.effects, r.windowed, r.histories, r.ops, r.violations)
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
		total.runs, total.effects, total.windowed, total.histories, total.ops, total.violations, wall.Round(100*time.Millisecond), raceEnabled)
}
