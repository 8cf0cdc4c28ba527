package idemtest

import (
	"net/http"
)

// tableMeta is what the store keeps of a table's definition: its key, its
// attribute types and its secondary indexes, to check keys and count
// capacity as DynamoDB does.
type tableMeta struct {
	hash, rng string
	types     map[string]string // attribute name -> S, N or B
	indexes   []*indexMeta
	// gt is the global table this table is a replica of (nil: a regional
	// table).
	gt *gtable
}

type indexMeta struct {
	name       string
	global     bool
	hash, rng  string
	projection string // ALL, KEYS_ONLY, INCLUDE
	include    []string
}

type keySchema []struct{ AttributeName, KeyType string }

func (k keySchema) split() (hash, rng string) {
	for _, e := range k {
		switch e.KeyType {
		case "HASH":
			hash = e.AttributeName
		case "RANGE":
			rng = e.AttributeName
		}
	}
	return hash, rng
}

type indexDef struct {
	IndexName  string
	KeySchema  keySchema
	Projection struct {
		ProjectionType   string
		NonKeyAttributes []string
	}
}

func (d indexDef) meta(global bool) *indexMeta {
	h, r := d.KeySchema.split()
	p := d.Projection.ProjectionType
	if p == "" {
		p = "ALL"
	}
	return &indexMeta{name: d.IndexName, global: global, hash: h, rng: r, projection: p, include: d.Projection.NonKeyAttributes}
}

// keyNames lists the table's key attributes.
func (t *tableMeta) keyNames() []string {
	if t.rng == "" {
		return []string{t.hash}
	}
	return []string{t.hash, t.rng}
}

// table returns a table's definition, or the answer DynamoDB gives for a
// table that does not exist.
func (s *Server) table(name string) (*tableMeta, error) {
	s.mu.Lock()
	t := s.tables[name]
	s.mu.Unlock()
	if t == nil {
		return nil, &apiError{code: "ResourceNotFoundException", msg: "Requested resource not found"}
	}
	return t, nil
}

// apiError is an error answer of a given type.
type apiError struct{ code, msg string }

func (e *apiError) Error() string { return e.msg }

// errorAnswer turns an error into DynamoDB's answer: ValidationException
// for a refused request.
func errorAnswer(err error) answer {
	switch e := err.(type) {
	case *apiError:
		return answerError(http.StatusBadRequest, e.code, e.msg)
	case *invalid:
		return answerError(http.StatusBadRequest, "ValidationException", e.msg)
	}
	return answerError(http.StatusInternalServerError, "InternalServerError", err.Error())
}

// checkKey checks a Key parameter: exactly the table's key attributes,
// of their types, neither empty nor too large.
func (t *tableMeta) checkKey(key attrs) error {
	if len(key) != len(t.keyNames()) {
		return invalidf("The provided key element does not match the schema")
	}
	for _, n := range t.keyNames() {
		v, ok := key[n]
		if !ok || v.t != t.types[n] {
			return invalidf("The provided key element does not match the schema")
		}
	}
	return t.checkKeyValues(key)
}

// checkItem checks an item's key attributes (PutItem's Item, an item an
// update makes) and its index keys.
func (t *tableMeta) checkItem(it attrs) error {
	for _, n := range t.keyNames() {
		v, ok := it[n]
		if !ok {
			return invalidf("One or more parameter values were invalid: Missing the key %s in the item", n)
		}
		if v.t != t.types[n] {
			return invalidf("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", n, t.types[n], v.t)
		}
	}
	if err := t.checkKeyValues(it); err != nil {
		return err
	}
	return t.checkIndexKeys(it)
}

// checkKeyValues refuses an empty key value and keys over DynamoDB's
// sizes ("Service, account, and table quotas": a partition key value up
// to 2048 bytes, a sort key value up to 1024).
func (t *tableMeta) checkKeyValues(it attrs) error {
	for _, n := range t.keyNames() {
		v := it[n]
		if (v.t == "S" || v.t == "B") && v.s == "" {
			return invalidf("One or more parameter values were invalid: An AttributeValue may not contain an empty string")
		}
	}
	if v := it[t.hash]; v.size() > 2048 {
		return invalidf("One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of 2048 bytes")
	}
	if t.rng != "" {
		if v := it[t.rng]; v.size() > 1024 {
			return invalidf("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes")
		}
	}
	return nil
}

// checkIndexKeys refuses an item whose secondary index key attributes
// have the wrong type or are empty.
func (t *tableMeta) checkIndexKeys(it attrs) error {
	for _, ix := range t.indexes {
		for _, n := range []string{ix.hash, ix.rng} {
			v := it[n]
			if n == "" || v == nil {
				continue
			}
			if want := t.types[n]; v.t != want {
				return invalidf("One or more parameter values were invalid: Type mismatch for Index Key %s Expected: %s Actual: %s IndexName: %s", n, want, v.t, ix.name)
			}
			if v.s == "" && (v.t == "S" || v.t == "B") {
				return invalidf("One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty string value. IndexName: %s, IndexKey: %s", ix.name, n)
			}
		}
	}
	return nil
}

// keyOfItem returns the key attributes of an item.
func (t *tableMeta) keyOfItem(it attrs) attrs {
	key := attrs{}
	for _, n := range t.keyNames() {
		if v, ok := it[n]; ok {
			key[n] = v
		}
	}
	return key
}

// indexEntry is the item's entry in an index (nil when the item has no
// value for the index's key), as the index's projection keeps it.
func (t *tableMeta) indexEntry(ix *indexMeta, it attrs) attrs {
	if it == nil || it[ix.hash] == nil || ix.rng != "" && it[ix.rng] == nil {
		return nil
	}
	if ix.projection == "ALL" {
		return it
	}
	keep := append(t.keyNames(), ix.hash)
	if ix.rng != "" {
		keep = append(keep, ix.rng)
	}
	if ix.projection == "INCLUDE" {
		keep = append(keep, ix.include...)
	}
	out := attrs{}
	for _, n := range keep {
		if v, ok := it[n]; ok {
			out[n] = v
		}
	}
	return out
}
