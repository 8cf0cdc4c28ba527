package idemconform

import (
	"context"
	"testing"
)

// A crash marks the call its environment runs as crashed, whenever the
// call's invoke returns: killing the environment ends the invoke, which
// then clears busy and may hand the environment to another call. Here
// the kill clears busy at once, the earliest invoke could: the call
// must be marked crashed all the same, or the checker counts its effect,
// run before the crash, as a second execution rather than Run's window.
func TestACrashMarksItsCallWhateverTheInvokeDoesNext(t *testing.T) {
	w := &world{rec: &recorder{}}
	e := &env{id: 1, w: w}
	a := &actor{caller: "alice", key: "k0"}
	c := &call{w: w, env: e, actors: []*actor{a}, execs: map[*actor]*execution{}}
	e.busy.Store(c)
	ctx, cancel := context.WithCancel(context.Background())
	e.ctx = ctx
	e.kill = func() {
		cancel()
		e.busy.Store(nil) // invoke's deferred clear, at the kill
	}

	e.crash("crash point: after the effect, before its completion")

	if !c.crashed.Load() {
		t.Error("the crashed environment's call is not marked crashed")
	}
	if len(w.rec.marks) != 1 {
		t.Errorf("marks = %v, want the environment's stop once for its actor", w.rec.marks)
	}
	if ctx.Err() == nil {
		t.Error("the environment was not killed")
	}
}
