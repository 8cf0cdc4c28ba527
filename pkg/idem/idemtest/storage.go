package idemtest

import (
	"hash/fnv"
	"sort"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// The storage: every table's items, keyed by their primary key, and its
// secondary indexes, kept in DynamoDB's order so Query and Scan read
// them as DynamoDB does. The store's own code decides what to write
// (write.go); here a request's puts and deletes are applied, all at
// once, under s.schema held for writing, and readers (GetItem,
// TransactGetItems, Query, Scan) hold it for reading, so none sees part
// of a request's writes.
//
// Order ("Partitions and data distribution", "Working with queries"):
// within a partition, items are sorted by their sort key, numbers by
// value, strings by their UTF-8 bytes, binaries by their bytes. A Scan
// reads partitions in the order of a hash of their partition key, as
// DynamoDB does: not the order of the keys, nor the order of writes.

// tableData is one table: its definition, its items and its indexes.
type tableData struct {
	meta    *tableMeta
	desc    *tableDesc
	items   map[string]*row      // primary key -> the item's row in main
	main    *keyspace            // the table's items, by its key
	indexes map[string]*keyspace // index name -> its entries
	// A global table's replica also keeps each item's last write stamp,
	// deleted items' too (last writer wins), and its stream.
	stamps map[string]stamp
	stream []streamEntry // guarded by the Server's mu
}

// keyspace is items (or index entries) under one key schema: their
// partitions, each sorted by the sort key, and the partitions in scan
// order.
type keyspace struct {
	hash, rng string
	parts     map[string]*partition
	order     []*partition // by (h, key)
	count     int          // rows
	size      int          // bytes of the rows
}

// partition is the rows sharing one partition key value.
type partition struct {
	key  string // keyText of the partition key value
	h    uint64 // its hash: the scan order
	hv   *value // the partition key value
	rows []*row // by (sort key, table key)
}

// row is one item in a keyspace: the item itself (or its index entry),
// its table key, which identifies it and orders entries of an index
// that share a sort key, and its sort key, parsed once.
type row struct {
	item attrs
	pk   string // the table's primary key, as keyText
	rk   *value // the keyspace's sort key value; nil without one
	rkd  *apd.Decimal
}

func newTableData(meta *tableMeta, desc *tableDesc) *tableData {
	d := &tableData{meta: meta, desc: desc, items: map[string]*row{}, main: newKeyspace(meta.hash, meta.rng), indexes: map[string]*keyspace{},
		stamps: map[string]stamp{}}
	for _, ix := range meta.indexes {
		d.indexes[ix.name] = newKeyspace(ix.hash, ix.rng)
	}
	return d
}

func newKeyspace(hash, rng string) *keyspace {
	return &keyspace{hash: hash, rng: rng, parts: map[string]*partition{}}
}

// keyText is a key value as text that is equal for equal values: its
// type and, for a number, its canonical form.
func keyText(v *value) string {
	if v == nil {
		return ""
	}
	if v.t == "N" {
		if d, err := parseNumber(v.s); err == nil {
			return "N:" + canonicalNumber(d)
		}
	}
	return v.t + ":" + v.s
}

// primaryKey is the text of an item's (or key's) primary key.
func (t *tableMeta) primaryKey(it attrs) string {
	k := keyText(it[t.hash])
	if t.rng != "" {
		k += "\x00" + keyText(it[t.rng])
	}
	return k
}

// compareKeys orders two key values of one type as DynamoDB sorts them:
// numbers by value, strings and binaries byte by byte.
func compareKeys(a *value, ad *apd.Decimal, b *value, bd *apd.Decimal) int {
	switch {
	case a == nil || b == nil:
		return 0
	case a.t == "N" && b.t == "N":
		if ad == nil {
			ad, _ = parseNumber(a.s)
		}
		if bd == nil {
			bd, _ = parseNumber(b.s)
		}
		if ad != nil && bd != nil {
			return ad.Cmp(bd)
		}
	}
	return strings.Compare(a.s, b.s)
}

// compareRows orders rows within a partition.
func compareRows(a, b *row) int {
	if c := compareKeys(a.rk, a.rkd, b.rk, b.rkd); c != 0 {
		return c
	}
	return strings.Compare(a.pk, b.pk)
}

func newRow(item attrs, pk string, rk *value) *row {
	r := &row{item: item, pk: pk, rk: rk}
	if rk != nil && rk.t == "N" {
		r.rkd, _ = parseNumber(rk.s)
	}
	return r
}

// hashKey is a partition key's hash: FNV-1a, its bits mixed (MurmurHash3's
// finalizer) so that short keys spread over the whole range, as a
// parallel scan's segments need.
func hashKey(key string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(key))
	h := f.Sum64()
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// partitionBefore orders partitions as a Scan reads them.
func partitionBefore(h uint64, key string, p *partition) bool {
	return h < p.h || h == p.h && key < p.key
}

// insert adds a row under partition key value hv.
func (ks *keyspace) insert(hv *value, r *row) {
	key := keyText(hv)
	p := ks.parts[key]
	if p == nil {
		p = &partition{key: key, h: hashKey(key), hv: hv}
		ks.parts[key] = p
		i := sort.Search(len(ks.order), func(i int) bool { return partitionBefore(p.h, p.key, ks.order[i]) })
		ks.order = append(ks.order, nil)
		copy(ks.order[i+1:], ks.order[i:])
		ks.order[i] = p
	}
	i := sort.Search(len(p.rows), func(i int) bool { return compareRows(p.rows[i], r) >= 0 })
	p.rows = append(p.rows, nil)
	copy(p.rows[i+1:], p.rows[i:])
	p.rows[i] = r
	ks.count++
	ks.size += r.item.size()
}

// remove takes out the row r, under partition key value hv.
func (ks *keyspace) remove(hv *value, r *row) {
	key := keyText(hv)
	p := ks.parts[key]
	if p == nil {
		return
	}
	i := sort.Search(len(p.rows), func(i int) bool { return compareRows(p.rows[i], r) >= 0 })
	if i == len(p.rows) || p.rows[i].pk != r.pk {
		return
	}
	ks.size -= p.rows[i].item.size()
	ks.count--
	p.rows = append(p.rows[:i], p.rows[i+1:]...)
	if len(p.rows) > 0 {
		return
	}
	delete(ks.parts, key)
	j := sort.Search(len(ks.order), func(j int) bool { return !partitionBefore(ks.order[j].h, ks.order[j].key, p) })
	if j < len(ks.order) && ks.order[j] == p {
		ks.order = append(ks.order[:j], ks.order[j+1:]...)
	}
}

// get returns the item under a primary key, or nil.
func (d *tableData) get(key attrs) attrs {
	if r := d.items[d.meta.primaryKey(key)]; r != nil {
		return r.item
	}
	return nil
}

// put stores an item in place of the one under its key, its index
// entries with it.
func (d *tableData) put(it attrs) {
	pk := d.meta.primaryKey(it)
	d.delete(pk)
	r := newRow(it, pk, nil)
	if d.meta.rng != "" {
		r = newRow(it, pk, it[d.meta.rng])
	}
	d.items[pk] = r
	d.main.insert(it[d.meta.hash], r)
	for _, ix := range d.meta.indexes {
		if e := d.meta.indexEntry(ix, it); e != nil {
			var rk *value
			if ix.rng != "" {
				rk = e[ix.rng]
			}
			d.indexes[ix.name].insert(e[ix.hash], newRow(e, pk, rk))
		}
	}
}

// write stores next under primary key pk (next nil: deletes the item),
// and returns the item it replaced.
func (d *tableData) write(key attrs, pk string, next attrs) (old attrs) {
	old = d.get(key)
	switch {
	case next != nil:
		d.put(next)
	case old != nil:
		d.delete(pk)
	}
	return old
}

// delete removes the item under primary key pk, if any, and its index
// entries.
func (d *tableData) delete(pk string) {
	old := d.items[pk]
	if old == nil {
		return
	}
	delete(d.items, pk)
	d.main.remove(old.item[d.meta.hash], old)
	for _, ix := range d.meta.indexes {
		if e := d.meta.indexEntry(ix, old.item); e != nil {
			var rk *value
			if ix.rng != "" {
				rk = e[ix.rng]
			}
			d.indexes[ix.name].remove(e[ix.hash], newRow(e, pk, rk))
		}
	}
}

// reindex rebuilds the indexes after the definition changed (UpdateTable
// created or deleted one): a new index is filled from the items, as
// DynamoDB backfills it, but for an item whose index key attribute has
// another type than the index's (which DynamoDB leaves out of the index
// as a violation).
func (d *tableData) reindex(meta *tableMeta) {
	d.meta = meta
	d.indexes = map[string]*keyspace{}
	for _, ix := range meta.indexes {
		ks := newKeyspace(ix.hash, ix.rng)
		for pk, r := range d.items {
			if e := meta.indexEntry(ix, r.item); e != nil && meta.indexTyped(ix, e) {
				var rk *value
				if ix.rng != "" {
					rk = e[ix.rng]
				}
				ks.insert(e[ix.hash], newRow(e, pk, rk))
			}
		}
		d.indexes[ix.name] = ks
	}
}

// readItem reads an item's last committed value (nil when absent).
func (s *Server) readItem(table string, key attrs) attrs {
	s.schema.RLock()
	defer s.schema.RUnlock()
	return s.readLocked(table, key)
}

// readLocked reads an item; call it holding s.schema.
func (s *Server) readLocked(table string, key attrs) attrs {
	d := s.data[table]
	if d == nil {
		return nil
	}
	return d.get(key)
}

// indexTyped reports whether an index entry's key attributes have the
// index's types.
func (t *tableMeta) indexTyped(ix *indexMeta, e attrs) bool {
	for _, n := range []string{ix.hash, ix.rng} {
		if v := e[n]; n != "" && v != nil && v.t != t.types[n] {
			return false
		}
	}
	return true
}
