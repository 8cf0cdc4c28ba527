package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/config"
)

// operationsDoc documents every variable the loaders read.
var operationsDoc = filepath.Join("..", "..", "docs", "operations.md")

// TestOperationsDocListsEveryVariable holds the environment-variable table
// of docs/operations.md to the loaders: every variable a loader reads (its
// own, its clients' endpoints, Lambda's) has a row, every row is such a
// variable, and each row's "read by" column names exactly the functions
// that read it.
func TestOperationsDocListsEveryVariable(t *testing.T) {
	doc, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range docDrift(string(doc), readers()) {
		t.Error(problem)
	}
}

// TestDocDriftFindsEachKindOfDrift keeps the check above honest: a row
// missing, a row too many and a wrong "read by" each fail it.
func TestDocDriftFindsEachKindOfDrift(t *testing.T) {
	want := map[string][]string{"A_VAR": {"fa"}, "B_VAR": {"fa", "fb"}}
	const head = "## Environment variables\n\n| variable | read by | meaning |\n| --- | --- | --- |\n"
	for name, tc := range map[string]struct {
		rows string
		ok   bool
	}{
		"exact":    {"| `A_VAR` | fa | a |\n| `B_VAR` | fb, fa | b |\n", true},
		"missing":  {"| `A_VAR` | fa | a |\n", false},
		"extra":    {"| `A_VAR` | fa | a |\n| `B_VAR` | fa, fb | b |\n| `C_VAR` | fa | c |\n", false},
		"readers":  {"| `A_VAR` | fa | a |\n| `B_VAR` | fa | b |\n", false},
		"no table": {"", false},
	} {
		t.Run(name, func(t *testing.T) {
			got := docDrift(head+tc.rows+"\nafter the table\n| `C_VAR` | fa | not in the table |\n", want)
			if (len(got) == 0) != tc.ok {
				t.Errorf("docDrift = %q, want ok=%v", got, tc.ok)
			}
		})
	}
}

// readers maps each variable to the functions that read it, by name.
func readers() map[string][]string {
	m := map[string][]string{}
	for _, f := range config.Functions() {
		for _, v := range slices.Concat(f.Vars, f.SDKVars, f.LambdaVars) {
			m[v.Name] = append(m[v.Name], f.Name)
		}
	}
	return m
}

// docDrift compares the first table under "## Environment variables" in
// doc with want, variable to function names, and says what differs.
func docDrift(doc string, want map[string][]string) []string {
	rows := envTable(doc)
	if len(rows) == 0 {
		return []string{"no environment-variable table under ## Environment variables"}
	}
	var problems []string
	for name, fns := range rows {
		wantFns, ok := want[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is in the table but no loader reads it", name))
		case !sameSet(fns, wantFns):
			problems = append(problems, fmt.Sprintf("%s: the table says it is read by %v, the loaders by %v", name, sorted(fns), sorted(wantFns)))
		}
	}
	for name, fns := range want {
		if _, ok := rows[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s (read by %v) has no row in the table", name, sorted(fns)))
		}
	}
	sort.Strings(problems)
	return problems
}

// envTable reads the table's rows: the variable in backquotes in the first
// column, the comma-separated function names in the second.
func envTable(doc string) map[string][]string {
	_, section, ok := strings.Cut(doc, "## Environment variables\n")
	if !ok {
		return nil
	}
	rows := map[string][]string{}
	inTable := false
	for line := range strings.Lines(section) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 {
			continue
		}
		name, isVar := strings.CutPrefix(strings.TrimSpace(cells[0]), "`")
		if !isVar {
			continue // the header and the separator
		}
		var fns []string
		for fn := range strings.SplitSeq(cells[1], ",") {
			fns = append(fns, strings.TrimSpace(fn))
		}
		rows[strings.TrimSuffix(name, "`")] = fns
	}
	return rows
}

func sameSet(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
