package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// scratch is a repository of its own in a temporary directory: a library
// module under lib/ (example.com/lib), its API files in lib/api and its
// changelog.
type scratch struct {
	t    *testing.T
	root string
	cfg  config
}

const changelogHead = "# Changelog\n\n## Unreleased\n\n### Added\n- things.\n"

func newScratch(t *testing.T, files map[string]string) *scratch {
	t.Helper()
	root := t.TempDir()
	s := &scratch{t: t, root: root, cfg: config{root: root, lib: "lib", apiDir: "lib/api", changelog: "lib/CHANGELOG.md"}}
	s.write("lib/go.mod", "module example.com/lib\n\ngo 1.26\n")
	s.write("lib/CHANGELOG.md", changelogHead+"\n## 0.1.0\n\n### Removed\n- `Older`, `Gone`'s namesake in another release.\n")
	for name, body := range files {
		s.write(name, body)
	}
	return s
}

func (s *scratch) write(name, body string) {
	s.t.Helper()
	p := filepath.Join(s.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scratch) read(name string) string {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.root, name))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// run is one apicheck run: its exit status and what it printed.
func (s *scratch) run(update bool) (int, string) {
	s.t.Helper()
	var out strings.Builder
	cfg := s.cfg
	cfg.update = update
	code := check(cfg, &out)
	return code, out.String()
}

func (s *scratch) mustRun(update bool, want int) string {
	s.t.Helper()
	code, out := s.run(update)
	if code != want {
		s.t.Fatalf("apicheck (update=%v) exited %d, want %d:\n%s", update, code, want, out)
	}
	return out
}

const pkgA = `package a

import "context"

// Kept and Gone are two functions.
func Kept(ctx context.Context, names ...string) (int, error) { return 0, nil }
func Gone() {}
`

