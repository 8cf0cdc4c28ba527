package idemotel_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// guess is the attack on a span's idem.scope_hash that issue 36 names: a
// reader of the spans who knows the principal, the operation (on the
// span in clear) and the shape of the keys ("order-" and four digits)
// hashes each of the 10,000 candidates every way it can compute without
// the operators' key (the first 16 hex digits of the SHA-256 of the
// scope's ID, as the library once recorded it, and of an HMAC under a
// key it could guess), and returns the key whose hash is the span's.
func guess(t *testing.T, operation, principal, spanHash string) (string, bool) {
	t.Helper()
	hashes := []func(id string) []byte{
		func(id string) []byte { sum := sha256.Sum256([]byte(id)); return sum[:] },
	}
	for _, key := range []string{"", operation, principal, "idem", "idem.scope_hash"} {
		hashes = append(hashes, func(id string) []byte {
			mac := hmac.New(sha256.New, []byte(key))
			mac.Write([]byte(id))
			return mac.Sum(nil)
		})
	}
	for i := range 10000 {
		sc, err := idem.NewScope(operation, principal, fmt.Sprintf("order-%04d", i))
		must.NoError(t, err)
		for _, h := range hashes {
			if hex.EncodeToString(h(sc.ID())[:8]) == spanHash {
				return sc.Key, true
			}
		}
	}
	return "", false
}

// hashesOn returns every idem.scope_hash on the spans and their events.
func hashesOn(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	look := func(attrs []attribute.KeyValue) {
		if h := attr(attrs, idemotel.AttrScopeHash); h != "" {
			out = append(out, h)
		}
	}
	for _, sp := range spans {
		look(sp.Attributes())
		for _, e := range sp.Events() {
			look(e.Attributes)
		}
	}
	return out
}

// A span never lets its reader recover a guessable key: 10,000 guesses
// of the key order-4711 of a known principal recover nothing, whether the
// trace records a keyed scope hash (WithScopeHasher) or none (the
// default). Only the holder of the key finds the key's spans.
func TestTheScopeHashDoesNotGiveAGuessableKeyBack(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			var opts []idemotel.Option
			if keyed {
				opts = append(opts, idemotel.WithScopeHasher(w.hasher))
			}
			s, err := idem.NewStore(w.db, "idempotency", idem.WithCache(10, 0), idem.WithTrace(idemotel.NewTrace(w.provider, opts...)))
			must.NoError(t, err)
			sc, err := idem.NewScope("POST /orders", "user-42", "order-4711")
			must.NoError(t, err)
			ctx := context.Background()
			for range 2 { // a call, and a cache hit
				_, err = s.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
				must.NoError(t, err)
			}
			_, err = s.ExecuteBatch(ctx, []idem.BatchItem{{Scope: sc, Fingerprint: "fp"}},
				func([]int, []types.TransactWriteItem) ([]types.TransactWriteItem, error) { return nil, nil })
			must.NoError(t, err)

			hashes := hashesOn(w.ended())
			for _, h := range hashes {
				key, found := guess(t, sc.Operation, sc.Principal, h)
				check.False(t, found, "10,000 guesses recovered the key %q from the span's idem.scope_hash %q", key, h)
			}
			if len(opts) == 0 {
				check.Empty(t, hashes, "no scope hash without a hasher")
				return
			}
			must.True(t, len(hashes) >= 3, "the call spans, the cache hit and the batch item: %q", hashes)
			for _, h := range hashes {
				check.Equal(t, w.hasher.Hash(sc.ID()), h, "the key's holder finds the key's spans")
			}
		})
	}
}

// The hash is keyed: another key, another hash; and a key too short to
// be out of reach of a search is refused.
func TestScopeHasherIsKeyed(t *testing.T) {
	t.Parallel()
	a, err := idemtrace.NewScopeHasher([]byte("key a: sixteen bytes or more"))
	must.NoError(t, err)
	b, err := idemtrace.NewScopeHasher([]byte("key b: sixteen bytes or more"))
	must.NoError(t, err)
	sc, err := idem.NewScope("POST /orders", "user-42", "order-4711")
	must.NoError(t, err)
	check.Len(t, a.Hash(sc.ID()), 16)
	check.Equal(t, a.Hash(sc.ID()), a.Hash(sc.ID()))
	check.NotEqual(t, a.Hash(sc.ID()), b.Hash(sc.ID()))
	_, err = idemtrace.NewScopeHasher([]byte("fifteen bytes!!"))
	check.Error(t, err)
	var none *idemtrace.ScopeHasher
	check.Equal(t, "", none.Hash(sc.ID()))
}
