package idemtest

import (
	"maps"
	"sort"
)

// Capacity as DynamoDB counts it for on-demand tables (Developer Guide,
// "DynamoDB read consistency" and "Capacity unit consumption for read and
// write operations", read-write-operations.html; "Amazon DynamoDB
// Transactions: How it works", Capacity management for transactions):
//
//   - a write consumes one write unit per KB of the item, rounded up per
//     item: the larger of the item before and after for a put or update,
//     the deleted item for a delete, at least 1; a write whose condition
//     fails still consumes them (the item it met, at least 1);
//   - a read consumes one read unit per 4 KB strongly consistent, half
//     that eventually consistent, twice that in a transaction; a Query or
//     Scan adds up the sizes of the items it read, then rounds up once; a
//     read of no item still consumes the minimum;
//   - a transaction doubles every item's units (ConditionCheck included);
//   - a write to a table also writes its secondary indexes that project
//     the item: a write unit per KB of each index entry written or
//     deleted (an entry whose index key changed is both).
//
// The store answers ConsumedCapacity at the level ReturnConsumedCapacity
// asks (TOTAL, INDEXES; NONE by default) and keeps a running total for
// Consumed.

// Units are capacity units consumed.
type Units struct {
	Read, Write float64
	// Requests is how many requests consumed them.
	Requests int
}

// Plus is u and v together.
func (u Units) Plus(v Units) Units {
	return Units{Read: u.Read + v.Read, Write: u.Write + v.Write, Requests: u.Requests + v.Requests}
}

// Capacity is the units the store consumed, per table and operation
// (indexes' units included in their table's). A request on several
// tables (a transaction, a batch) counts under each.
type Capacity map[string]map[Op]Units

// Total is every table's units together (Requests counts a request once
// per table it touched).
func (c Capacity) Total() Units {
	var t Units
	for _, ops := range c {
		for _, u := range ops {
			t = t.Plus(u)
		}
	}
	return t
}

// Table is one table's units, all operations together.
func (c Capacity) Table(name string) Units {
	var t Units
	for _, u := range c[name] {
		t = t.Plus(u)
	}
	return t
}

// Op is one operation's units, all tables together.
func (c Capacity) Op(op Op) Units {
	var t Units
	for _, ops := range c {
		t = t.Plus(ops[op])
	}
	return t
}

// Consumed returns the capacity units the store consumed since it
// started (or since ResetConsumed), whatever each request's
// ReturnConsumedCapacity asked.
func (s *Server) Consumed() Capacity {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(Capacity, len(s.consumed))
	for t, ops := range s.consumed {
		out[t] = maps.Clone(ops)
	}
	return out
}

// ResetConsumed sets the running totals back to zero.
func (s *Server) ResetConsumed() {
	s.mu.Lock()
	s.consumed = Capacity{}
	s.mu.Unlock()
}

// writeUnits is the write units of an item of size bytes.
func writeUnits(size int) float64 {
	return float64(max(1, (size+1023)/1024))
}

// readUnits is the read units of reading size bytes: 4 KB a unit, at
// least one, times factor (0.5 eventually consistent, 1 strongly, 2 in a
// transaction).
func readUnits(size int, factor float64) float64 {
	return float64(max(1, (size+4095)/4096)) * factor
}

func readFactor(consistent bool) float64 {
	if consistent {
		return 1
	}
	return 0.5
}

// usage is one request's units on one table.
type usage struct {
	read, write float64
	indexes     map[string]*indexUsage
}

type indexUsage struct {
	global      bool
	read, write float64
}

// consumption is one request's units, table by table.
type consumption struct {
	level  string // ReturnConsumedCapacity
	tables map[string]*usage
	order  []string
}

func newConsumption(level string) *consumption {
	return &consumption{level: level, tables: map[string]*usage{}}
}

func (c *consumption) table(name string) *usage {
	u := c.tables[name]
	if u == nil {
		u = &usage{indexes: map[string]*indexUsage{}}
		c.tables[name] = u
		c.order = append(c.order, name)
	}
	return u
}

