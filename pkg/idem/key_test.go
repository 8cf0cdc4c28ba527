package idem_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/canon"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func TestValidateKey(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"a", "~", "!", strings.Repeat("k", 255), `"quoted"`, "550e8400-e29b-41d4-a716-446655440000"} {
		check.NoError(t, idem.ValidateKey(k), "%q", k)
	}
	for _, k := range []string{"", " ", "a b", "tab\t", "nl\n", "\x7f", "é", strings.Repeat("k", 256), "\x00"} {
		err := idem.ValidateKey(k)
		check.ErrorIs(t, err, idem.ErrInvalidKey, "%q", k)
	}
}

func TestScopeIDIsUnambiguous(t *testing.T) {
	t.Parallel()
	// Pairs that a naive "principal|key" join would merge.
	a, err := idem.NewScope("POST /p", "alice|1:b", "c")
	must.NoError(t, err)
	b, err := idem.NewScope("POST /p", "alice", "1:b|c")
	must.NoError(t, err)
	check.NotEqual(t, a.ID(), b.ID())

	// The anonymous scope keeps the ID every release wrote for it; a
	// caller named "anonymous" is marked, so the two never meet.
	anon, err := idem.NewAnonymousScope("POST /p", "k")
	must.NoError(t, err)
	check.Equal(t, "v1|7:POST /p|9:anonymous|1:k", anon.ID())
	check.True(t, anon.Anonymous())
	check.Equal(t, "", anon.Principal)
	named, err := idem.NewScope("POST /p", "anonymous", "k")
	must.NoError(t, err)
	check.Equal(t, "v1|7:POST /p|n9:anonymous|1:k", named.ID())
	check.False(t, named.Anonymous())
	for _, sc := range []idem.Scope{anon, named} {
		back, err := idem.ParseID(sc.ID())
		must.NoError(t, err)
		check.Equal(t, sc, back)
	}

	// Property: ID is injective because ParseID inverts it, for parts
	// drawn from an alphabet heavy in separators and digits.
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "|:0123456789v1abn"
	part := func(min int) string {
		n := min + rng.IntN(12)
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	seen := map[string]idem.Scope{}
	principals := []string{"anonymous", "n9:anonymous", "9:anonymous", "nanonymous", ""}
	for i := range 20000 {
		// Every fourth scope is anonymous, or its caller has a name
		// close to the anonymous scope's spelling.
		var sc idem.Scope
		var err error
		switch p := principals[i%len(principals)]; {
		case i%4 != 0:
			sc, err = idem.NewScope(part(1), part(1), part(1))
		case p == "":
			sc, err = idem.NewAnonymousScope(part(1), part(1))
		default:
			sc, err = idem.NewScope(part(1), p, part(1))
		}
		must.NoError(t, err)
		id := sc.ID()
		back, err := idem.ParseID(id)
		must.NoError(t, err)
		must.Equal(t, sc, back)
		if prev, ok := seen[id]; ok {
			must.Equal(t, prev, sc, "two scopes share id %q", id)
		}
		seen[id] = sc
	}
}

func TestNewScopeRejects(t *testing.T) {
	t.Parallel()
	_, err := idem.NewScope("", "p", "k")
	check.ErrorIs(t, err, idem.ErrInvalidKey)
	_, err = idem.NewScope("op", "p", "bad key")
	check.ErrorIs(t, err, idem.ErrInvalidKey)
	// A caller with no name never falls into the shared anonymous scope
	// by accident: NewAnonymousScope chooses it.
	_, err = idem.NewScope("op", "", "k")
	check.ErrorIs(t, err, idem.ErrInvalidKey, "empty principal")
	_, err = idem.NewAnonymousScope("", "k")
	check.ErrorIs(t, err, idem.ErrInvalidKey, "anonymous, empty operation")
	_, err = idem.NewAnonymousScope("op", "bad key")
	check.ErrorIs(t, err, idem.ErrInvalidKey, "anonymous, bad key")
	_, err = idem.NewScope("op", strings.Repeat("p", 2100), "k")
	check.ErrorIs(t, err, idem.ErrInvalidKey, "id beyond DynamoDB's 2048-byte key limit")
	// Nor what Encode never writes: the mark on any name but "anonymous",
	// on another part, or a length spelled otherwise.
	for _, bad := range []string{"", "v2|1:a", "v1|x:a", "v1|1:a|1:b|1:c|", "v1|5:a|1:b|1:c", "v1|1:a|1:b",
		"v1|1:a|n1:b|1:c", "v1|n1:a|9:anonymous|1:c", "v1|1:a|9:anonymous|n1:c", "v1|1:a|+1:b|1:c", "v1|1:a|01:b|1:c"} {
		_, err := idem.ParseID(bad)
		check.ErrorIs(t, err, idem.ErrInvalidKey, "%q", bad)
	}
}

func TestFingerprintIgnoresOrderAndWhitespace(t *testing.T) {
	t.Parallel()
	a, err := fingerprintJSON([]byte(`{"name":"Widget","price_cents":999,"nested":{"b":1,"a":[1,2]}}`))
	must.NoError(t, err)
	b, err := fingerprintJSON([]byte(" {\n\"nested\": {\"a\": [1, 2], \"b\": 1},\t\"price_cents\": 999, \"name\": \"Widget\"}"))
	must.NoError(t, err)
	check.Equal(t, a, b)
	check.Len(t, a, 64)

	type cmd struct {
		Price int    `json:"price_cents"`
		Name  string `json:"name"`
	}
	c, err := idem.Fingerprint(cmd{Name: "Widget", Price: 999})
	must.NoError(t, err)
	d, err := fingerprintJSON([]byte(`{"name":"Widget","price_cents":999}`))
	must.NoError(t, err)
	check.Equal(t, d, c, "struct field order does not matter")

	for _, other := range []string{
		`{"name":"Gadget","price_cents":999}`, `{"name":"Widget","price_cents":998}`,
		`{"name":"Widget","price_cents":"999"}`, `{"name":"Widget"}`,
	} {
		e, err := fingerprintJSON([]byte(other))
		must.NoError(t, err)
		check.NotEqual(t, d, e, other)
	}
	form, err := canon.JSON([]byte(`{"b":"<&>","a":1.50}`))
	must.NoError(t, err)
	check.Equal(t, `{"a":1.50,"b":"<&>"}`, string(form), "numbers and characters as written")
	escaped, err := fingerprintJSON([]byte(`{"b":"\u003c&>","a":1.50}`))
	must.NoError(t, err)
	plain, err := fingerprintJSON(form)
	must.NoError(t, err)
	check.Equal(t, plain, escaped, "a RawMessage's HTML escaping does not change its fingerprint")

	for _, bad := range []string{``, `{`, `{"a":1} {}`, `nope`, `{"a":1,"a":2}`, "\"\xff\""} {
		_, err := fingerprintJSON([]byte(bad))
		check.Error(t, err, bad)
	}
	_, err = idem.Fingerprint(func() {})
	check.Error(t, err)
}

func TestNewStoreValidatesOptions(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]idem.Option{
		"zero lease":         {idem.WithLease(0, time.Second)},
		"negative margin":    {idem.WithLease(time.Minute, -1)},
		"short retention":    {idem.WithRetention(idem.DefaultLease)},
		"zero attempts":      {idem.WithConflictAttempts(0)},
		"zero response size": {idem.WithMaxResponseBytes(0)},
		"zero release":       {idem.WithReleaseTimeout(0)},
		"negative cache":     {idem.WithCache(-1, 0)},
	} {
		_, err := idem.NewStore(fakeAPI{}, "t", opts...)
		check.Error(t, err, name)
	}
	_, err := idem.NewStore(nil, "t")
	check.Error(t, err)
	_, err = idem.NewStore(fakeAPI{}, "")
	check.Error(t, err)
	_, err = idem.NewStore(fakeAPI{}, "t")
	check.NoError(t, err)
}

// fakeAPI only satisfies the interface for option validation; no test sends
// a request through it.
type fakeAPI struct{ idem.API }

// fingerprintJSON fingerprints an encoded document the way the package
// documents it: as a json.RawMessage.
func fingerprintJSON(raw []byte) (string, error) { return idem.Fingerprint(json.RawMessage(raw)) }