// Removing an exported function fails the check, and the update refuses
// to record it, until the changelog's Unreleased section names it; then
// the update records it and the check passes.
func TestRemovingANameFailsUntilTheChangelogNamesIt(t *testing.T) {
	s := newScratch(t, map[string]string{"lib/a/a.go": pkgA})
	s.mustRun(true, 0)
	recorded := s.read("lib/api/a.txt")
	if !strings.Contains(recorded, "pkg example.com/lib/a, func Gone()\n") {
		t.Fatalf("the recorded API lacks Gone:\n%s", recorded)
	}
	s.mustRun(false, 0)

	// The scratch change: Gone removed.
	s.write("lib/a/a.go", strings.Replace(pkgA, "func Gone() {}\n", "", 1))
	out := s.mustRun(false, 1)
	for _, want := range []string{
		"breaking (removed or changed), not named in lib/CHANGELOG.md under \"## Unreleased\":",
		"  - pkg example.com/lib/a, func Gone()\n      name: Gone\n",
		"name each in lib/CHANGELOG.md under \"## Unreleased\" (`Gone`: what callers do instead), then run `make api-update`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the check's output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("the check on the scratch removal:\n%s", out)
	out = s.mustRun(true, 1)
	if got := s.read("lib/api/a.txt"); got != recorded {
		t.Errorf("the refused update rewrote the API file:\n%s", got)
	}
	if !strings.Contains(out, "func Gone()") {
		t.Errorf("the refused update does not say why:\n%s", out)
	}

	// The changelog's 0.1.0 section mentions Gone: only Unreleased counts.
	if !strings.Contains(s.read("lib/CHANGELOG.md"), "`Gone`") {
		t.Fatal("the scratch changelog should mention Gone in an older section")
	}

	// Named under Unreleased: accepted once recorded.
	s.write("lib/CHANGELOG.md", strings.Replace(s.read("lib/CHANGELOG.md"), "- things.\n", "- things.\n\n### Removed\n- `a.Gone`: call Kept.\n", 1))
	out = s.mustRun(false, 1)
	if !strings.Contains(out, "named in lib/CHANGELOG.md: accepted once recorded") || !strings.Contains(out, "make api-update") {
		t.Errorf("a named but unrecorded removal should say to record it:\n%s", out)
	}
	s.mustRun(true, 0)
	if strings.Contains(s.read("lib/api/a.txt"), "Gone") {
		t.Error("the update kept the removed line")
	}
	s.mustRun(false, 0)
}

// An added name passes the check, printed as a notice until the update
// records it; then the notice is gone.
func TestAnAddedNamePassesUntilRecorded(t *testing.T) {
	s := newScratch(t, map[string]string{"lib/a/a.go": pkgA})
	s.mustRun(true, 0)
	s.write("lib/a/new.go", "package a\n\n// New is new.\nfunc New() string { return \"\" }\n")
	out := s.mustRun(false, 0)
	if !strings.Contains(out, "1 line added not recorded in lib/api yet:\n  + pkg example.com/lib/a, func New() string\n") ||
		!strings.Contains(out, "A notice, not a failure") || strings.Contains(out, "breaking") {
		t.Errorf("want the one added line as a notice, nothing breaking:\n%s", out)
	}
	s.mustRun(true, 0)
	if !strings.Contains(s.read("lib/api/a.txt"), "func New() string") {
		t.Error("the update did not record the addition")
	}
	if out := s.mustRun(false, 0); !strings.Contains(out, "lib/api matches") || strings.Contains(out, "New") {
		t.Errorf("recorded, the addition is no longer a notice:\n%s", out)
	}
}

// A changed signature, a method added to an interface, a field's type
// and a constant's value are changed lines: breaking, by their names.
func TestChangesThatBreakCallersAreNamedByTheirDeclaration(t *testing.T) {
	before := `package a

type I interface{ M() }
type T struct{ F int }
const C = "c"
func Kept(string) int { return 0 }
func (T) Method() {}
`
	s := newScratch(t, map[string]string{"lib/a/a.go": before})
	s.mustRun(true, 0)
	s.write("lib/a/a.go", `package a

type I interface{ M(); N() }
type T struct{ F int64 }
const C = "d"
func Kept(string, int) int { return 0 }
func (*T) Method() {}
`)
	code, out := s.run(false)
	if code != 1 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, name := range []string{"I", "T.F", "C", "Kept", "T.Method"} {
		if !strings.Contains(out, "      name: "+name+"\n") {
			t.Errorf("%s is not named as breaking:\n%s", name, out)
		}
	}
}

// The format: one line per declaration, as Go's api files have them;
// internal packages, commands and unexported names are not API.
func TestTheLinesOfAPackage(t *testing.T) {
	s := newScratch(t, map[string]string{
		"lib/a/a.go": `package a

import (
	"context"
	"io"
	"time"
)

const Untyped = 3
const Typed time.Duration = 2 * time.Second
var ErrX error
type Kind string
const KindA Kind = "a"
type Option func(s *Server)
type Server struct {
	Name string
	io.Reader
	hidden int
	*Embedded
}
type Embedded struct{ Deep bool }
func (e *Embedded) Touch(at time.Time) {}
func (Server) Value() {}
func (*Server) Pointer(ctx context.Context, each func(index int) error) (n int, err error) { return 0, nil }
type API interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(key string, v ...byte) error
	secret()
}
type Number interface{ ~int | ~int64 }
type Pair[K comparable, V any] struct{ Key K; Val V }
func (p Pair[K, V]) Swap() Pair[K, V] { return p }
func Map[T any, U Number](in []T, f func(T) U) map[string]U { return nil }
type Alias = Kind
func unexported() {}
`,
		"lib/a/internal/x/x.go": "package x\n\nfunc Internal() {}\n",
		"lib/cmd/tool/main.go":  "package main\n\nfunc Exported() {}\n\nfunc main() {}\n",
	})
	s.mustRun(true, 0)
	got := strings.Split(strings.TrimSuffix(s.read("lib/api/a.txt"), "\n"), "\n")
	p := "pkg example.com/lib/a, "
	want := []string{
		p + "const KindA Kind = \"a\"",
		p + "const Typed time.Duration = 2000000000",
		p + "const Untyped untyped int = 3",
		p + "func Map[T any, U Number]([]T, func(T) U) map[string]U",
		p + "method (*Embedded) Touch(time.Time)",
		p + "method (*Server) Pointer(context.Context, func(int) error) (int, error)",
		p + "method (Pair[K, V]) Swap() Pair[K, V]",
		p + "method (Server) Read([]byte) (int, error)",
		p + "method (Server) Touch(time.Time)",
		p + "method (Server) Value()",
		p + "type API interface { Get, Put, unexported methods }",
		p + "type API interface, Get(context.Context, string) ([]byte, error)",
		p + "type API interface, Put(string, ...byte) error",
		p + "type Alias = Kind",
		p + "type Embedded struct",
		p + "type Embedded struct, Deep bool",
		p + "type Kind string",
		p + "type Number interface{~int | ~int64}",
		p + "type Option func(*Server)",
		p + "type Pair[K comparable, V any] struct",
		p + "type Pair[K comparable, V any] struct, Key K",
		p + "type Pair[K comparable, V any] struct, Val V",
		p + "type Server struct",
		p + "type Server struct, Name string",
		p + "type Server struct, embedded *Embedded",
		p + "type Server struct, embedded io.Reader",
		p + "var ErrX error",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if files, _ := filepath.Glob(filepath.Join(s.root, "lib/api/*.txt")); len(files) != 1 {
		t.Errorf("API files %v, want a.txt alone: internal packages and commands are not API", files)
	}
}

func TestNamesAndMentions(t *testing.T) {
	p := "pkg example.com/lib/a, "
	for line, want := range map[string]string{
		p + "func WithMode(Mode) Option":                           "WithMode",
		p + "func Map[T any, U Number]([]T) U":                     "Map",
		p + "const OutcomeExecuted Outcome = \"executed\"":         "OutcomeExecuted",
		p + "var ErrX error":                                       "ErrX",
		p + "type Problem struct":                                  "Problem",
		p + "type Problem struct, Body []byte":                     "Problem.Body",
		p + "type Pair[K comparable, V any] struct, Key K":         "Pair.Key",
		p + "type Server struct, embedded *io.Reader":              "Server.Reader",
		p + "type API interface { Get, Put }":                      "API",
		p + "type API interface, Get(context.Context) error":       "API.Get",
		p + "method (*Problem) WithRetryAfter(time.Duration)":      "Problem.WithRetryAfter",
		p + "method (Pair[K, V]) Swap() Pair[K, V]":                "Pair.Swap",
		p + "type Option func(*Store, int)":                        "Option",
		p + "type Number interface{~int | ~int64}":                 "Number",
		p + "type Alias = Kind":                                    "Alias",
		p + "method (Server) Read([]byte) (int, error)":            "Server.Read",
		p + "type Pair[K comparable, V any] struct":                "Pair",
		p + "type Layout struct, SortValue string":                 "Layout.SortValue",
		p + "func Do[T any](context.Context, func() T) (T, error)": "Do",
	} {
		if got := nameOf(line); got != want {
			t.Errorf("nameOf(%q) = %q, want %q", line, got, want)
		}
	}
	notes := "- `WithMode` and `idemhttp.Problem.Body` are gone; (`Layout.Key`) changed; see WithModeX. Also `Store`.\n"
	for name, want := range map[string]bool{
		"WithMode": true, "Problem.Body": true, "Layout.Key": true,
		"Body": false, "Key": false, "Mode": false, "Problem": false, "WithModeX": true, "Layout": false, "Store": true,
	} {
		if got := mentions(notes, name); got != want {
			t.Errorf("mentions(%q) = %v, want %v", name, got, want)
		}
	}
}

// After a release, the API its tag recorded is the baseline: a line it
// had that the library lacks must stay named under Unreleased, whatever
// the API files say now (edited by hand, say).
func TestARemovalSinceTheLastReleaseStaysNamed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH: release tags cannot be read")
	}
	s := newScratch(t, map[string]string{"lib/a/a.go": pkgA})
	s.mustRun(true, 0)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", s.root, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "v0.1.0")
	git("tag", "lib/v0.1.0")
	if out := s.mustRun(false, 0); !strings.Contains(out, "compared with lib/v0.1.0") {
		t.Errorf("the check does not say which release it compared with:\n%s", out)
	}

	// Gone removed, and the API file edited by hand to match.
	s.write("lib/a/a.go", strings.Replace(pkgA, "func Gone() {}\n", "", 1))
	s.write("lib/api/a.txt", strings.Replace(s.read("lib/api/a.txt"), "pkg example.com/lib/a, func Gone()\n", "", 1))
	out := s.mustRun(false, 1)
	if !strings.Contains(out, "- pkg example.com/lib/a, func Gone()\n      name: Gone") {
		t.Errorf("the removal since the release is not reported:\n%s", out)
	}
	s.write("lib/CHANGELOG.md", strings.Replace(s.read("lib/CHANGELOG.md"), "- things.\n", "- things.\n- `Gone` is removed.\n", 1))
	s.mustRun(false, 0)

	// The release of 0.2.0: its section is cut from Unreleased in the
	// commit the tag goes on; the name is then above 0.1.0's section.
	s.write("lib/CHANGELOG.md", strings.Replace(s.read("lib/CHANGELOG.md"), "## Unreleased\n", "## Unreleased\n\n## 0.2.0 (2027-01-10)\n", 1))
	s.mustRun(false, 0)
	git("add", "-A")
	git("commit", "-qm", "v0.2.0")
	git("tag", "lib/v0.2.0")
	if out := s.mustRun(false, 0); !strings.Contains(out, "compared with lib/v0.2.0") {
		t.Errorf("the newest release is the baseline:\n%s", out)
	}
}