func (c *consumption) add(table string, read, write float64) {
	u := c.table(table)
	u.read += read
	u.write += write
}

func (c *consumption) addIndex(table string, ix *indexMeta, read, write float64) {
	u := c.table(table)
	iu := u.indexes[ix.name]
	if iu == nil {
		iu = &indexUsage{global: ix.global}
		u.indexes[ix.name] = iu
	}
	iu.read += read
	iu.write += write
}

// indexWrites adds the units a write from old to next (nil: absent)
// costs the table's indexes.
func (c *consumption) indexWrites(name string, t *tableMeta, old, next attrs) {
	for _, ix := range t.indexes {
		a, b := t.indexEntry(ix, old), t.indexEntry(ix, next)
		var w float64
		switch {
		case a == nil && b == nil:
			continue
		case a == nil:
			w = writeUnits(b.size())
		case b == nil:
			w = writeUnits(a.size())
		case !equal(a[ix.hash], b[ix.hash]) || ix.rng != "" && !equal(a[ix.rng], b[ix.rng]):
			w = writeUnits(a.size()) + writeUnits(b.size())
		case sameAttrs(a, b):
			continue
		default:
			w = writeUnits(max(a.size(), b.size()))
		}
		c.addIndex(name, ix, 0, w)
	}
}

func sameAttrs(a, b attrs) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !equal(v, b[k]) {
			return false
		}
	}
	return true
}

// record adds a request's units to the store's running totals.
func (s *Server) record(op Op, c *consumption) {
	if c == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, u := range c.tables {
		ops := s.consumed[name]
		if ops == nil {
			ops = map[Op]Units{}
			s.consumed[name] = ops
		}
		t := Units{Read: u.read, Write: u.write, Requests: 1}
		for _, iu := range u.indexes {
			t.Read += iu.read
			t.Write += iu.write
		}
		ops[op] = ops[op].Plus(t)
	}
}

// capacityJSON is one table's ConsumedCapacity, as the level asks.
func (c *consumption) capacityJSON(name string) map[string]any {
	u := c.tables[name]
	total := Units{Read: u.read, Write: u.write}
	for _, iu := range u.indexes {
		total.Read += iu.read
		total.Write += iu.write
	}
	out := map[string]any{"TableName": name}
	units(out, total.Read, total.Write)
	if c.level == "INDEXES" {
		table := map[string]any{}
		units(table, u.read, u.write)
		out["Table"] = table
		gsi, lsi := map[string]any{}, map[string]any{}
		for n, iu := range u.indexes {
			m := map[string]any{}
			units(m, iu.read, iu.write)
			if iu.global {
				gsi[n] = m
			} else {
				lsi[n] = m
			}
		}
		if len(gsi) > 0 {
			out["GlobalSecondaryIndexes"] = gsi
		}
		if len(lsi) > 0 {
			out["LocalSecondaryIndexes"] = lsi
		}
	}
	return out
}

func units(m map[string]any, read, write float64) {
	m["CapacityUnits"] = read + write
	if read > 0 {
		m["ReadCapacityUnits"] = read
	}
	if write > 0 {
		m["WriteCapacityUnits"] = write
	}
}

// single is the ConsumedCapacity of a single-table request, or nil.
func (c *consumption) single() any {
	if c == nil || (c.level != "TOTAL" && c.level != "INDEXES") || len(c.order) == 0 {
		return nil
	}
	return c.capacityJSON(c.order[0])
}

// list is the ConsumedCapacity of a transaction or batch: one entry per
// table, or nil.
func (c *consumption) list() any {
	if c == nil || (c.level != "TOTAL" && c.level != "INDEXES") || len(c.order) == 0 {
		return nil
	}
	names := append([]string(nil), c.order...)
	sort.Strings(names)
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = c.capacityJSON(n)
	}
	return out
}
