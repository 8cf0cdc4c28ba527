package idemhttp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		`abc`:                                "abc",
		`"abc"`:                              "abc",
		`  "abc"  `:                          "abc",
		`"a\"b"`:                             `a"b`,
		`"a\\b"`:                             `a\b`,
		`"abc";p=1`:                          "abc",
		`"abc"; p=1;q`:                       "abc",
		`550e8400-e29b-41d4`:                 "550e8400-e29b-41d4",
		`"` + strings.Repeat("k", 255) + `"`: strings.Repeat("k", 255),
	}
	for in, want := range good {
		got, err := idemhttp.ParseKey(in)
		if err != nil || got != want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{``, `  `, `""`, `"a b"`, `"abc`, `"abc"x`, `"abc";P=1`, `"abc";`, `"abc",`, `a,b`, `a"b`, `"a\nb"`, `"a\x"`, "\"caf\u00e9\"", `"` + strings.Repeat("k", 256) + `"`, "a\tb", "\"abc\";p=\x01"} {
		_, err := idemhttp.ParseKey(in)
		if !errors.Is(err, idem.ErrInvalidKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrInvalidKey", in, err)
		}
	}
}

// FuzzParseKey: any header value parses to a valid key or fails with
// idem.ErrInvalidKey (a 400), never anything else; a quoted key parses
// back from its own serialisation.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{`abc`, `"abc"`, `"a\"b"`, `"`, `\`, `"a\`, "\x00", `"abc";x`, `"abc";a=1;b`, `a;b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := idemhttp.ParseKey(v)
		if err != nil {
			if !errors.Is(err, idem.ErrInvalidKey) {
				t.Fatalf("error %v does not wrap ErrInvalidKey", err)
			}
			return
		}
		if _, verr := idem.NewScope("op", "p", key); verr != nil {
			t.Fatalf("accepted invalid key %q: %v", key, verr)
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if back, err := idemhttp.ParseKey(quoted); err != nil || back != key {
			t.Fatalf("round trip of %q through %q: %q, %v", key, quoted, back, err)
		}
	})
}