func TestChangelogSections(t *testing.T) {
	changelog := "# Changelog\n\n## Unreleased\n- u\n\n## v0.3.0 (2027-02-01)\n- three\n\n## 0.2.0\n- two\n\n## 0.1.0\n- one\n"
	for release, want := range map[string]string{
		"":      "- u\n\n",
		"0.2.0": "- u\n\n- three\n\n",
		"0.3.0": "- u\n\n",
		"0.1.0": "- u\n\n- three\n\n- two\n\n",
		"0.9.0": "- u\n\n- three\n\n- two\n\n- one\n\n",
	} {
		got, ok := section(changelog, release)
		if !ok || got != want {
			t.Errorf("section(%q) = %q, %v; want %q", release, got, ok, want)
		}
	}
	if _, ok := section("# Changelog\n\n## 0.1.0\n", ""); ok {
		t.Error("a changelog without Unreleased should be refused")
	}
	if v := version("pkg/idem/idemtest/v0.2.1"); v != "0.2.1" {
		t.Errorf("version = %q", v)
	}
}

// The repository's own library keeps what pkg/api/v1 and pkg/api hold,
// as make api-check says; an addition not recorded yet is in the log.
func TestTheLibrarysAPIIsRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loading the library takes seconds")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if code := check(config{root: root, lib: "pkg", apiDir: "pkg/api", baseline: "pkg/api/v1", changelog: "pkg/CHANGELOG.md"}, &out); code != 0 {
		t.Fatalf("make api-check would fail (exit %d):\n%s", code, out.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}

