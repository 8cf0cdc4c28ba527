package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// config is one run: where the library, its API files and its changelog
// are, relative to root.
type config struct {
	root      string
	lib       string // the directory whose modules are the library: pkg
	apiDir    string // the API files: pkg/api
	baseline  string // the API the major version has released: pkg/api/v1
	changelog string // pkg/CHANGELOG.md
	update    bool   // rewrite the API files (if no breaking change is unnamed)
	release   bool   // add the API files' lines to the baseline (a release)
	// overlay replaces files' contents by absolute path, for a test's
	// scratch change to the library.
	overlay map[string][]byte
}

// path is a configured file or directory: rel under the root, or rel
// itself when it is absolute (a test's scratch copy).
func (c config) path(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(c.root, rel)
}

// report is what a run found.
type report struct {
	packages int
	// broken are the baseline's lines the library no longer has: a name
	// the major version released, removed or changed. No changelog
	// excuses them.
	broken   []string
	baseline int // the baseline's lines; 0 before the first major release
	// removed are recorded lines the library no longer has: a name
	// removed, or a declaration changed (its new line is in added).
	removed []string
	// added are lines the library has that are not recorded.
	added []string
	// sinceRelease are lines of the last release's API files (one tag per
	// module) the library no longer has; tags names the tags compared.
	sinceRelease []string
	tags         []string
	// unnamed are the names of removed and sinceRelease lines that the
	// changelog does not mention: in its Unreleased section, or for a
	// line of a release, in a section above that release's.
	unnamed map[string]bool
}

// breaking are the removed and sinceRelease lines, once each, sorted.
func (r report) breaking() []string {
	all := append(slices.Clone(r.removed), r.sinceRelease...)
	slices.Sort(all)
	return slices.Compact(all)
}

func (r report) unnamedLines() []string {
	var out []string
	for _, l := range r.breaking() {
		if r.unnamed[nameOf(l)] {
			out = append(out, l)
		}
	}
	return out
}

// ok reports whether the check passes: nothing released or recorded is
// gone or changed unrecorded. An added name passes (it breaks no
// caller), and is printed as a notice until it is recorded.
func (r report) ok() bool {
	return len(r.broken) == 0 && len(r.removed) == 0 && len(r.unnamedLines()) == 0
}

// recorded reports whether the API files hold the library's API exactly,
// as a release needs.
func (r report) recorded() bool { return r.ok() && len(r.added) == 0 }

