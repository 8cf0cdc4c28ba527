package idem_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// TestDocCommentsNameTheirIdentifier holds every doc comment of the
// package's declarations to Go's rule, that it begins with the name it
// documents (a method's, or one of a spec's names): a comment that names
// another identifier was left behind by a rename.
func TestDocCommentsNameTheirIdentifier(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			for _, c := range documented(d) {
				if first := firstWord(c.doc); !c.names[first] {
					t.Errorf("%s: the doc comment of %s begins with %q", fset.Position(c.pos), c.name, first)
				}
			}
		}
	}
}

// docOf is one doc comment and the names it may begin with.
type docOf struct {
	doc   *ast.CommentGroup
	name  string
	names map[string]bool
	pos   token.Pos
}

// documented lists the doc comments of d: a function's, a single spec's
// (on the declaration), each spec's own in a group; a group's comment is
// about the group, and is left alone.
func documented(d ast.Decl) []docOf {
	var out []docOf
	add := func(doc *ast.CommentGroup, pos token.Pos, names ...*ast.Ident) {
		if doc == nil || len(names) == 0 {
			return
		}
		c := docOf{doc: doc, name: names[0].Name, names: map[string]bool{}, pos: pos}
		for _, n := range names {
			c.names[n.Name] = true
		}
		out = append(out, c)
	}
	switch d := d.(type) {
	case *ast.FuncDecl:
		add(d.Doc, d.Pos(), d.Name)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			doc := specDoc(s)
			if !d.Lparen.IsValid() {
				doc = d.Doc
			}
			switch s := s.(type) {
			case *ast.TypeSpec:
				add(doc, s.Pos(), s.Name)
			case *ast.ValueSpec:
				add(doc, s.Pos(), s.Names...)
			}
		}
	}
	return out
}

// specDoc is a spec's own doc comment.
func specDoc(s ast.Spec) *ast.CommentGroup {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return s.Doc
	case *ast.ValueSpec:
		return s.Doc
	}
	return nil
}

// firstWord is the identifier a comment begins with.
func firstWord(doc *ast.CommentGroup) string {
	text := strings.TrimSpace(doc.Text())
	end := strings.IndexFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	if end < 0 {
		return text
	}
	return text[:end]
}
