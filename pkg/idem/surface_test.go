package idem_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
)

// maxExported bounds the package's surface, so that a stranger learns it
// in one sitting: a low-level piece belongs in a sub-package or
// unexported. 53 since ScopeFrom, the one that replaced idemhttp's and
// idemevent's copies (issue 29); 54 since WithTrace, the store's option
// for the trace hook, whose types live in pkg/idem/idemtrace (issue 30);
// 55 since NewAnonymousScope and Scope.Anonymous replaced the Anonymous
// constant, which a caller's name could spell (issue 36); 56 since
// FailedWrite, which tells an operation with several conditions which of
// its writes failed, where only the library knows what it put before
// them (issue 35). Folding it away was weighed: an exported error type
// would cost a name too, and callers would index DynamoDB's reasons past
// items the library chose. 62 since the public seam of an adapter
// (CallOption, CallWait, CallRedelivers, CallRetention, Store.ValidateCall,
// OutcomeOf, RetryAfter: issue 36), which replaced an internal package
// only the library's adapters could import, less WithOutcomeHook (the
// trace's CallDone reports outcomes); v1.0.0 exports these 62. 71 since
// a store on a global table (issue 37, v1.1.0): told or learning its
// table's kind (WithTableKind, Store.Learn; the kinds live in
// pkg/idem/idemtable), expiry without TTL (Store.Sweep, SweepOptions,
// SweepStats), and a key's home Region (WithHomes, Homes, WithRegion,
// ErrNoHome; the operator's side lives in pkg/idem/idemglobal).
const maxExported = 71

// TestExportedSurfaceStaysSmall counts what go doc lists: exported
// top-level functions, types, constants and variables, and the exported
// methods of exported types.
func TestExportedSurfaceStaysSmall(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	types := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
						types[ts.Name.Name] = true
					}
				}
			}
		}
	}
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				if recv := receiver(d.Recv.List[0].Type); types[recv] {
					names = append(names, recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	t.Logf("%d exported names: %s", len(names), strings.Join(names, " "))
	if len(names) > maxExported {
		t.Errorf("pkg/idem exports %d names, more than %d: move low-level pieces to a sub-package or unexport them", len(names), maxExported)
	}
}

func receiver(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiver(e.X)
	case *ast.IndexExpr:
		return receiver(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