// check compares the library's API with the recorded one, and with the
// update flag rewrites the record when no breaking change is unnamed.
// It returns the exit status: 0 when the library keeps what is released
// and recorded (additions not recorded yet are a notice), or the record
// was rewritten, or the release was recorded; 1 when it does not, or a
// release is refused; 2 when the run itself failed.
func check(cfg config, stdout io.Writer) int {
	pkgs, err := load(cfg.root, cfg.lib, cfg.overlay)
	if err != nil {
		fmt.Fprintln(stdout, "api:", err)
		return 2
	}
	recorded, err := readRecorded(cfg.path(cfg.apiDir))
	if err != nil {
		fmt.Fprintln(stdout, "api:", err)
		return 2
	}
	changelog, err := os.ReadFile(cfg.path(cfg.changelog))
	if err != nil {
		fmt.Fprintln(stdout, "api:", err)
		return 2
	}
	notes, ok := section(string(changelog), "")
	if !ok {
		fmt.Fprintf(stdout, "api: %s has no \"## Unreleased\" section\n", cfg.changelog)
		return 2
	}
	current := map[string]bool{}
	for _, p := range pkgs {
		for _, l := range p.Lines {
			current[l] = true
		}
	}
	r := report{packages: len(pkgs), unnamed: map[string]bool{}}
	var baseline map[string]bool
	if cfg.baseline != "" {
		if baseline, err = readRecorded(cfg.path(cfg.baseline)); err != nil {
			fmt.Fprintln(stdout, "api:", err)
			return 2
		}
	}
	r.baseline = len(baseline)
	for _, l := range slices.Sorted(maps.Keys(baseline)) {
		if !current[l] {
			r.broken = append(r.broken, l)
		}
	}
	for _, l := range slices.Sorted(maps.Keys(recorded)) {
		if !current[l] && !baseline[l] {
			r.removed = append(r.removed, l)
		}
	}
	for _, l := range slices.Sorted(maps.Keys(current)) {
		if !recorded[l] {
			r.added = append(r.added, l)
		}
	}
	for _, l := range r.removed {
		if name := nameOf(l); !mentions(notes, name) {
			r.unnamed[name] = true
		}
	}
	released, tags := releasedLines(cfg.root, cfg.apiDir, pkgs)
	r.tags = tags
	for _, l := range slices.Sorted(maps.Keys(released)) {
		if current[l] || baseline[l] {
			continue
		}
		r.sinceRelease = append(r.sinceRelease, l)
		// Named since that release: under Unreleased, or under a version
		// not tagged yet (the changelog is cut in the commit the tag is
		// put on).
		since, _ := section(string(changelog), version(released[l]))
		if name := nameOf(l); !mentions(since, name) {
			r.unnamed[name] = true
		}
	}

	if cfg.update && len(r.broken) == 0 && len(r.unnamedLines()) == 0 {
		if err := write(cfg.path(cfg.apiDir), cfg.lib, pkgs); err != nil {
			fmt.Fprintln(stdout, "api:", err)
			return 2
		}
		fmt.Fprintf(stdout, "api: recorded the exported API of %s in %s (lines added: %d; removed or changed: %d)\n",
			plural(len(pkgs)), cfg.apiDir, len(r.added), len(r.removed))
		return 0
	}
	if cfg.release && r.recorded() {
		if err := write(cfg.path(cfg.baseline), cfg.lib, pkgs); err != nil {
			fmt.Fprintln(stdout, "api:", err)
			return 2
		}
		fmt.Fprintf(stdout, "api: %s holds the exported API of %s, released (lines added: %d)\n",
			cfg.baseline, plural(len(pkgs)), len(current)-r.baseline)
		return 0
	}
	printReport(stdout, cfg, r)
	if cfg.release {
		// What is released must be what is recorded and reviewed: an
		// addition not in the API files would enter the baseline unseen.
		fmt.Fprintf(stdout, "api: the release is refused: %s must record the library's API exactly (`make api-update`, commit it), and the check must pass\n", cfg.apiDir)
		return 1
	}
	if r.ok() {
		return 0
	}
	return 1
}

func printReport(w io.Writer, cfg config, r report) {
	var against []string
	if r.baseline > 0 {
		against = append(against, fmt.Sprintf("%s, the API the major version released: %d lines", cfg.baseline, r.baseline))
	}
	against = append(against, r.tags...)
	since := "no release to compare with yet"
	if len(against) > 0 {
		since = "compared with " + strings.Join(against, "; ")
	}
	if r.recorded() {
		fmt.Fprintf(w, "api: %s matches the exported API of %s (%s)\n", cfg.apiDir, plural(r.packages), since)
		return
	}
	if r.ok() {
		fmt.Fprintf(w, "api: the library keeps the API of %s (%s); %s not recorded in %s yet:\n", plural(r.packages), since, lines(len(r.added), "line added", "lines added"), cfg.apiDir)
		for _, l := range r.added {
			fmt.Fprintf(w, "  + %s\n", l)
		}
		fmt.Fprintf(w, "\nA notice, not a failure: an added name breaks no caller. `make api-update` records it; commit %s with the change, so its review shows every line added (`make api-release` refuses while one is unrecorded).\n", cfg.apiDir)
		return
	}
	fmt.Fprintf(w, "api: the exported API of the library (%s) differs from %s (%s)\n", plural(r.packages), cfg.apiDir, since)
	section := func(title string, lines []string, mark string, named bool) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, l := range lines {
			if named {
				fmt.Fprintf(w, "  %s %s\n      name: %s\n", mark, l, nameOf(l))
			} else {
				fmt.Fprintf(w, "  %s %s\n", mark, l)
			}
		}
	}
	section(fmt.Sprintf("breaks the released API (%s): removed or changed, which no changelog entry allows", cfg.baseline), r.broken, "-", true)
	unnamed := r.unnamedLines()
	var namedRemoved []string
	for _, l := range r.removed {
		if !r.unnamed[nameOf(l)] {
			namedRemoved = append(namedRemoved, l)
		}
	}
	section(fmt.Sprintf("breaking (removed or changed), not named in %s under %q", cfg.changelog, "## Unreleased"), unnamed, "-", true)
	section(fmt.Sprintf("breaking (removed or changed), named in %s: accepted once recorded", cfg.changelog), namedRemoved, "-", false)
	section("added, not recorded yet", r.added, "+", false)
	fmt.Fprintln(w)
	if len(r.broken) > 0 {
		fmt.Fprintf(w, "A release of this major version keeps every name the major version released, with its signature, field types and constant values (docs/releasing.md): put each declaration above back. "+
			"To retire a name, deprecate it (a \"Deprecated: use X instead.\" paragraph in its doc comment) and keep it; removing or changing it takes a new major version, a /v2 module path.\n")
	}
	if len(unnamed) > 0 {
		var names []string
		for _, l := range unnamed {
			names = append(names, "`"+nameOf(l)+"`")
		}
		names = slices.Compact(names)
		fmt.Fprintf(w, "A removed or changed line breaks the callers that use it. If that is intended, name each in %s under \"## Unreleased\" "+
			"(%s: what callers do instead), then run `make api-update`; otherwise put the declaration back.\n",
			cfg.changelog, strings.Join(names, ", "))
	}
	if len(r.broken) == 0 && (len(r.removed) > 0 || len(r.added) > 0) {
		fmt.Fprintf(w, "To record the API: `make api-update`, and commit %s with the change, so its review shows every line added or removed.\n", cfg.apiDir)
	}
}

