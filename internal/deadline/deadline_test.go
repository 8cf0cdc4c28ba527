package deadline_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/internal/deadline"
)

func TestBefore(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pdl, _ := parent.Deadline()
	ctx, stop := deadline.Before(parent, time.Second)
	defer stop()
	if dl, _ := ctx.Deadline(); !dl.Equal(pdl.Add(-time.Second)) {
		t.Fatalf("deadline %v, want %v", dl, pdl.Add(-time.Second))
	}

	short, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	sdl, _ := short.Deadline()
	ctx2, stop2 := deadline.Before(short, time.Second)
	defer stop2()
	if dl, _ := ctx2.Deadline(); !dl.Equal(sdl) {
		t.Fatalf("too little time left: deadline moved to %v", dl)
	}

	ctx3, stop3 := deadline.Before(context.Background(), time.Second)
	defer stop3()
	if _, ok := ctx3.Deadline(); ok {
		t.Fatal("a context without a deadline got one")
	}
}
