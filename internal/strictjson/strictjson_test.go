package strictjson_test

import (
	"errors"
	"testing"

	"github.com/idemlambda/idemlambda/internal/strictjson"
)

func TestObjectRefusesWhatEncodingJSONLetsPass(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]error{
		`{"a":1,"b":"x"}`: nil,
		` {"a":{"a":1}} `: nil,
		`{"a":1,"a":2}`:   &strictjson.DuplicateError{},
		`{"a":1}{"b":2}`:  strictjson.ErrTrailing,
		`{"a":1}}`:        strictjson.ErrTrailing,
		`{"a":1} x`:       strictjson.ErrTrailing,
		`[1]`:             strictjson.ErrNotObject,
		`"a"`:             strictjson.ErrNotObject,
		`{"a":}`:          strictjson.ErrSyntax,
		``:                strictjson.ErrSyntax,
		`{"a":1`:          strictjson.ErrSyntax,
	} {
		_, err := strictjson.Object([]byte(in))
		var dup *strictjson.DuplicateError
		switch {
		case want == nil && err != nil:
			t.Errorf("Object(%s) = %v, want no error", in, err)
		case want == nil:
		case errors.As(want, &dup):
			if !errors.As(err, &dup) || dup.Name != "a" {
				t.Errorf("Object(%s) = %v, want the duplicate a", in, err)
			}
		case !errors.Is(err, want):
			t.Errorf("Object(%s) = %v, want %v", in, err, want)
		}
	}
}

func TestUnmarshal(t *testing.T) {
	t.Parallel()
	type doc struct {
		Cents int64  `json:"price_cents"`
		Name  string `json:"name"`
	}
	var d doc
	if err := strictjson.Unmarshal([]byte(`{"price_cents":5,"other":true}`), &d, "price_cents", "name"); err != nil || d.Cents != 5 {
		t.Fatalf("Unmarshal = %v, %+v", err, d)
	}
	var ce *strictjson.CaseError
	if err := strictjson.Unmarshal([]byte(`{"PRICE_CENTS":5}`), &d, "price_cents"); !errors.As(err, &ce) || ce.Want != "price_cents" {
		t.Errorf("a member in another case: %v", err)
	}
	for _, in := range []string{`{"price_cents":5.0}`, `{"price_cents":"5"}`} {
		if err := strictjson.Unmarshal([]byte(in), &d, "price_cents"); err == nil {
			t.Errorf("Unmarshal(%s) accepted a wrong type", in)
		}
	}
	if err := strictjson.UnmarshalAll([]byte(`{"price_cents":5}`), &d, "price_cents", "name"); !errors.Is(err, strictjson.ErrMissing) {
		t.Errorf("UnmarshalAll without name = %v, want ErrMissing", err)
	}
	if err := strictjson.UnmarshalAll([]byte(`{"price_cents":5,"name":"n"}`), &d, "price_cents", "name"); err != nil {
		t.Errorf("UnmarshalAll = %v", err)
	}
}

func FuzzObject(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[1,2],"c":{"d":null}}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := strictjson.Object(b)
		if err == nil && m == nil {
			t.Fatal("no error and no members")
		}
	})
}
