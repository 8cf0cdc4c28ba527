package idemconform_test

import (
	"os"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem/idemconform"
)

// table is the library's ways' table, printed by TestMain.
var table idemconform.Table

// TestConformance runs every way into the library through the suite:
// TestConformance/<way>/<fault>/<layout>-<mode>.
func TestConformance(t *testing.T) {
	for _, wy := range append(ways, streamWays...) {
		table.Run(t, wy)
	}
}

// TestConformanceAcrossRegions runs every way into the library through the
// cells across Regions, with homes (idem.WithHomes):
// TestConformanceAcrossRegions/<way>/regions-homes/<scenario>. Any
// violation, a key run twice included, fails it.
func TestConformanceAcrossRegions(t *testing.T) {
	for _, wy := range append(ways, streamWays...) {
		table.RunRegions(t, wy, idemconform.Homes)
	}
}

// TestConformanceOnMRSC runs every way into the library through the cells
// on a table with multi-Region strong consistency:
// TestConformanceOnMRSC/<way>/regions-mrsc/<scenario>. Any violation
// fails it, as do a transaction or TTL call, a write still waiting after
// the final deliveries and a sweep, and a store that did not learn MRSC.
func TestConformanceOnMRSC(t *testing.T) {
	for _, wy := range append(ways, streamWays...) {
		table.RunRegions(t, wy, idemconform.MRSC)
	}
}

// TestBaselineAcrossRegions runs every way through the cells across
// Regions without homes (idem.WithRegion: each Region claims its own
// calls' keys), to measure the problem homes solve: the table's doubles.
// At a lag of 1 s and more, every key's concurrent duplicates (within
// 100 ms of each other, in three Regions) claim it before any claim has
// replicated: the ways of requests run each key more than once, so the
// total cannot be 0; the rest is measured, not asserted.
func TestBaselineAcrossRegions(t *testing.T) {
	t.Cleanup(func() {
		for _, sc := range []string{"lag-1s", "lag-10s"} {
			if n := table.DoubleExecutions(idemconform.Local, sc); n == 0 {
				t.Errorf("%s: no key ran twice without homes: the baseline no longer shows the problem", sc)
			}
		}
	})
	for _, wy := range append(ways, streamWays...) {
		table.RunRegions(t, wy, idemconform.Local)
	}
}

// TestMain prints the table, one "conformance:" line per way and fault
// (scripts/test.sh passes such lines through).
func TestMain(m *testing.M) {
	code := m.Run()
	_ = table.Write(os.Stdout)
	os.Exit(code)
}