// lines is "1 line added" or "3 lines added".
func lines(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func plural(n int) string {
	if n == 1 {
		return "1 package"
	}
	return fmt.Sprintf("%d packages", n)
}

// readRecorded reads every line of the API files (*.txt) in dir; blank
// lines and lines starting with # are not declarations.
func readRecorded(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	lines := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, l := range parseLines(b) {
			lines[l] = true
		}
	}
	return lines, nil
}

func parseLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// fileName is the API file of the package at import path p: its path
// under the library's root module (pkg), dots for slashes, .txt.
func fileName(p string, m module, lib string) string {
	// The root module's path: a nested module's path is its directory's
	// under it (pkg/idem/idemtest is .../pkg/idem/idemtest).
	rootPath := strings.TrimSuffix(m.Path, strings.TrimPrefix(strings.TrimPrefix(m.Dir, lib), "/"))
	rootPath = strings.TrimSuffix(rootPath, "/")
	rel := strings.TrimPrefix(strings.TrimPrefix(p, rootPath), "/")
	if rel == "" || rel == p {
		rel = p
	}
	return strings.ReplaceAll(rel, "/", ".") + ".txt"
}

// write records each package's lines in its file, and removes the files
// of packages the library no longer has.
func write(dir, lib string, pkgs []libPackage) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, p := range pkgs {
		name := fileName(p.Path, p.Module, lib)
		keep[name] = true
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(p.Lines, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if !keep[filepath.Base(f)] {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// section returns the changelog's "## Unreleased" section (release ""),
// or every section above the one whose heading names release (such as
// "## 0.2.0 (2027-01-10)" for "0.2.0"): what was named since it. ok is
// false when there is no Unreleased heading.
func section(changelog, release string) (text string, ok bool) {
	var out strings.Builder
	in := false
	heading := regexp.MustCompile(`(^|[^0-9A-Za-z.])v?` + regexp.QuoteMeta(release) + `($|[^0-9A-Za-z.])`)
	for l := range strings.SplitSeq(changelog, "\n") {
		if title, isHeading := strings.CutPrefix(l, "## "); isHeading {
			title = strings.TrimSpace(title)
			unreleased := strings.EqualFold(title, "Unreleased")
			ok = ok || unreleased
			switch {
			case release == "":
				in = unreleased
			case heading.MatchString(title):
				return out.String(), ok
			default:
				in = true
			}
			continue
		}
		if in {
			out.WriteString(l)
			out.WriteByte('\n')
		}
	}
	return out.String(), ok
}

// version is a tag's version: "0.2.0" of "pkg/v0.2.0".
func version(tag string) string {
	return strings.TrimPrefix(tag[strings.LastIndexByte(tag, '/')+1:], "v")
}

// mentions reports whether text names name as a whole: "WithMode",
// "Problem.Body", optionally qualified by a package name
// ("idemhttp.Problem.Body"), but not inside a longer name
// ("WithModeX", "Other.WithMode"), nor a type by one of its members
// (Problem by "Problem.Body").
func mentions(text, name string) bool {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_.])([a-z][a-z0-9]*\.)?` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_.]|\.($|[^A-Za-z_]))`)
	return re.MatchString(text)
}

