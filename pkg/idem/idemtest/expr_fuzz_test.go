package idemtest

import (
	"encoding/json"
	"testing"
)

// FuzzExpressions: no expression, however malformed, panics the store;
// one that parses evaluates and applies without panicking.
func FuzzExpressions(f *testing.F) {
	for _, s := range []string{
		"attribute_not_exists(id)", "n = :n AND (#a < :s OR NOT contains(l, :s))", "a.b[0].c BETWEEN :n AND :n",
		"size(l) IN (:n, :n)", "SET a = if_not_exists(a, :n) + :n, l = list_append(l, :l) REMOVE m.x ADD n :n DELETE ss :ss",
		"a, b.c, l[1]", "SET l[5] = :n", "REMOVE l[0], l[1]", "((((", "#a.#a[9999999999999999999]", ":n = :n",
	} {
		f.Add(s)
	}
	names := map[string]string{"#a": "a"}
	values := item{":n": json.RawMessage(`{"N":"1.5"}`), ":s": json.RawMessage(`{"S":"x"}`),
		":l": json.RawMessage(`{"L":[{"N":"1"}]}`), ":ss": json.RawMessage(`{"SS":["x"]}`)}
	it, err := decodeAttrs(item{
		"id": json.RawMessage(`{"S":"k"}`), "n": json.RawMessage(`{"N":"2"}`), "a": json.RawMessage(`{"M":{"b":{"L":[{"M":{"c":{"N":"1"}}}]}}}`),
		"l": json.RawMessage(`{"L":[{"S":"x"},{"N":"3"}]}`), "ss": json.RawMessage(`{"SS":["x","y"]}`), "m": json.RawMessage(`{"M":{"x":{"NULL":true}}}`),
	})
	if err != nil {
		f.Fatal(err)
	}
	key := attrs{"id": it["id"]}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := newExprs(names, values)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := e.condition("ConditionExpression", src); err == nil {
			c.eval(it)
			c.eval(nil)
		}
		if u, err := e.update(src, []string{"id"}); err == nil {
			if next, err := u.apply(it, key); err == nil {
				_ = next.size()
			}
			_, _ = u.apply(nil, key)
		}
		if paths, err := e.projection(src); err == nil {
			project(it, paths)
		}
	})
}
