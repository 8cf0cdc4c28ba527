package template_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/testkit/template"
)

// The documentation's own drift tests: the README stays short and points at
// files that exist, and every Makefile target is documented where the
// README sends a developer.

var repoRoot = filepath.Join("..", "..", "..")

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeIsShortAndLinksResolve keeps README.md a five-minute read whose
// links all lead somewhere.
func TestReadmeIsShortAndLinksResolve(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	lines := strings.Split(strings.TrimSuffix(readme, "\n"), "\n")
	if len(lines) > 200 {
		t.Errorf("README.md has %d lines; keep it to 200 and move detail to docs/", len(lines))
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > 300 {
			t.Errorf("README.md:%d is %d characters; keep lines to 300", i+1, n)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`).FindAllStringSubmatch(readme, -1) {
		if strings.Contains(m[1], "://") {
			continue
		}
		if _, err := os.Stat(filepath.Join(repoRoot, m[1])); err != nil {
			t.Errorf("README.md links to %s: %v", m[1], err)
		}
	}
	for _, doc := range []string{"docs/development.md", "docs/operations.md", "docs/testing.md", "docs/library.md"} {
		if !strings.Contains(readme, "]("+doc+")") {
			t.Errorf("README.md does not link %s", doc)
		}
	}
}

// TestEveryMakeTargetIsDocumented holds docs/development.md to the targets
// of the Makefile and mk/*.mk (those with a "## " help text, which make help
// lists).
func TestEveryMakeTargetIsDocumented(t *testing.T) {
	dev := readRepoFile(t, "docs/development.md")
	makefiles, err := filepath.Glob(filepath.Join(repoRoot, "mk", "*.mk"))
	if err != nil {
		t.Fatal(err)
	}
	makefiles = append(makefiles, filepath.Join(repoRoot, "Makefile"))
	target := regexp.MustCompile(`(?m)^([a-zA-Z0-9_%-]+):.*## `)
	seen := 0
	for _, mf := range makefiles {
		b, err := os.ReadFile(mf)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range target.FindAllStringSubmatch(string(b), -1) {
			seen++
			name := m[1]
			// sam build calls build-<LogicalId>, one target per function.
			if strings.HasPrefix(name, "build-") && name != "build-%" {
				name = "build-<LogicalId>"
			}
			if !strings.Contains(dev, "`make "+name+"`") {
				t.Errorf("%s: target %s is not documented in docs/development.md (as `make %s`)", filepath.Base(mf), m[1], name)
			}
		}
	}
	if seen == 0 {
		t.Error("found no Makefile targets: has the help-comment convention changed?")
	}
}

// TestOperationsDocListsEveryAlarm holds docs/operations.md's Alarms
// section to the template: every alarm, of any table kind, is in its
// table, and every alarm the table names exists.
func TestOperationsDocListsEveryAlarm(t *testing.T) {
	doc := readRepoFile(t, filepath.Join("docs", "operations.md"))
	_, section, ok := strings.Cut(doc, "\n## Alarms\n")
	if !ok {
		t.Fatal("docs/operations.md has no Alarms section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([A-Za-z0-9]+Alarm)`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = true
	}
	// Every kind's alarms: the template unresolved (the sweep schedule's
	// is mrsc's only).
	tpl, err := template.Load(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tpl.OfType("AWS::CloudWatch::Alarm") {
		if !named[id] {
			t.Errorf("alarm %s is not in docs/operations.md's Alarms table", id)
		}
		delete(named, id)
	}
	for id := range named {
		t.Errorf("docs/operations.md's Alarms table names %s, which template.yaml does not have", id)
	}
}
