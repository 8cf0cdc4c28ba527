package main

import (
	"fmt"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// A module of the library: its directory (relative to the repository's
// root, slash-separated) and module path.
type module struct {
	Dir, Path string
}

// libPackage is one importable package of the library and the lines of
// its exported API.
type libPackage struct {
	Path   string
	Module module
	Lines  []string
}

// findModules returns every module whose go.mod is under lib (relative
// to root), but those under an internal directory (whose packages no
// one outside can import) or a testdata directory.
func findModules(root, lib string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(filepath.Join(root, lib), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case path != filepath.Join(root, lib) && (name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")):
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "go.mod" {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no go.mod under %s", filepath.Join(root, lib))
	}
	return dirs, nil
}

// load type-checks the library's packages (from the compiler's export
// data, which go list builds and caches: seconds once the build cache is
// warm) and returns each importable package's API, by import path.
// Internal packages and commands are not the library's API. overlay, when
// set, replaces files' contents by absolute path (a scratch change).
func load(root, lib string, overlay map[string][]byte) ([]libPackage, error) {
	dirs, err := findModules(root, lib)
	if err != nil {
		return nil, err
	}
	var out []libPackage
	for _, dir := range dirs {
		cfg := &packages.Config{
			Mode:    packages.NeedName | packages.NeedTypes | packages.NeedModule,
			Dir:     filepath.Join(root, dir),
			Env:     append(os.Environ(), "GOWORK=off"),
			Overlay: overlay,
		}
		pkgs, err := packages.Load(cfg, "./...")
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", dir, err)
		}
		for _, p := range pkgs {
			if len(p.Errors) > 0 {
				return nil, fmt.Errorf("load %s: %v", p.PkgPath, p.Errors[0])
			}
			if p.Name == "main" || isInternal(p.PkgPath) || p.Types == nil {
				continue
			}
			m := module{Dir: dir}
			if p.Module != nil {
				m.Path = p.Module.Path
			}
			out = append(out, libPackage{Path: p.PkgPath, Module: m, Lines: apiLines(p.Types)})
		}
	}
	slices.SortFunc(out, func(a, b libPackage) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func isInternal(path string) bool {
	for _, el := range strings.Split(path, "/") {
		if el == "internal" {
			return true
		}
	}
	return false
}

// apiLines lists a package's exported API in the manner of Go's own api
// files (go/api/go1.*.txt), one declaration a line, sorted:
//
//	pkg P, const Name Type = value
//	pkg P, var Name Type
//	pkg P, func Name[TypeParams](Params) Results
//	pkg P, type Name[TypeParams] struct
//	pkg P, type Name struct, Field Type
//	pkg P, type Name struct, embedded Type
//	pkg P, type Name interface { M1, M2 }
//	pkg P, type Name interface, M1(Params) Results
//	pkg P, type Name Underlying
//	pkg P, type Name = Aliased
//	pkg P, method (*Name) M(Params) Results
//
// Parameter names are left out (renaming one breaks no caller); types of
// other packages are qualified by their package name. Every method a
// named type's values or pointers have is listed, promoted ones
// included, with the receiver that has it. An interface's summary line
// names its methods, so adding one (which breaks its implementations)
// changes that line.
func apiLines(pkg *types.Package) []string {
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	w := writer{qual: qual}
	prefix := "pkg " + pkg.Path() + ", "
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, prefix+fmt.Sprintf(format, args...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, w.typ(o.Type()), o.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, w.typ(o.Type()))
		case *types.Func:
			sig := o.Type().(*types.Signature)
			add("func %s%s%s", name, w.typeParams(sig.TypeParams()), w.signature(sig))
		case *types.TypeName:
			for _, l := range w.typeLines(o) {
				add("%s", l)
			}
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// writer prints types as the API files show them.
type writer struct{ qual types.Qualifier }

// typ is t without parameter names in any function type it holds.
func (w writer) typ(t types.Type) string {
	switch t := t.(type) {
	case *types.Signature:
		return "func" + w.signature(t)
	case *types.Pointer:
		return "*" + w.typ(t.Elem())
	case *types.Slice:
		return "[]" + w.typ(t.Elem())
	case *types.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), w.typ(t.Elem()))
	case *types.Map:
		return "map[" + w.typ(t.Key()) + "]" + w.typ(t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendOnly:
			return "chan<- " + w.typ(t.Elem())
		case types.RecvOnly:
			return "<-chan " + w.typ(t.Elem())
		}
		return "chan " + w.typ(t.Elem())
	}
	return types.TypeString(t, w.qual)
}

// signature is "(Params) Results", without names.
func (w writer) signature(sig *types.Signature) string {
	var params []string
	for i := range sig.Params().Len() {
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			params = append(params, "..."+w.typ(t.(*types.Slice).Elem()))
			continue
		}
		params = append(params, w.typ(t))
	}
	s := "(" + strings.Join(params, ", ") + ")"
	switch n := sig.Results().Len(); n {
	case 0:
	case 1:
		s += " " + w.typ(sig.Results().At(0).Type())
	default:
		results := make([]string, n)
		for i := range n {
			results[i] = w.typ(sig.Results().At(i).Type())
		}
		s += " (" + strings.Join(results, ", ") + ")"
	}
	return s
}

// typeParams is "[P Constraint, ...]", or "" for none.
func (w writer) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	parts := make([]string, tps.Len())
	for i := range tps.Len() {
		tp := tps.At(i)
		parts[i] = tp.Obj().Name() + " " + w.typ(tp.Constraint())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// typeArgs is "[P, ...]": the type's parameters as a receiver names them.
func typeArgs(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	parts := make([]string, tps.Len())
	for i := range tps.Len() {
		parts[i] = tps.At(i).Obj().Name()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// typeLines are the lines of one exported type: its declaration, its
// exported fields or interface methods, and its methods.
func (w writer) typeLines(o *types.TypeName) []string {
	name := o.Name()
	if o.IsAlias() {
		return []string{fmt.Sprintf("type %s = %s", name, w.typ(types.Unalias(o.Type())))}
	}
	named, ok := o.Type().(*types.Named)
	if !ok {
		return []string{fmt.Sprintf("type %s %s", name, w.typ(o.Type().Underlying()))}
	}
	head := "type " + name + w.typeParams(named.TypeParams())
	var lines []string
	switch u := named.Underlying().(type) {
	case *types.Struct:
		lines = append(lines, head+" struct")
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case f.Embedded() && f.Exported():
				lines = append(lines, fmt.Sprintf("%s struct, embedded %s", head, w.typ(f.Type())))
			case f.Exported() && !f.Embedded():
				lines = append(lines, fmt.Sprintf("%s struct, %s %s", head, f.Name(), w.typ(f.Type())))
			}
		}
	case *types.Interface:
		if !u.IsMethodSet() {
			// A constraint with a type set: its whole definition.
			return []string{head + " " + types.TypeString(u, w.qual)}
		}
		var names []string
		unexported := false
		for i := range u.NumMethods() {
			m := u.Method(i)
			if !m.Exported() {
				unexported = true
				continue
			}
			names = append(names, m.Name())
			lines = append(lines, fmt.Sprintf("%s interface, %s%s", head, m.Name(), w.signature(m.Type().(*types.Signature))))
		}
		slices.Sort(names)
		if unexported {
			names = append(names, "unexported methods")
		}
		summary := head + " interface {}"
		if len(names) > 0 {
			summary = head + " interface { " + strings.Join(names, ", ") + " }"
		}
		lines = append(lines, summary)
		return lines
	default:
		lines = append(lines, head+" "+w.typ(u))
	}
	recv := name + typeArgs(named.TypeParams())
	values := types.NewMethodSet(named)
	pointers := types.NewMethodSet(types.NewPointer(named))
	for i := range pointers.Len() {
		m := pointers.At(i).Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		r := "*" + recv
		if values.Lookup(m.Pkg(), m.Name()) != nil {
			r = recv
		}
		lines = append(lines, fmt.Sprintf("method (%s) %s%s", r, m.Name(), w.signature(m.Type().(*types.Signature))))
	}
	return lines
}
