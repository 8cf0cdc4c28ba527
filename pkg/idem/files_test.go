package idem_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// backwardExceptions are the references that may run against the order
// doc.go lists ("file -> declaring file: name"), each with its reason.
var backwardExceptions = map[string]string{
	// The Store holds what WithHomes gives it, which is built from the
	// Store's own settings (its table, layout, clock and margin).
	"store.go -> home.go: homes": "the Store holds its Homes' state, made from the Store's settings",
	// NewStore refuses a told kind its options cannot honour, by the
	// rule every call applies to a learned one.
	"store.go -> table.go: *Store.fits": "NewStore checks a told kind by the rule every call applies",
}

// TestFilesStandInProtocolOrder holds the package's files to the order
// doc.go lists them in: each file uses only names declared in itself or
// in a file listed before it. It counts, and lists, every name a file
// uses from a file listed after it (a backward reference); each must be
// one of backwardExceptions, and each exception must still occur.
func TestFilesStandInProtocolOrder(t *testing.T) {
	order := listedOrder(t)
	back := backwardReferences(t, ".", order)
	t.Logf("backward references: %d", len(back))
	for _, ref := range back {
		if _, ok := backwardExceptions[ref]; !ok {
			t.Errorf("backward reference %s: move the name, or name the exception and its reason in backwardExceptions", ref)
		}
	}
	for ref := range backwardExceptions {
		if !slices.Contains(back, ref) {
			t.Errorf("the exception %s no longer occurs: remove it", ref)
		}
	}
}

// listedOrder is the files doc.go lists, in order, each on a comment line
// of its own that starts with a tab and the file's name; they must be the
// package's files, each once.
func listedOrder(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range regexp.MustCompile(`(?m)^//\t([a-z_]+\.go)\b`).FindAllStringSubmatch(string(doc), -1) {
		order = append(order, m[1])
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	if got, want := slices.Sorted(slices.Values(order)), files; !slices.Equal(got, want) {
		t.Fatalf("doc.go lists %v; the package's files are %v", got, want)
	}
	return order
}

// backwardReferences type-checks the package in dir (its imports from
// their export data, as go list -export gives it) and returns each
// "file -> declaring file: name" where file uses a package-level name,
// or a method, declared in a file after it in order.
func backwardReferences(t *testing.T, dir string, order []string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range order {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: exportImporter(t, fset, dir)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check("idem", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	rank := map[string]int{}
	for i, name := range order {
		rank[name] = i
	}
	seen := map[string]bool{}
	var back []string
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !isDeclared(pkg, obj) {
			continue
		}
		from, to := filepath.Base(fset.Position(id.Pos()).Filename), filepath.Base(fset.Position(obj.Pos()).Filename)
		ref := fmt.Sprintf("%s -> %s: %s", from, to, qualified(pkg, obj))
		if rank[to] > rank[from] && !seen[ref] {
			seen[ref] = true
			back = append(back, ref)
		}
	}
	slices.Sort(back)
	return back
}

// isDeclared reports whether obj is a package-level name or a method.
func isDeclared(pkg *types.Package, obj types.Object) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	f, ok := obj.(*types.Func)
	return ok && f.Signature().Recv() != nil
}

// qualified is obj's name, a method's with its receiver type.
func qualified(pkg *types.Package, obj types.Object) string {
	if f, ok := obj.(*types.Func); ok && f.Signature().Recv() != nil {
		return types.TypeString(f.Signature().Recv().Type(), types.RelativeTo(pkg)) + "." + f.Name()
	}
	return obj.Name()
}

// exportImporter imports the dependencies of the package in dir from
// their export data, which go list -export builds (from the build cache,
// as the test binary's own build left it).
func exportImporter(t *testing.T, fset *token.FileSet, dir string) types.Importer {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
}
