package callopt

import (
	"context"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	ctx := context.Background()
	if _, ok := Wait(ctx); ok {
		t.Fatal("a bare context has a wait")
	}
	if Clear(ctx) != ctx {
		t.Fatal("Clear of a context without a wait made a new one")
	}
	w := WithWait(ctx, 2*time.Second)
	if d, ok := Wait(w); !ok || d != 2*time.Second {
		t.Fatalf("Wait = %v, %v; want 2s, true", d, ok)
	}
	if d, ok := Wait(WithWait(ctx, -time.Second)); !ok || d != 0 {
		t.Fatalf("a negative wait = %v, %v; want 0, true (off)", d, ok)
	}
	if _, ok := Wait(Clear(w)); ok {
		t.Fatal("Clear left the wait")
	}
}

func TestFollow(t *testing.T) {
	ctx := context.Background()
	if Follow(ctx) {
		t.Fatal("a bare context follows")
	}
	f := WithFollow(WithWait(ctx, time.Second))
	if d, ok := Wait(f); !Follow(f) || !ok || d != time.Second {
		t.Fatalf("Follow, Wait = %v, %v, %v; want true, 1s, true", Follow(f), d, ok)
	}
	if c := Clear(f); Follow(c) {
		t.Fatal("Clear left the follow")
	}
	if !Follow(WithWait(WithFollow(ctx), 0)) {
		t.Fatal("WithWait dropped the follow")
	}
}
