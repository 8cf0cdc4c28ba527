package api

import (
	"testing"

	"github.com/idemlambda/idemlambda/internal/product"
)

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
			if respond(*p).StatusCode != p.Status {
				t.Fatal("rendered status differs")
			}
			return
		}
		// What decoded is a command that passed every rule: its product
		// can be built, and its fingerprint computed.
		if _, err := Fingerprint(decodedCommand(got)); err != nil {
			t.Fatalf("decoded command: %v", err)
		}
		if decodedCommand(got) == (product.CreateCommand{}) {
			t.Fatalf("decoded body %q gave an empty command", body)
		}
	})
}
