// Package ddbexpr reads DynamoDB condition and update expressions as far
// as pkg/idem needs to apply a write without a transaction: the
// placeholders an expression uses, the top-level attributes it refers to,
// the clauses of an update and the attribute each action targets, and an
// action added to an update's ADD clause. It checks the lexical shape
// only (tokens, balanced parentheses, the clauses); DynamoDB validates
// the rest when the expression is sent.
package ddbexpr

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrSyntax reports an expression this package cannot read.
var ErrSyntax = errors.New("ddbexpr: cannot read expression")

// kind is a token's kind.
type kind int

const (
	ident  kind = iota // a bare name, a keyword or a function name
	name               // #placeholder
	value              // :placeholder
	number             // a list index
	punct              // ( ) [ ] , . = <> < <= > >= + -
)

// token is one token of an expression, with its byte offset.
type token struct {
	kind kind
	text string
	pos  int
}

// tokens splits expr into tokens.
func tokens(expr string) ([]token, error) {
	var out []token
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || c == ':':
			j := i + 1
			for j < len(expr) && isWord(expr[j]) {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("%w: %q at %d names nothing", ErrSyntax, c, i)
			}
			k := name
			if c == ':' {
				k = value
			}
			out = append(out, token{k, expr[i:j], i})
			i = j
		case isLetter(c):
			j := i + 1
			for j < len(expr) && isWord(expr[j]) {
				j++
			}
			out = append(out, token{ident, expr[i:j], i})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(expr) && expr[j] >= '0' && expr[j] <= '9' {
				j++
			}
			out = append(out, token{number, expr[i:j], i})
			i = j
		case c == '<' || c == '>':
			j := i + 1
			if j < len(expr) && (expr[j] == '=' || c == '<' && expr[j] == '>') {
				j++
			}
			out = append(out, token{punct, expr[i:j], i})
			i = j
		case strings.IndexByte("()[],.=+-", c) >= 0:
			out = append(out, token{punct, expr[i : i+1], i})
			i++
		default:
			return nil, fmt.Errorf("%w: unexpected %q at %d", ErrSyntax, c, i)
		}
	}
	depth := 0
	for _, t := range out {
		switch t.text {
		case "(", "[":
			depth++
		case ")", "]":
			if depth--; depth < 0 {
				return nil, fmt.Errorf("%w: unbalanced %q at %d", ErrSyntax, t.text, t.pos)
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%w: unbalanced parentheses", ErrSyntax)
	}
	return out, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isWord(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c == '_' }

// keywords are the words of the expression grammar that are never an
// attribute's bare name (each is a DynamoDB reserved word).
var keywords = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "BETWEEN": true, "IN": true,
	"SET": true, "REMOVE": true, "ADD": true, "DELETE": true,
}

// clauseWord is the clause an update's keyword opens, or "".
func clauseWord(t token) string {
	if t.kind != ident {
		return ""
	}
	switch w := strings.ToUpper(t.text); w {
	case "SET", "REMOVE", "ADD", "DELETE":
		return w
	}
	return ""
}

// Placeholders are the #names and :values expr uses, each once, in order.
func Placeholders(expr string) (names, values []string, err error) {
	ts, err := tokens(expr)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range ts {
		switch {
		case t.kind == name && !slices.Contains(names, t.text):
			names = append(names, t.text)
		case t.kind == value && !slices.Contains(values, t.text):
			values = append(values, t.text)
		}
	}
	return names, values, nil
}

// Attributes are the top-level attributes expr refers to, each once, as
// written: a #placeholder or a bare name (the first element of each
// document path; a function's name and the grammar's keywords are not
// attributes).
func Attributes(expr string) ([]string, error) {
	ts, err := tokens(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, t := range ts {
		if top, ok := pathStart(ts, i); ok && !slices.Contains(out, top) {
			out = append(out, t.text)
		}
	}
	return out, nil
}

// pathStart reports whether ts[i] begins a document path (an attribute,
// not an element of a path already begun, a function name or a
// keyword), and its top-level attribute as written.
func pathStart(ts []token, i int) (string, bool) {
	t := ts[i]
	if t.kind != name && (t.kind != ident || keywords[strings.ToUpper(t.text)]) {
		return "", false
	}
	if i > 0 && ts[i-1].text == "." {
		return "", false // a nested element
	}
	if t.kind == ident && i+1 < len(ts) && ts[i+1].text == "(" {
		return "", false // a function
	}
	return t.text, true
}

// Action is one action of an update's clause.
type Action struct {
	// Clause is its clause: SET, REMOVE, ADD or DELETE.
	Clause string
	// Target is the top-level attribute it writes, as written.
	Target string
}

// Actions are the actions of an update expression, clause by clause; an
// expression with a clause twice, or an empty clause, is ErrSyntax.
func Actions(update string) ([]Action, error) {
	ts, err := tokens(update)
	if err != nil {
		return nil, err
	}
	var out []Action
	seen := map[string]bool{}
	clause := ""
	begin := true // the next token begins an action
	depth := 0
	for i, t := range ts {
		if w := clauseWord(t); w != "" && depth == 0 {
			if seen[w] {
				return nil, fmt.Errorf("%w: the %s clause twice", ErrSyntax, w)
			}
			if clause != "" && begin {
				return nil, fmt.Errorf("%w: an empty %s clause", ErrSyntax, clause)
			}
			seen[w], clause, begin = true, w, true
			continue
		}
		if clause == "" {
			return nil, fmt.Errorf("%w: %q before any clause", ErrSyntax, t.text)
		}
		switch t.text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ",":
			if depth == 0 {
				if begin {
					return nil, fmt.Errorf("%w: an empty action in %s", ErrSyntax, clause)
				}
				begin = true
				continue
			}
		}
		if begin {
			top, ok := pathStart(ts, i)
			if !ok {
				return nil, fmt.Errorf("%w: %s action begins with %q, not an attribute", ErrSyntax, clause, t.text)
			}
			out = append(out, Action{Clause: clause, Target: top})
			begin = false
		}
	}
	if clause == "" || begin {
		return nil, fmt.Errorf("%w: an update with no action", ErrSyntax)
	}
	return out, nil
}

// AddAction returns update with action ("path value") added to its ADD
// clause, or with an ADD clause of it when it has none.
func AddAction(update, action string) (string, error) { return addTo(update, "ADD", action) }

// DeleteAction returns update with action ("path value", a set's
// elements to take out) added to its DELETE clause, or with a DELETE
// clause of it when it has none.
func DeleteAction(update, action string) (string, error) { return addTo(update, "DELETE", action) }

// addTo returns update with action added to its clause, or with that
// clause of it when it has none.
func addTo(update, clause, action string) (string, error) {
	if _, err := Actions(update); err != nil {
		return "", err
	}
	ts, _ := tokens(update)
	depth, in := 0, false
	for _, t := range ts {
		switch t.text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		}
		w := clauseWord(t)
		switch {
		case w == "" || depth != 0:
		case w == clause:
			in = true
		case in:
			// The clause ends where the next one begins.
			return strings.TrimRight(update[:t.pos], " \t\r\n") + ", " + action + " " + update[t.pos:], nil
		}
	}
	if in {
		return strings.TrimRight(update, " \t\r\n") + ", " + action, nil
	}
	return strings.TrimRight(update, " \t\r\n") + " " + clause + " " + action, nil
}

// NotExists reports whether cond is exactly attribute_not_exists of one
// top-level attribute, and that attribute as written.
func NotExists(cond string) (string, bool) {
	ts, err := tokens(cond)
	if err != nil || len(ts) != 4 {
		return "", false
	}
	if ts[0].kind != ident || !strings.EqualFold(ts[0].text, "attribute_not_exists") || ts[1].text != "(" || ts[3].text != ")" {
		return "", false
	}
	if ts[2].kind != name && ts[2].kind != ident {
		return "", false
	}
	return ts[2].text, true
}