// The released API (the baseline, pkg/api/v1 for the library) holds
// every line its major version released: removing or re-typing one fails
// the check whatever the changelog says, and the update refuses to
// record it; adding a name passes, a release refuses it until it is
// recorded, and then adds it to the baseline.
func TestTheReleasedAPIRefusesARemovalWhateverTheChangelogSays(t *testing.T) {
	s := newScratch(t, map[string]string{"lib/a/a.go": pkgA})
	s.cfg.baseline = "lib/api/v1"
	s.mustRun(true, 0)
	s.cfg.release = true
	if out := s.mustRun(false, 0); !strings.Contains(out, "lib/api/v1 holds the exported API of 1 package, released") {
		t.Fatalf("the release did not write the baseline:\n%s", out)
	}
	s.cfg.release = false
	if out := s.mustRun(false, 0); !strings.Contains(out, "compared with lib/api/v1, the API the major version released: 2 lines") {
		t.Errorf("the check does not say it compared with the baseline:\n%s", out)
	}

	// Gone removed, and named in the changelog as a pre-v1 release allowed.
	s.write("lib/a/a.go", strings.Replace(pkgA, "func Gone() {}\n", "", 1))
	s.write("lib/CHANGELOG.md", strings.Replace(s.read("lib/CHANGELOG.md"), "- things.\n", "- things.\n\n### Removed\n- `Gone`: call Kept.\n", 1))
	out := s.mustRun(false, 1)
	for _, want := range []string{
		"breaks the released API (lib/api/v1): removed or changed, which no changelog entry allows:\n  - pkg example.com/lib/a, func Gone()\n      name: Gone\n",
		"keeps every name the major version released",
		"a /v2 module path",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the check's output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("a removal against the released API:\n%s", out)
	recorded := s.read("lib/api/a.txt")
	s.mustRun(true, 1)
	if s.read("lib/api/a.txt") != recorded {
		t.Error("the update recorded a removal of a released name")
	}

	// A re-typed function is a removal of its released line too.
	s.write("lib/a/a.go", strings.Replace(pkgA, "func Kept(ctx context.Context, names ...string) (int, error)", "func Kept(ctx context.Context, names []string) (int, error)", 1))
	out = s.mustRun(false, 1)
	if !strings.Contains(out, "  - pkg example.com/lib/a, func Kept(context.Context, ...string) (int, error)\n      name: Kept\n") {
		t.Errorf("the re-typed Kept is not reported against the released API:\n%s", out)
	}
}

func TestTheReleasedAPIAcceptsAnAddition(t *testing.T) {
	s := newScratch(t, map[string]string{"lib/a/a.go": pkgA})
	s.cfg.baseline = "lib/api/v1"
	s.mustRun(true, 0)
	s.cfg.release = true
	s.mustRun(false, 0)
	s.cfg.release = false
	baseline := s.read("lib/api/v1/a.txt")

	s.write("lib/a/new.go", "package a\n\n// New is new.\nfunc New() string { return \"\" }\n")
	out := s.mustRun(false, 0)
	t.Logf("an addition after the release, not recorded yet:\n%s", out)
	if !strings.Contains(out, "  + pkg example.com/lib/a, func New() string\n") || strings.Contains(out, "breaks the released API") {
		t.Errorf("an addition is a notice, nothing broken:\n%s", out)
	}
	// A release takes only what is recorded: refused until it is.
	s.cfg.release = true
	if out := s.mustRun(false, 1); !strings.Contains(out, "the release is refused") {
		t.Errorf("the release with an unrecorded addition does not say why it is refused:\n%s", out)
	}
	s.cfg.release = false
	if s.read("lib/api/v1/a.txt") != baseline {
		t.Error("the refused release changed the released API")
	}
	s.mustRun(true, 0)
	out = s.mustRun(false, 0)
	t.Logf("an addition, recorded:\n%s", out)
	if s.read("lib/api/v1/a.txt") != baseline {
		t.Error("recording an addition changed the released API")
	}

	// Released, the new name is held too.
	s.cfg.release = true
	s.mustRun(false, 0)
	s.cfg.release = false
	if !strings.Contains(s.read("lib/api/v1/a.txt"), "func New() string") {
		t.Fatalf("the release did not add New to the baseline:\n%s", s.read("lib/api/v1/a.txt"))
	}
	s.write("lib/a/new.go", "package a\n")
	s.mustRun(false, 1)
}

// The library's own promise, on a scratch change to the real pkg/ (an
// overlay: nothing in the tree changes): removing idem.OutcomeOf, or
// changing idem.OutcomeError's value, fails the check against
// pkg/api/v1 with the line and what to do, whatever the changelog says;
// adding a name to idem passes, a notice until recorded (in a scratch
// copy of pkg/api).
func TestTheLibrarysReleasedAPIHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loading the library, with a scratch change, builds it again")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	scratchAPI := t.TempDir()
	files, err := filepath.Glob(filepath.Join(root, "pkg/api/*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no API files: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scratchAPI, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	changelog := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(changelog, []byte("# Changelog\n\n## Unreleased\n\n- `OutcomeOf` is removed; `OutcomeError` is \"failed\".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	callGo := filepath.Join(root, "pkg/idem/call.go")
	errorsGo := filepath.Join(root, "pkg/idem/errors.go")
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	run := func(update bool, overlay map[string][]byte) (int, string) {
		var out strings.Builder
		code := check(config{root: root, lib: "pkg", apiDir: scratchAPI, baseline: "pkg/api/v1", changelog: changelog, update: update, overlay: overlay}, &out)
		return code, out.String()
	}

	scratch := strings.Replace(read(errorsGo), "func OutcomeOf(err error) Outcome { return outcomeOf(err) }", "", 1)
	scratch = strings.Replace(scratch, `OutcomeError Outcome = "error"`, `OutcomeError Outcome = "failed"`, 1)
	code, out := run(true, map[string][]byte{errorsGo: []byte(scratch)})
	t.Logf("make api-update on a scratch change that breaks v1:\n%s", out)
	for _, want := range []string{
		"breaks the released API (pkg/api/v1)",
		"  - pkg github.com/idemlambda/idemlambda/pkg/idem, func OutcomeOf(error) Outcome\n      name: OutcomeOf\n",
		"  - pkg github.com/idemlambda/idemlambda/pkg/idem, const OutcomeError Outcome = \"error\"\n      name: OutcomeError\n",
		"put each declaration above back",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the check's output lacks %q", want)
		}
	}
	if code != 1 {
		t.Errorf("exit %d for a change that breaks v1, named in the changelog; want 1", code)
	}

	addName := read(callGo) + "\n// CallNothing is a scratch addition.\nfunc CallNothing() CallOption { return CallOption{} }\n"
	overlay := map[string][]byte{callGo: []byte(addName)}
	code, out = run(false, overlay)
	t.Logf("make api-check on a scratch addition, not recorded yet:\n%s", out)
	if code != 0 || !strings.Contains(out, "+ pkg github.com/idemlambda/idemlambda/pkg/idem, func CallNothing() CallOption") || strings.Contains(out, "breaks the released API") {
		t.Errorf("an added name: exit %d, want 0 with the line as a notice and nothing broken", code)
	}
	if code, out := run(true, overlay); code != 0 {
		t.Errorf("recording an added name: exit %d:\n%s", code, out)
	}
	code, out = run(false, overlay)
	t.Logf("make api-check on a scratch addition, recorded:\n%s", out)
	if code != 0 {
		t.Errorf("an added name, recorded: exit %d, want 0", code)
	}
}
