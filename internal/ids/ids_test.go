package ids_test

import (
	"testing"

	"github.com/idemlambda/idemlambda/internal/ids"
)

func TestParseTakesOneSpellingOnly(t *testing.T) {
	t.Parallel()
	const id = "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"
	for _, ok := range []string{id, "3F2B8C1E-7A4D-4E6F-9B0A-1C2D3E4F5A6B"} {
		if got, err := ids.Parse(ok); err != nil || got.String() != id {
			t.Errorf("Parse(%q) = %v, %v", ok, got, err)
		}
	}
	for _, bad := range []string{
		"", "x", "urn:uuid:" + id, "{" + id + "}", "3f2b8c1e7a4d4e6f9b0a1c2d3e4f5a6b",
		"00000000-0000-0000-0000-000000000000", id + " ",
	} {
		if _, err := ids.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}
