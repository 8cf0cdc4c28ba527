package streams_test

import (
	"math/rand/v2"
	"testing"

	"github.com/idemlambda/idemlambda/internal/streams"
)

// BenchmarkItem converts a mixed, nested image of 20 attributes from the
// Lambda event shape to the DynamoDB SDK's.
func BenchmarkItem(b *testing.B) {
	g := gen{rand.New(rand.NewPCG(1, 2))}
	image, err := streams.Image(g.item(0, 20))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := streams.Item(image); err != nil {
			b.Fatal(err)
		}
	}
}