// nameOf is the name a line declares, as a changelog names it: Name for
// a top-level declaration, Type.Field or Type.Method for a member.
func nameOf(line string) string {
	_, decl, ok := strings.Cut(line, ", ")
	if !ok {
		return line
	}
	kind, rest, _ := strings.Cut(decl, " ")
	switch kind {
	case "const", "var", "func":
		return identAt(rest)
	case "method":
		recv, after, _ := strings.Cut(strings.TrimPrefix(rest, "("), ") ")
		recv = strings.TrimPrefix(recv, "*")
		if i := strings.IndexByte(recv, '['); i >= 0 {
			recv = recv[:i]
		}
		return recv + "." + identAt(after)
	case "type":
		typ := identAt(rest)
		rest = rest[len(typ):]
		if strings.HasPrefix(rest, "[") {
			rest = rest[closing(rest)+1:]
		}
		for _, k := range []string{" struct, ", " interface, "} {
			if member, ok := strings.CutPrefix(rest, k); ok {
				member = strings.TrimPrefix(member, "embedded ")
				member = strings.TrimLeft(member, "*")
				if i := strings.LastIndexByte(identPath(member), '.'); i >= 0 {
					member = member[i+1:]
				}
				return typ + "." + identAt(member)
			}
		}
		return typ
	}
	return decl
}

// identAt is the identifier s begins with.
func identAt(s string) string {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return s[:i]
		}
	}
	return s
}

// identPath is the qualified identifier s begins with (pkg.Name).
func identPath(s string) string {
	head := identAt(s)
	if rest, ok := strings.CutPrefix(s[len(head):], "."); ok {
		return head + "." + identAt(rest)
	}
	return head
}

// closing is the index of the bracket that closes the one s begins with.
func closing(s string) int {
	depth := 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return len(s) - 1
}

// releasedLines reads the API files as each module's newest release tag
// (<module dir>/vX.Y.Z) recorded them, keeping the lines of that module's
// packages, each with its tag. A repository without git, without tags,
// or whose tag predates the API files contributes nothing; tags names the
// tags read.
func releasedLines(root, apiDir string, pkgs []libPackage) (lines map[string]string, tags []string) {
	lines = map[string]string{}
	mods := map[string]module{}
	for _, p := range pkgs {
		mods[p.Module.Dir] = p.Module
	}
	owner := func(pkgPath string) string {
		best := ""
		for dir, m := range mods {
			if (pkgPath == m.Path || strings.HasPrefix(pkgPath, m.Path+"/")) && len(m.Path) > len(mods[best].Path) {
				best = dir
			}
		}
		return best
	}
	git := func(args ...string) (string, bool) {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		return string(out), err == nil
	}
	for _, dir := range slices.Sorted(maps.Keys(mods)) {
		out, ok := git("tag", "--list", dir+"/v*", "--sort=-v:refname")
		if !ok || strings.TrimSpace(out) == "" {
			continue
		}
		tag := strings.Fields(out)[0]
		files, ok := git("ls-tree", "--name-only", tag, apiDir+"/")
		if !ok || strings.TrimSpace(files) == "" {
			continue
		}
		tags = append(tags, tag)
		for _, f := range strings.Fields(files) {
			if path.Ext(f) != ".txt" {
				continue
			}
			body, ok := git("show", tag+":"+f)
			if !ok {
				continue
			}
			for _, l := range parseLines([]byte(body)) {
				p, _, _ := strings.Cut(strings.TrimPrefix(l, "pkg "), ", ")
				if owner(p) == dir {
					lines[l] = tag
				}
			}
		}
	}
	return lines, tags
}
