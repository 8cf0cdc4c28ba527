package api

import (
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

func TestParseIdempotencyKey(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		`abc`:                                "abc",
		`"abc"`:                              "abc",
		`  "abc"  `:                          "abc",
		`"a\"b"`:                             `a"b`,
		`"a\\b"`:                             `a\b`,
		`550e8400-e29b-41d4`:                 "550e8400-e29b-41d4",
		`"` + strings.Repeat("k", 255) + `"`: strings.Repeat("k", 255),
	}
	for in, want := range good {
		got, err := ParseIdempotencyKey(in)
		if err != nil || got != want {
			t.Errorf("ParseIdempotencyKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{``, `  `, `""`, `"a b"`, `"abc`, `"abc"x`, `"abc";P=1`, `"abc";`, `"abc",`, `a,b`, `a"b`, `"a\nb"`, `"a\x"`, "\"caf\u00e9\"", `"` + strings.Repeat("k", 256) + `"`, "a\tb"} {
		if _, err := ParseIdempotencyKey(in); err == nil {
			t.Errorf("ParseIdempotencyKey(%q) accepted", in)
		}
	}
}

// FuzzParseIdempotencyKey: any header value parses to a valid key or fails
// with ErrInvalidKey (a 400), never anything else.
func FuzzParseIdempotencyKey(f *testing.F) {
	for _, s := range []string{`abc`, `"abc"`, `"a\"b"`, `"`, `\`, `"a\`, "\x00", `"abc";x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := ParseIdempotencyKey(v)
		if err != nil {
			if !errorsIs(err, idem.ErrInvalidKey) {
				t.Fatalf("error %v does not wrap ErrInvalidKey", err)
			}
			return
		}
		if verr := idem.ValidateKey(key); verr != nil {
			t.Fatalf("accepted invalid key %q: %v", key, verr)
		}
	})
}

// FuzzDecodeCreate: any body decodes to a command that passes every rule
// or to a 4xx problem.
func FuzzDecodeCreate(f *testing.F) {
	for _, s := range []string{
		`{"name":"Widget","price_cents":999,"currency":"EUR","seller_id":"3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"}`,
		`{"name":"W","price_cents":1e3}`, `{"name":null}`, `[]`, `{}`, `{"a":1,"a":2}`, `"x"`, `{"price_cents":-0}`,
		`{"idempotency_key":"k","name":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, p := decodeCreate(body)
		if p != nil {
			if p.Status < 400 || p.Status > 499 {
				t.Fatalf("status %d for %q", p.Status, body)
			}
			if p.response().StatusCode != p.Status {
				t.Fatal("rendered status differs")
			}
			return
		}
		if _, err := productCommand(got); err != nil {
			t.Fatalf("decoded body fails the product rules: %v", err)
		}
	})
}
