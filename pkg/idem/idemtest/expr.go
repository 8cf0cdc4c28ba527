package idemtest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The expression language of DynamoDB (Developer Guide, "Using
// expressions in DynamoDB": condition and filter expressions, update
// expressions, projection expressions, key condition expressions),
// tokenized and parsed here, so a request DynamoDB refuses is refused
// before it reaches the store: a syntax error, a placeholder not defined,
// a placeholder defined and never used, a reserved word used as a name.

// token is one lexical token of an expression.
type token struct {
	kind byte // 'i' identifier, '#' name placeholder, ':' value placeholder, 'n' digits, 'p' punctuation, 0 end
	text string
	pos  int
}

func tokenize(src string) ([]token, string) {
	var toks []token
	isWord := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || c == ':':
			j := i + 1
			for j < len(src) && isWord(src[j]) {
				j++
			}
			if j == i+1 {
				return nil, src[i : i+1]
			}
			toks = append(toks, token{kind: c, text: src[i:j], pos: i})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			toks = append(toks, token{kind: 'n', text: src[i:j], pos: i})
			i = j
		case isWord(c):
			j := i
			for j < len(src) && isWord(src[j]) {
				j++
			}
			toks = append(toks, token{kind: 'i', text: src[i:j], pos: i})
			i = j
		default:
			n := 1
			if i+1 < len(src) {
				switch src[i : i+2] {
				case "<>", "<=", ">=":
					n = 2
				}
			}
			op := src[i : i+n]
			if !strings.Contains("()[],.=<>+-", op[:1]) {
				return nil, op
			}
			toks = append(toks, token{kind: 'p', text: op, pos: i})
			i += n
		}
	}
	return append(toks, token{pos: len(src)}), ""
}

// pathElem is one step of a document path: an attribute or map key, or
// a list index.
type pathElem struct {
	name  string
	index int // for a list index; name is then ""
}

type docPath []pathElem

