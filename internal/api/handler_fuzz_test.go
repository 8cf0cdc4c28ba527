package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/idemlambda/idemlambda/internal/config"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/app/createproduct"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
)

// FuzzCreateHandler drives the whole POST handler, against a real store,
// with arbitrary content type, key header and body: the answer is always a
// well-formed response below 500, never a panic.
func FuzzCreateHandler(f *testing.F) {
	f.Add("application/json", "k1", widget)
	f.Add("application/json", `"k2"`, `{"name":"Widget","price_cents":1.5}`)
	f.Add("text/plain", "", `{}`)
	f.Add("application/json; charset=utf-8", `"a\"b"`, `{"idempotency_key":"x","name":"A","price_cents":1,"currency":"JPY","seller_id":"`+sellerID+`"}`)
	env := ddbtest.New(f)
	cfg := createConfig(env.Tables, config.ModeTransact)
	cfg.LogLevel = slog.LevelError
	h, err := createproduct.New(env.Client, cfg, app.Runtime{Out: io.Discard})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, contentType, key, body string) {
		headers := map[string]string{"content-type": contentType}
		if key != "" {
			headers["idempotency-key"] = key
		}
		resp, err := h(context.Background(), postReq(headers, body))
		if err != nil {
			t.Fatalf("handler returned an error: %v", err)
		}
		if resp.StatusCode >= 500 || resp.StatusCode < 200 {
			t.Fatalf("status %d for content-type %q key %q body %q: %s", resp.StatusCode, contentType, key, body, resp.Body)
		}
		if !json.Valid([]byte(resp.Body)) {
			t.Fatalf("body is not JSON: %q", resp.Body)
		}
	})
}
