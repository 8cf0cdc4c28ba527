package logbuf_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
)

func TestBufferTakesConcurrentWrites(t *testing.T) {
	t.Parallel()
	var b logbuf.Buffer
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { fmt.Fprintf(&b, "line %d\n", i) })
	}
	wg.Wait()
	if got := len(b.Lines()); got != 50 {
		t.Fatalf("got %d lines, want 50", got)
	}
}