func (p docPath) String() string {
	parts := make([]string, len(p))
	for i, e := range p {
		if e.name == "" {
			parts[i] = "[" + strconv.Itoa(e.index) + "]"
		} else {
			parts[i] = e.name
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// overlaps reports whether one path is the other or lies inside it.
func (p docPath) overlaps(q docPath) bool {
	n := min(len(p), len(q))
	for i := range n {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// operand is a value in an expression: a path, a placeholder's value, or
// a function of them.
type operand struct {
	path  docPath
	value *value
	ref   string // the placeholder, for messages
	fn    string // size, if_not_exists, list_append; "+" or "-" for arithmetic
	args  []*operand
}

// cond is a condition: a comparison, BETWEEN, IN, a function, or a
// combination with AND, OR, NOT.
type cond struct {
	op   string // = <> < <= > >= BETWEEN IN AND OR NOT, or a function name
	args []*operand
	subs []*cond
}

// updateExpr is a parsed update expression.
type updateExpr struct {
	set    []setAction
	remove []docPath
	add    []setAction // ADD path value
	delete []setAction // DELETE path value
}

type setAction struct {
	path docPath
	val  *operand
}

// paths lists every path the update writes.
func (u *updateExpr) paths() []docPath {
	var out []docPath
	for _, a := range u.set {
		out = append(out, a.path)
	}
	out = append(out, u.remove...)
	for _, a := range u.add {
		out = append(out, a.path)
	}
	for _, a := range u.delete {
		out = append(out, a.path)
	}
	return out
}

// exprs is the expressions of one request (or one action of a
// transaction) with their placeholders: parsing records which
// placeholders are used, so the unused are refused as DynamoDB refuses
// them.
type exprs struct {
	names      map[string]string
	values     attrs
	usedNames  map[string]bool
	usedValues map[string]bool
	any        bool // an expression was given
}

// newExprs checks the placeholders of a request as DynamoDB does before
// it parses any expression: neither map empty, every value valid.
func newExprs(names map[string]string, values item) (*exprs, error) {
	e := &exprs{names: names, usedNames: map[string]bool{}, usedValues: map[string]bool{}}
	if names != nil && len(names) == 0 {
		return nil, invalidf("ExpressionAttributeNames must not be empty")
	}
	if values != nil && len(values) == 0 {
		return nil, invalidf("ExpressionAttributeValues must not be empty")
	}
	for k := range names {
		if len(k) < 2 || k[0] != '#' {
			return nil, invalidf("ExpressionAttributeNames contains invalid key: Syntax error; key: %q", k)
		}
	}
	e.values = make(attrs, len(values))
	for _, k := range sortedKeys(values) {
		if len(k) < 2 || k[0] != ':' {
			return nil, invalidf("ExpressionAttributeValues contains invalid key: Syntax error; key: %q", k)
		}
		v, err := decodeValue(values[k])
		if err != nil {
			return nil, invalidf("ExpressionAttributeValues contains invalid value: %s for key %s", err.Error(), k)
		}
		e.values[k] = v
	}
	return e, nil
}

// unused refuses placeholders no expression used. Call it once every
// expression of the request is parsed.
func (e *exprs) unused() error {
	if !e.any {
		if len(e.names) > 0 {
			return invalidf("ExpressionAttributeNames can only be specified when using expressions")
		}
		if len(e.values) > 0 {
			return invalidf("ExpressionAttributeValues can only be specified when using expressions")
		}
	}
	var names, values []string
	for k := range e.names {
		if !e.usedNames[k] {
			names = append(names, k)
		}
	}
	for k := range e.values {
		if !e.usedValues[k] {
			values = append(values, k)
		}
	}
	sort.Strings(names)
	sort.Strings(values)
	if len(names) > 0 {
		return invalidf("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", strings.Join(names, ", "))
	}
	if len(values) > 0 {
		return invalidf("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", strings.Join(values, ", "))
	}
	return nil
}

// parser parses one expression.
type parser struct {
	e    *exprs
	kind string // ConditionExpression, UpdateExpression, ...
	src  string
	toks []token
	pos  int
}

func (e *exprs) parser(kind, src string) (*parser, error) {
	e.any = true
	if strings.TrimSpace(src) == "" {
		return nil, invalidf("Invalid %s: The expression can not be empty;", kind)
	}
	toks, bad := tokenize(src)
	if bad != "" {
		return nil, invalidf("Invalid %s: Syntax error; token: %q, near: %q", kind, bad, near(src, strings.Index(src, bad)))
	}
	return &parser{e: e, kind: kind, src: src, toks: toks}, nil
}

// near is the text around position i, as DynamoDB quotes it.
func near(src string, i int) string {
	from := strings.LastIndexAny(src[:max(i-1, 0)], " ") + 1
	to := len(src)
	if j := strings.IndexAny(src[min(i+1, len(src)):], " "); j >= 0 {
		to = i + 1 + j
	}
	return strings.TrimSpace(src[from:to])
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != 0 {
		p.pos++
	}
	return t
}

func (p *parser) syntax(t token) error {
	text := t.text
	if t.kind == 0 {
		return invalidf("Invalid %s: Syntax error; token: \"<EOF>\", near: %q", p.kind, near(p.src, len(p.src)))
	}
	return invalidf("Invalid %s: Syntax error; token: %q, near: %q", p.kind, text, near(p.src, t.pos))
}

func (p *parser) errorf(format string, args ...any) error {
	return invalidf("Invalid %s: %s", p.kind, fmt.Sprintf(format, args...))
}

// keyword reports whether the next token is the keyword kw (any case),
// and takes it if so.
func (p *parser) keyword(kw string) bool {
	t := p.peek()
	if t.kind == 'i' && strings.EqualFold(t.text, kw) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) punct(s string) bool {
	t := p.peek()
	if t.kind == 'p' && t.text == s {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(s string) error {
	if p.punct(s) {
		return nil
	}
	return p.syntax(p.peek())
}

func (p *parser) end() error {
	if t := p.peek(); t.kind != 0 {
		return p.syntax(t)
	}
	return nil
}

// name resolves one attribute name of a path.
func (p *parser) name(t token) (string, error) {
	switch t.kind {
	case '#':
		n, ok := p.e.names[t.text]
		if !ok {
			return "", p.errorf("An expression attribute name used in the document path is not defined; attribute name: %s", t.text)
		}
		p.e.usedNames[t.text] = true
		return n, nil
	case 'i':
		if reservedWords[strings.ToUpper(t.text)] {
			return "", p.errorf("Attribute name is a reserved keyword; reserved keyword: %s", t.text)
		}
		if c := t.text[0]; c >= '0' && c <= '9' {
			return "", p.syntax(t)
		}
		return t.text, nil
	}
	return "", p.syntax(t)
}

// path parses a document path: a name, then .name and [index] steps.
func (p *parser) path() (docPath, error) {
	n, err := p.name(p.next())
	if err != nil {
		return nil, err
	}
	path := docPath{{name: n}}
	for {
		switch {
		case p.punct("."):
			n, err := p.name(p.next())
			if err != nil {
				return nil, err
			}
			path = append(path, pathElem{name: n})
		case p.punct("["):
			t := p.next()
			if t.kind != 'n' {
				return nil, p.syntax(t)
			}
			i, err := strconv.Atoi(t.text)
			if err != nil {
				return nil, p.syntax(t)
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			path = append(path, pathElem{index: i})
		default:
			return path, nil
		}
	}
}

// valueRef resolves a value placeholder.
func (p *parser) valueRef(t token) (*operand, error) {
	v, ok := p.e.values[t.text]
	if !ok {
		return nil, p.errorf("An expression attribute value used in expression is not defined; attribute value: %s", t.text)
	}
	p.e.usedValues[t.text] = true
	return &operand{value: v, ref: t.text}, nil
}

// isCall reports whether a function call starts here.
func (p *parser) isCall() bool {
	return p.peek().kind == 'i' && p.toks[p.pos+1].kind == 'p' && p.toks[p.pos+1].text == "("
}

// args parses a call's parenthesized operands with parse.
func (p *parser) args(parse func() (*operand, error)) ([]*operand, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var out []*operand
	for {
		a, err := parse()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
		if p.punct(")") {
			return out, nil
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
	}
}

func (p *parser) arity(fn string, args []*operand, n int) error {
	if len(args) != n {
		return p.errorf("Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", fn, len(args))
	}
	return nil
}

func (p *parser) needPath(fn string, a *operand) error {
	if a.path == nil || a.fn != "" {
		return p.errorf("Operator or function requires a document path; operator or function: %s", fn)
	}
	return nil
}

// conditionOperand parses an operand of a condition: a path, a value or
// size(path).
func (p *parser) conditionOperand() (*operand, error) {
	t := p.peek()
	switch {
	case t.kind == ':':
		return p.valueRef(p.next())
	case p.isCall():
		fn := p.next().text
		if fn != "size" {
			if isConditionFunction(fn) {
				return nil, p.syntax(t)
			}
			return nil, p.errorf("Invalid function name; function: %s", fn)
		}
		args, err := p.args(p.conditionOperand)
		if err != nil {
			return nil, err
		}
		if err := p.arity(fn, args, 1); err != nil {
			return nil, err
		}
		if err := p.needPath(fn, args[0]); err != nil {
			return nil, err
		}
		return &operand{fn: fn, args: args}, nil
	case t.kind == 'i' || t.kind == '#':
		path, err := p.path()
		if err != nil {
			return nil, err
		}
		return &operand{path: path}, nil
	}
	return nil, p.syntax(t)
}

func isConditionFunction(fn string) bool {
	switch fn {
	case "attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains":
		return true
	}
	return false
}

// condition parses a whole condition (or filter, or key condition)
// expression.
func (e *exprs) condition(kind, src string) (*cond, error) {
	p, err := e.parser(kind, src)
	if err != nil {
		return nil, err
	}
	c, err := p.or()
	if err != nil {
		return nil, err
	}
	return c, p.end()
}

func (p *parser) or() (*cond, error) {
	c, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		d, err := p.and()
		if err != nil {
			return nil, err
		}
		c = &cond{op: "OR", subs: []*cond{c, d}}
	}
	return c, nil
}

func (p *parser) and() (*cond, error) {
	c, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		d, err := p.not()
		if err != nil {
			return nil, err
		}
		c = &cond{op: "AND", subs: []*cond{c, d}}
	}
	return c, nil
}

func (p *parser) not() (*cond, error) {
	if p.keyword("NOT") {
		c, err := p.not()
		if err != nil {
			return nil, err
		}
		return &cond{op: "NOT", subs: []*cond{c}}, nil
	}
	return p.primary()
}

func (p *parser) primary() (*cond, error) {
	if p.punct("(") {
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		return c, p.expect(")")
	}
	if p.isCall() && isConditionFunction(p.peek().text) {
		fn := p.next().text
		args, err := p.args(p.conditionOperand)
		if err != nil {
			return nil, err
		}
		n := 2
		if fn == "attribute_exists" || fn == "attribute_not_exists" {
			n = 1
		}
		if err := p.arity(fn, args, n); err != nil {
			return nil, err
		}
		if err := p.needPath(fn, args[0]); err != nil {
			return nil, err
		}
		if fn == "attribute_type" {
			if err := p.checkTypeName(args[1]); err != nil {
				return nil, err
			}
		}
		if fn == "begins_with" && args[1].value != nil && args[1].value.t != "S" && args[1].value.t != "B" {
			return nil, p.errorf("Incorrect operand type for operator or function; operator or function: begins_with, operand type: %s", args[1].value.t)
		}
		return &cond{op: fn, args: args}, nil
	}
	left, err := p.conditionOperand()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	switch {
	case t.kind == 'p' && strings.Contains(" = <> < <= > >= ", " "+t.text+" "):
		p.next()
		right, err := p.conditionOperand()
		if err != nil {
			return nil, err
		}
		return &cond{op: t.text, args: []*operand{left, right}}, nil
	case p.keyword("BETWEEN"):
		low, err := p.conditionOperand()
		if err != nil {
			return nil, err
		}
		if !p.keyword("AND") {
			return nil, p.syntax(p.peek())
		}
		high, err := p.conditionOperand()
		if err != nil {
			return nil, err
		}
		if low.value != nil && high.value != nil {
			if c, ok := compare(low.value, high.value); ok && c > 0 {
				return nil, p.errorf("The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", low.value, high.value)
			}
		}
		return &cond{op: "BETWEEN", args: []*operand{left, low, high}}, nil
	case p.keyword("IN"):
		list, err := p.args(p.conditionOperand)
		if err != nil {
			return nil, err
		}
		if len(list) > 100 {
			return nil, p.errorf("The IN operator is provided with too many operands; number of operands: %d", len(list))
		}
		return &cond{op: "IN", args: append([]*operand{left}, list...)}, nil
	}
	return nil, p.syntax(t)
}

var typeNames = map[string]bool{"S": true, "SS": true, "N": true, "NS": true, "B": true, "BS": true, "BOOL": true, "NULL": true, "L": true, "M": true}

func (p *parser) checkTypeName(a *operand) error {
	if a.value == nil {
		return nil
	}
	if a.value.t != "S" {
		return p.errorf("Incorrect operand type for operator or function; operator or function: attribute_type, operand type: %s", a.value.t)
	}
	if !typeNames[a.value.s] {
		return p.errorf("Invalid attribute type name found; type: %s, valid types: { B,BOOL,BS,L,M,N,NS,NULL,S,SS }", a.value.s)
	}
	return nil
}

// projection parses a projection expression.
func (e *exprs) projection(src string) ([]docPath, error) {
	p, err := e.parser("ProjectionExpression", src)
	if err != nil {
		return nil, err
	}
	var paths []docPath
	for {
		path, err := p.path()
		if err != nil {
			return nil, err
		}
		for _, q := range paths {
			if q.overlaps(path) {
				return nil, p.errorf("Two document paths overlap with each other; must remove or rewrite one of these paths; path one: %s, path two: %s", q, path)
			}
		}
		paths = append(paths, path)
		if !p.punct(",") {
			break
		}
	}
	return paths, p.end()
}

// update parses an update expression; keys are the table's key
// attributes, which no action may touch.
func (e *exprs) update(src string, keys []string) (*updateExpr, error) {
	p, err := e.parser("UpdateExpression", src)
	if err != nil {
		return nil, err
	}
	u := &updateExpr{}
	seen := map[string]bool{}
	for p.peek().kind != 0 {
		t := p.next()
		clause := strings.ToUpper(t.text)
		if t.kind != 'i' || (clause != "SET" && clause != "REMOVE" && clause != "ADD" && clause != "DELETE") {
			return nil, p.syntax(t)
		}
		if seen[clause] {
			return nil, p.errorf("The %q section can only be used once in an update expression;", clause)
		}
		seen[clause] = true
		for {
			path, err := p.path()
			if err != nil {
				return nil, err
			}
			switch clause {
			case "SET":
				if err := p.expect("="); err != nil {
					return nil, err
				}
				v, err := p.setValue()
				if err != nil {
					return nil, err
				}
				u.set = append(u.set, setAction{path: path, val: v})
			case "REMOVE":
				u.remove = append(u.remove, path)
			case "ADD", "DELETE":
				t := p.next()
				if t.kind != ':' {
					return nil, p.syntax(t)
				}
				v, err := p.valueRef(t)
				if err != nil {
					return nil, err
				}
				if clause == "ADD" {
					if t := v.value.t; t != "N" && t != "SS" && t != "NS" && t != "BS" {
						return nil, p.errorf("Incorrect operand type for operator or function; operator: ADD, operand type: %s", typeWord(v.value.t))
					}
					u.add = append(u.add, setAction{path: path, val: v})
				} else {
					if v.value.t != "SS" && v.value.t != "NS" && v.value.t != "BS" {
						return nil, p.errorf("Incorrect operand type for operator or function; operator: DELETE, operand type: %s", typeWord(v.value.t))
					}
					u.delete = append(u.delete, setAction{path: path, val: v})
				}
			}
			if !p.punct(",") {
				break
			}
		}
	}
	paths := u.paths()
	for i, a := range paths {
		for _, k := range keys {
			if a[0].name == k {
				return nil, invalidf("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", k)
			}
		}
		for _, b := range paths[:i] {
			if a.overlaps(b) {
				return nil, p.errorf("Two document paths overlap with each other; must remove or rewrite one of these paths; path one: %s, path two: %s", b, a)
			}
		}
	}
	return u, nil
}

// typeWord names a type as DynamoDB's messages do.
func typeWord(t string) string {
	switch t {
	case "S":
		return "STRING"
	case "N":
		return "NUMBER"
	case "B":
		return "BINARY"
	case "BOOL":
		return "BOOLEAN"
	case "NULL":
		return "NULL"
	case "M":
		return "MAP"
	case "L":
		return "LIST"
	case "SS":
		return "STRING SET"
	case "NS":
		return "NUMBER SET"
	case "BS":
		return "BINARY SET"
	}
	return t
}

// setValue parses the right side of a SET action: an operand, or two
// joined by + or -.
func (p *parser) setValue() (*operand, error) {
	a, err := p.setOperand()
	if err != nil {
		return nil, err
	}
	for _, op := range []string{"+", "-"} {
		if p.punct(op) {
			b, err := p.setOperand()
			if err != nil {
				return nil, err
			}
			return &operand{fn: op, args: []*operand{a, b}}, nil
		}
	}
	return a, nil
}

// setOperand parses a path, a value, if_not_exists(path, value) or
// list_append(a, b).
func (p *parser) setOperand() (*operand, error) {
	t := p.peek()
	switch {
	case t.kind == ':':
		return p.valueRef(p.next())
	case p.isCall():
		fn := p.next().text
		if fn != "if_not_exists" && fn != "list_append" {
			return nil, p.errorf("Invalid function name; function: %s", fn)
		}
		args, err := p.args(p.setOperand)
		if err != nil {
			return nil, err
		}
		if err := p.arity(fn, args, 2); err != nil {
			return nil, err
		}
		if fn == "if_not_exists" {
			if err := p.needPath(fn, args[0]); err != nil {
				return nil, err
			}
		}
		return &operand{fn: fn, args: args}, nil
	case t.kind == 'i' || t.kind == '#':
		path, err := p.path()
		if err != nil {
			return nil, err
		}
		return &operand{path: path}, nil
	}
	return nil, p.syntax(t)
}
