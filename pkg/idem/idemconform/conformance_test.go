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

// TestMain prints the table, one "conformance:" line per way and fault
// (scripts/test.sh passes such lines through).
func TestMain(m *testing.M) {
	code := m.Run()
	_ = table.Write(os.Stdout)
	os.Exit(code)
}
