package idemtest

import (
	"encoding/json"
	"math/bits"
	"net/http"
	"sort"
	"strings"
)

// Query and Scan (API Reference, Query and Scan; Developer Guide,
// "Querying tables" and "Scanning tables"), served from the store's own
// storage and evaluated by its own expressions, numbers exact:
//
//   - a Query reads one partition, of the table or of an index, in sort
//     key order (ScanIndexForward false: reversed), the sort key limited
//     by the key condition (=, <, <=, >, >=, BETWEEN, begins_with);
//   - a Scan reads every partition in the order of a hash of its key
//     (Segment and TotalSegments: a contiguous share of that order);
//   - either reads at most Limit items and at most 1 MB, then stops with
//     LastEvaluatedKey: the key of the last item read, which may be the
//     last there is (DynamoDB says so: only an answer without
//     LastEvaluatedKey ends the results);
//   - the filter applies to the items read (ScannedCount counts those,
//     Count the ones that passed), and the capacity is counted on the
//     items read, before the filter and the projection.

// maxPage is how much a Query or Scan reads before it stops, 1 MB.
const maxPage = 1 << 20

// searchRequest is the parameters of a Query or a Scan.
type searchRequest struct {
	TableName                 string
	IndexName                 string
	KeyConditionExpression    *string
	FilterExpression          *string
	ProjectionExpression      *string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues item
	ConsistentRead            bool
	ReturnConsumedCapacity    string
	Select                    string
	Limit                     *int
	ExclusiveStartKey         item
	ScanIndexForward          *bool
	Segment                   *int
	TotalSegments             *int
	KeyConditions             json.RawMessage
	QueryFilter               json.RawMessage
	ScanFilter                json.RawMessage
	AttributesToGet           json.RawMessage
	ConditionalOperator       json.RawMessage
}

// search is a checked Query or Scan.
type search struct {
	query      bool
	table      string
	meta       *tableMeta
	ix         *indexMeta // nil: the table itself
	hash, rng  string     // the key attributes of what is read
	key        *keyCond   // a Query's key condition
	filter     *cond
	projection []docPath
	sel        string
	limit      int
	start      attrs // ExclusiveStartKey
	forward    bool
	segment    int
	segments   int // 0: no parallel scan
}

// keyCond is a Query's key condition: the partition key's value, and
// what the sort key must satisfy (op "" for anything).
type keyCond struct {
	hash *value
	op   string // = < <= > >= BETWEEN begins_with
	args []*value
}

