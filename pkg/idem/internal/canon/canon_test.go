package canon_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem/internal/canon"
)

// body6MB is a 6 MB JSON request body of many small objects, the shape
// that made the decoding canonicalizer allocate many times its size.
func body6MB() []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < 6<<20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"item-%d","qty":%d,"price":{"currency":"EUR","amount":"%d.99"},"tags":["a","b"],"gift":false}`, i, i%7, i)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// BenchmarkJSON6MB measures the memory a 6 MB body costs to
// fingerprint: a Lambda function has 256 MB.
func BenchmarkJSON6MB(b *testing.B) {
	body := body6MB()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canon.JSON(body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCanonicalJSONIsStrict: bodies that are different JSON texts, and
// that encoding/json reads as the same value, must not canonicalize to
// the same bytes. Each is refused (a caller then hashes the raw bytes).
func TestCanonicalJSONIsStrict(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"duplicate member":         `{"a":1,"a":2}`,
		"duplicate escaped member": `{"a":1,"\u0061":2}`,
		"trailing bracket":         `{"a":1}]`,
		"trailing brace":           `{"a":1}}`,
		"trailing value":           `{"a":1} {}`,
		"invalid UTF-8":            "\"\xff\"",
		"invalid UTF-8 in a key":   "{\"\xfe\":1}",
		"lone high surrogate":      `"\ud800"`,
		"lone low surrogate":       `"\udc00x"`,
		"control character":        "\"a\x01\"",
		"leading zero":             `01`,
		"empty":                    ``,
	} {
		if canon, err := canon.JSON([]byte(body)); err == nil {
			t.Errorf("%s: %q canonicalized to %q; want an error", name, body, canon)
		}
	}
}

// FuzzFingerprint: two documents that are different JSON values never
// share a fingerprint, and the same value in other spacing and member
// order always does. It also holds the canonical form to what the
// decoding implementation wrote, so fingerprints stored before stay valid.
func FuzzFingerprint(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"a":1}]`, `{"a":1}`},
		{"\"\xff\"", `"\ufffd"`},
		{`"\ud800"`, `"\ufffd"`},
		{`{"b":[1,{"y":null,"x":true}],"a":"\u00e9\n\u2028<"}`, ` {"a" : "é\n\u2028\u003c", "b":[1, {"x":true,"y":null}]}`},
		{`1.0`, `1`},
		{`{"\u0061":1}`, `{"a":1}`},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		fa, errA := canon.Fingerprint(a)
		fb, errB := canon.Fingerprint(b)
		for _, in := range []struct {
			doc []byte
			err error
		}{{a, errA}, {b, errB}} {
			if in.err != nil {
				continue
			}
			va, ok := decode(in.doc)
			if !ok {
				t.Fatalf("%q: fingerprinted, but encoding/json refuses it", in.doc)
			}
			form, _ := canon.JSON(in.doc)
			if legacy := legacyCanonical(t, in.doc); !bytes.Equal(form, legacy) {
				t.Fatalf("%q: canonical %q, the decoding implementation wrote %q", in.doc, form, legacy)
			}
			// The same value, reordered and respaced.
			other := []byte(respace(va))
			if fo, err := canon.Fingerprint(other); err != nil || fo != fingerprintOf(t, in.doc) {
				t.Fatalf("%q and %q are the same value: fingerprints differ (%v)", in.doc, other, err)
			}
		}
		if errA != nil || errB != nil || fa != fb {
			return
		}
		va, _ := decode(a)
		vb, _ := decode(b)
		if !reflect.DeepEqual(va, vb) {
			t.Fatalf("%q and %q are different values with one fingerprint", a, b)
		}
	})
}

func fingerprintOf(t *testing.T, doc []byte) string {
	fp, err := canon.Fingerprint(doc)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// decode reads a document the way encoding/json does, numbers as their
// text. It is faithful only for documents JSON accepts (it folds
// duplicates and invalid UTF-8), which is all it is asked to read.
func decode(doc []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// legacyCanonical is the canonicalizer JSON replaced: decode into
// any, encode with sorted map keys and no HTML escaping.
func legacyCanonical(t *testing.T, doc []byte) []byte {
	v, ok := decode(doc)
	if !ok {
		t.Fatalf("%q: encoding/json refuses it", doc)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// respace writes v with members in reverse order, whitespace everywhere
// and strings escaped as encoding/json escapes them (HTML included).
func respace(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range v {
				if !yield(k) {
					return
				}
			}
		})
		slices.Reverse(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			kb, _ := json.Marshal(k)
			parts[i] = "\n\t" + string(kb) + " :\r" + respace(v[k])
		}
		return "{ " + strings.Join(parts, " ,") + " }"
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = respace(e)
		}
		return "[ " + strings.Join(parts, " , ") + "\n]"
	default:
		b, _ := json.Marshal(v)
		return " " + string(b) + " "
	}
}
