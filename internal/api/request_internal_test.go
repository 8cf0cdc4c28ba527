package api

import (
	"regexp"
	"testing"
)

// allStrings returns every string of length 0 to n over alphabet.
func allStrings(alphabet string, n int) []string {
	out, level := []string{""}, []string{""}
	for range n {
		var next []string
		for _, s := range level {
			for _, c := range alphabet {
				next = append(next, s+string(c))
			}
		}
		out, level = append(out, next...), next
	}
	return out
}

// TestIsIntegerLiteral holds isIntegerLiteral to the regexp it replaced,
// on every string of up to five characters that matter to it.
func TestIsIntegerLiteral(t *testing.T) {
	re := regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	matched := 0
	for _, s := range allStrings("-019.eE+ a\"", 5) {
		if got, want := isIntegerLiteral(s), re.MatchString(s); got != want {
			t.Errorf("isIntegerLiteral(%q) = %t, the regexp says %t", s, got, want)
		}
		if re.MatchString(s) {
			matched++
		}
	}
	if matched < 100 {
		t.Fatalf("only %d integer literals among the inputs", matched)
	}
}