// prepareSearch checks a Query or Scan as DynamoDB does.
func (s *Server) prepareSearch(query bool, in *searchRequest) (*search, error) {
	for _, p := range []struct {
		name string
		raw  json.RawMessage
	}{{"KeyConditions", in.KeyConditions}, {"QueryFilter", in.QueryFilter}, {"ScanFilter", in.ScanFilter},
		{"AttributesToGet", in.AttributesToGet}, {"ConditionalOperator", in.ConditionalOperator}} {
		if len(p.raw) > 0 && string(p.raw) != "null" {
			return nil, invalidf("idemtest: the legacy parameter %s is not supported; use expressions", p.name)
		}
	}
	meta, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	q := &search{query: query, table: in.TableName, meta: meta, hash: meta.hash, rng: meta.rng, sel: in.Select, forward: true}
	if in.IndexName != "" {
		for _, m := range meta.indexes {
			if m.name == in.IndexName {
				q.ix = m
			}
		}
		if q.ix == nil {
			return nil, invalidf("The table does not have the specified index: %s", in.IndexName)
		}
		if q.ix.global && in.ConsistentRead {
			return nil, invalidf("Consistent reads are not supported on global secondary indexes")
		}
		q.hash, q.rng = q.ix.hash, q.ix.rng
	}
	if in.Limit != nil {
		if *in.Limit < 1 {
			return nil, invalidf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
		}
		q.limit = *in.Limit
	}
	if err := q.checkSelect(in.ProjectionExpression != nil); err != nil {
		return nil, err
	}
	if !query {
		if err := q.checkSegments(in.Segment, in.TotalSegments); err != nil {
			return nil, err
		}
	} else if in.ScanIndexForward != nil {
		q.forward = *in.ScanIndexForward
	}

	e, err := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	if query && in.KeyConditionExpression == nil {
		return nil, invalidf("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	if in.KeyConditionExpression != nil {
		if !query {
			return nil, invalidf("Unexpected parameter KeyConditionExpression")
		}
		c, err := e.condition("KeyConditionExpression", *in.KeyConditionExpression)
		if err != nil {
			return nil, err
		}
		if q.key, err = keyCondition(c, q.hash, q.rng, meta.types); err != nil {
			return nil, err
		}
	}
	if in.FilterExpression != nil {
		if q.filter, err = e.condition("FilterExpression", *in.FilterExpression); err != nil {
			return nil, err
		}
		if query {
			for _, n := range q.filter.names() {
				if n == q.hash || n == q.rng {
					return nil, invalidf("Filter Expression can only contain non-primary key attributes: Primary key attribute: %s", n)
				}
			}
		}
	}
	if in.ProjectionExpression != nil {
		if q.projection, err = e.projection(*in.ProjectionExpression); err != nil {
			return nil, err
		}
	}
	if err := e.unused(); err != nil {
		return nil, err
	}
	if in.ExclusiveStartKey != nil {
		if q.start, err = q.checkStart(in.ExclusiveStartKey); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// checkSelect checks Select against the projection and the index.
func (q *search) checkSelect(projected bool) error {
	switch q.sel {
	case "":
		return nil
	case "SPECIFIC_ATTRIBUTES":
		if !projected {
			return invalidf("1 validation error detected: Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES")
		}
		return nil
	case "ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES", "COUNT":
	default:
		return invalidf("1 validation error detected: Value '%s' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]", q.sel)
	}
	if projected {
		what := q.sel
		if what == "COUNT" {
			what = "only the Count"
		}
		return invalidf("1 validation error detected: Cannot specify the ProjectionExpression when choosing to get %s", what)
	}
	switch {
	case q.sel == "ALL_PROJECTED_ATTRIBUTES" && q.ix == nil:
		return invalidf("1 validation error detected: ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName")
	case q.sel == "ALL_ATTRIBUTES" && q.ix != nil && q.ix.global && q.ix.projection != "ALL":
		return invalidf("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", q.ix.name)
	}
	return nil
}

// checkSegments checks a parallel scan's Segment and TotalSegments.
func (q *search) checkSegments(segment, total *int) error {
	switch {
	case segment == nil && total == nil:
		return nil
	case total == nil:
		return invalidf("The TotalSegments parameter is required but was not present in the request when Segment parameter is present")
	case segment == nil:
		return invalidf("The Segment parameter is required but was not present in the request when parameter TotalSegments is present")
	case *total < 1:
		return invalidf("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1", *total)
	case *total > 1000000:
		return invalidf("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000", *total)
	case *segment < 0:
		return invalidf("1 validation error detected: Value '%d' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0", *segment)
	case *segment >= *total:
		return invalidf("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", *segment, *total)
	}
	q.segment, q.segments = *segment, *total
	return nil
}

// checkStart checks an ExclusiveStartKey: the table's key, and the
// index's key for an index, each of its type; for a Query, in the
// partition it reads.
func (q *search) checkStart(raw item) (attrs, error) {
	start, err := decodeAttrs(raw)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range append(q.meta.keyNames(), q.hash, q.rng) {
		if n != "" {
			want[n] = true
		}
	}
	if len(start) != len(want) {
		return nil, invalidf("The provided starting key is invalid: Exclusive Start Key must have same size as table's key schema")
	}
	for n := range want {
		if v := start[n]; v == nil || v.t != q.meta.types[n] {
			return nil, invalidf("The provided starting key is invalid: The provided key element does not match the schema")
		}
	}
	if q.key != nil && keyText(start[q.hash]) != keyText(q.key.hash) {
		return nil, invalidf("The provided starting key is invalid: its partition key is not the one the key condition names")
	}
	return start, nil
}

// keyCondition reads a Query's key condition: the partition key equal
// to a value, and at most one condition on the sort key.
func keyCondition(c *cond, hash, rng string, types map[string]string) (*keyCond, error) {
	var leaves []*cond
	var walk func(c *cond) error
	walk = func(c *cond) error {
		switch c.op {
		case "AND":
			for _, sub := range c.subs {
				if err := walk(sub); err != nil {
					return err
				}
			}
			return nil
		case "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with":
			leaves = append(leaves, c)
			return nil
		}
		return invalidf("Invalid operator used in KeyConditionExpression: %s", c.op)
	}
	if err := walk(c); err != nil {
		return nil, err
	}
	if len(leaves) > 2 {
		return nil, invalidf("Conditions can be of length 1 or 2 only")
	}
	k := &keyCond{}
	seen := map[string]bool{}
	for _, l := range leaves {
		name, op, vals, err := keyLeaf(l)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, invalidf("Invalid KeyConditionExpression: KeyConditionExpressions must only contain one condition per key")
		}
		seen[name] = true
		for _, v := range vals {
			if t := types[name]; t != "" && v.t != t {
				return nil, invalidf("One or more parameter values were invalid: Condition parameter type does not match schema type")
			}
		}
		switch {
		case name == hash:
			if op != "=" {
				return nil, invalidf("Query key condition not supported")
			}
			k.hash = vals[0]
		case name == rng && rng != "":
			k.op, k.args = op, vals
		case rng != "":
			return nil, invalidf("Query condition missed key schema element: %s", rng)
		default:
			return nil, invalidf("Query key condition not supported")
		}
	}
	if k.hash == nil {
		return nil, invalidf("Query condition missed key schema element: %s", hash)
	}
	return k, nil
}

// keyLeaf reads one comparison of a key condition: a top-level key
// attribute and the values it is compared with (a value on the left of
// a comparison is turned around).
func keyLeaf(c *cond) (name, op string, vals []*value, err error) {
	op = c.op
	args := c.args
	if len(args) == 2 && args[0].value != nil && args[1].value == nil && op != "begins_with" {
		args = []*operand{args[1], args[0]}
		op = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
	}
	attr := args[0]
	if attr.fn != "" {
		return "", "", nil, invalidf("Invalid operator used in KeyConditionExpression: %s", attr.fn)
	}
	if attr.path == nil || len(attr.path) != 1 || attr.path[0].name == "" {
		return "", "", nil, invalidf("Query key condition not supported")
	}
	for _, a := range args[1:] {
		if a.value == nil {
			return "", "", nil, invalidf("Query key condition not supported")
		}
		vals = append(vals, a.value)
	}
	return attr.path[0].name, op, vals, nil
}

// names lists the top-level attributes a condition reads.
func (c *cond) names() []string {
	var out []string
	var operands func(os []*operand)
	operands = func(os []*operand) {
		for _, o := range os {
			if len(o.path) > 0 {
				out = append(out, o.path[0].name)
			}
			operands(o.args)
		}
	}
	var walk func(c *cond)
	walk = func(c *cond) {
		operands(c.args)
		for _, sub := range c.subs {
			walk(sub)
		}
	}
	walk(c)
	return out
}

// matches reports whether a sort key value meets the key condition.
func (k *keyCond) matches(r *row) bool {
	if k.op == "" {
		return true
	}
	cmp := func(v *value) int { return compareKeys(r.rk, r.rkd, v, nil) }
	switch k.op {
	case "=":
		return cmp(k.args[0]) == 0
	case "<":
		return cmp(k.args[0]) < 0
	case "<=":
		return cmp(k.args[0]) <= 0
	case ">":
		return cmp(k.args[0]) > 0
	case ">=":
		return cmp(k.args[0]) >= 0
	case "BETWEEN":
		return cmp(k.args[0]) >= 0 && cmp(k.args[1]) <= 0
	case "begins_with":
		p := k.args[0]
		return r.rk.t == p.t && strings.HasPrefix(r.rk.s, p.s)
	}
	return false
}

// page is what a Query or Scan read: the rows, how many it read, how
// many bytes, and where it stopped.
type page struct {
	rows    []*row
	scanned int
	size    int
	last    *row // the last row read, when the page stopped early
}

// read collects the rows of a page from the sequence of candidate rows
// next returns (nil: no more).
func (q *search) read(next func() *row, keep func(*row) bool) *page {
	p := &page{}
	var last *row
	for {
		if q.limit > 0 && p.scanned == q.limit || p.size >= maxPage {
			if r := next(); r != nil || q.limit > 0 && p.scanned == q.limit {
				p.last = last
			}
			return p
		}
		r := next()
		if r == nil {
			return p
		}
		last = r
		p.scanned++
		p.size += r.item.size()
		if keep(r) {
			p.rows = append(p.rows, r)
		}
	}
}

// queryRows is the sequence of rows a Query reads, in order, from the
// start key on.
func (q *search) queryRows(ks *keyspace) func() *row {
	part := ks.parts[keyText(q.key.hash)]
	if part == nil {
		return func() *row { return nil }
	}
	rows := part.rows
	var probe *row
	if q.start != nil {
		probe = newRow(nil, q.meta.primaryKey(q.start), q.start[q.rng])
	}
	if q.forward {
		i := 0
		if probe != nil {
			i = sort.Search(len(rows), func(i int) bool { return compareRows(rows[i], probe) > 0 })
		}
		return func() *row {
			for ; i < len(rows); i++ {
				if q.key.matches(rows[i]) {
					i++
					return rows[i-1]
				}
			}
			return nil
		}
	}
	i := len(rows) - 1
	if probe != nil {
		i = sort.Search(len(rows), func(i int) bool { return compareRows(rows[i], probe) >= 0 }) - 1
	}
	return func() *row {
		for ; i >= 0; i-- {
			if q.key.matches(rows[i]) {
				i--
				return rows[i+1]
			}
		}
		return nil
	}
}

// segmentOf is the segment of a parallel scan of total segments that
// reads the partition: its share of the hash order.
func segmentOf(h uint64, total int) int {
	hi, _ := bits.Mul64(h, uint64(total))
	return int(hi)
}

// scanRows is the sequence of rows a Scan reads, in order, from the
// start key on.
func (q *search) scanRows(ks *keyspace) func() *row {
	parts := ks.order
	pi, ri := 0, 0
	if q.start != nil {
		key := keyText(q.start[q.hash])
		h := hashKey(key)
		pi = sort.Search(len(parts), func(i int) bool { return !partitionBefore(parts[i].h, parts[i].key, &partition{h: h, key: key}) })
		if pi < len(parts) && parts[pi].key == key {
			probe := newRow(nil, q.meta.primaryKey(q.start), q.start[q.rng])
			rows := parts[pi].rows
			ri = sort.Search(len(rows), func(i int) bool { return compareRows(rows[i], probe) > 0 })
		}
	}
	return func() *row {
		for ; pi < len(parts); pi, ri = pi+1, 0 {
			p := parts[pi]
			if q.segments > 0 && segmentOf(p.h, q.segments) != q.segment {
				continue
			}
			if ri < len(p.rows) {
				ri++
				return p.rows[ri-1]
			}
		}
		return nil
	}
}

// lastKey is the LastEvaluatedKey of a page that stopped at r: the
// table's key and the index's.
func (q *search) lastKey(r *row) attrs {
	out := attrs{}
	for _, n := range append(q.meta.keyNames(), q.hash, q.rng) {
		if v := r.item[n]; n != "" && v != nil {
			out[n] = v
		}
	}
	return out
}

// serveSearch serves Query and Scan.
func (s *Server) serveSearch(c *call) answer {
	var in searchRequest
	if err := json.Unmarshal(c.body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	q, err := s.prepareSearch(c.op == OpQuery, &in)
	if err != nil {
		return errorAnswer(err)
	}
	if a := s.strongRead(q.table, in.ConsistentRead); a != nil {
		return *a
	}
	s.pause(c)

	s.schema.RLock()
	d := s.data[q.table]
	if d == nil {
		s.schema.RUnlock()
		return errorAnswer(&apiError{code: "ResourceNotFoundException", msg: "Requested resource not found"})
	}
	ks := d.main
	if q.ix != nil {
		ks = d.indexes[q.ix.name]
		if ks == nil {
			s.schema.RUnlock()
			return errorAnswer(invalidf("The table does not have the specified index: %s", q.ix.name))
		}
	}
	// An index's entry holds what it projects; a local index reads the
	// rest from the table, as DynamoDB fetches it.
	full := func(r *row) attrs {
		if q.ix != nil && !q.ix.global {
			if t := d.items[r.pk]; t != nil {
				return t.item
			}
		}
		return r.item
	}
	keep := func(r *row) bool { return q.filter == nil || q.filter.eval(full(r)) }
	next := q.scanRows(ks)
	if q.query {
		next = q.queryRows(ks)
	}
	p := q.read(next, keep)
	var items []item
	if q.sel != "COUNT" {
		items = make([]item, 0, len(p.rows))
		for _, r := range p.rows {
			it := r.item
			switch {
			case q.projection != nil:
				it = project(full(r), q.projection)
			case q.sel == "ALL_ATTRIBUTES":
				it = full(r)
			}
			items = append(items, it.raw())
		}
	}
	s.schema.RUnlock()

	out := map[string]any{"Count": len(p.rows), "ScannedCount": p.scanned}
	if items != nil {
		out["Items"] = items
	}
	if p.last != nil {
		out["LastEvaluatedKey"] = q.lastKey(p.last).raw()
	}
	use := newConsumption(in.ReturnConsumedCapacity)
	units := readUnits(p.size, readFactor(in.ConsistentRead))
	if q.ix != nil {
		use.addIndex(q.table, q.ix, units, 0)
	} else {
		use.add(q.table, units, 0)
	}
	s.record(c.op, use)
	if cc := use.single(); cc != nil {
		out["ConsumedCapacity"] = cc
	}
	return answerJSON(out)
}
