package idemhttp

import (
	"regexp"
	"testing"
)

// TestIsParamName holds isParamName to the regexp it replaced, on every
// string of up to four characters that matter to it.
func TestIsParamName(t *testing.T) {
	re := regexp.MustCompile(`^[a-z*][a-z0-9_.*-]*$`)
	const alphabet = "az*09_.-A=; \xff"
	all, level := []string{""}, []string{""}
	for range 4 {
		var next []string
		for _, s := range level {
			for i := range len(alphabet) {
				next = append(next, s+alphabet[i:i+1])
			}
		}
		all, level = append(all, next...), next
	}
	matched := 0
	for _, s := range all {
		want := re.MatchString(s)
		if got := isParamName(s); got != want {
			t.Errorf("isParamName(%q) = %t, the regexp says %t", s, got, want)
		}
		if want {
			matched++
		}
	}
	if matched < 1000 {
		t.Fatalf("only %d parameter names among the inputs", matched)
	}
}
