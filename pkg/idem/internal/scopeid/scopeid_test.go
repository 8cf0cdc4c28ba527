package scopeid

import (
	"testing"
)

// Parse accepts exactly what Encode writes: whatever an ID holds, if it
// parses, encoding its parts gives it back, so no two IDs parse to one
// scope; and the anonymous scope and a caller named "anonymous" never
// share an ID.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"v1|7:POST /p|9:anonymous|1:k", "v1|7:POST /p|n9:anonymous|1:k", "v1|7:POST /p|5:alice|1:k",
		"v1|1:a|n1:b|1:c", "v1|1:a|+1:b|1:c", "v1|0:|0:|0:", "v1|3:a|b|1:c|1:d", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		p, err := Parse(id)
		if err != nil {
			return
		}
		if again := Encode(p); again != id {
			t.Fatalf("Parse(%q) = %+v, which encodes as %q", id, p, again)
		}
		if p.Anonymous && p.Principal != "" {
			t.Fatalf("Parse(%q): an anonymous scope with principal %q", id, p.Principal)
		}
		other := p
		other.Anonymous, other.Principal = !p.Anonymous, anonymousPrincipal
		if p.Anonymous || p.Principal == anonymousPrincipal {
			if Encode(other) == id {
				t.Fatalf("%q is both the anonymous scope's ID and a caller named anonymous's", id)
			}
		}
	})
}

// Encode and Parse round-trip the scopes the library builds, the
// anonymous one and a caller named "anonymous" included.
func TestEncodeParse(t *testing.T) {
	for _, p := range []Parts{
		{Operation: "POST /p", Principal: "alice", Key: "k"},
		{Operation: "POST /p", Key: "k", Anonymous: true},
		{Operation: "POST /p", Principal: "anonymous", Key: "k"},
		{Operation: "a|1:b", Principal: "n9:anonymous", Key: "|"},
	} {
		got, err := Parse(Encode(p))
		if err != nil || got != p {
			t.Errorf("Parse(Encode(%+v)) = %+v, %v", p, got, err)
		}
	}
	if Encode(Parts{Operation: "o", Key: "k", Anonymous: true}) == Encode(Parts{Operation: "o", Principal: "anonymous", Key: "k"}) {
		t.Error("the anonymous scope and a caller named anonymous share an ID")
	}
}
