package idemconform

import (
	"os"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// step3 is one delivery of a hand-made history: who, when it was called
// and returned, and what it got.
type step3 struct {
	a        *actor
	call, rt int64
	out      outcome
}

// hand is a hand-made history.
func hand(steps ...step3) []*op {
	var h []*op
	for i, s := range steps {
		h = append(h, &op{id: i, actor: s.a, attempt: 1, call: s.call, ret: s.rt, out: s.out})
	}
	return h
}

func answerFor(caller, key, variant string, exec int) string {
	return Reply{Caller: caller, Key: key, Variant: variant, Exec: exec}.JSON()
}

// The checker must be able to fail: two successes of one key with two
// answers (two executions) are illegal, and the report is written.
func TestCheckerRefusesTwoAnswersForOneKey(t *testing.T) {
	t.Setenv("CONFORMANCE_REPORT_DIR", t.TempDir())
	a, b := &actor{id: 0, caller: "alice", key: "k0", variant: "a"}, &actor{id: 1, caller: "alice", key: "k0", variant: "a"}
	history := hand(
		step3{a, 1, 2, outcome{class: OK, answer: answerFor("alice", "k0", "a", 1)}},
		step3{b, 3, 4, outcome{class: OK, answer: answerFor("alice", "k0", "a", 2)}},
	)
	if got := checkHistory(history); got.result != porcupine.Illegal || got.partitions != 1 || got.ops != 2 {
		t.Fatalf("two answers for one key: %+v, want an illegal history of 1 partition and 2 operations", got)
	}
	if text := illegalScopes(history); !strings.Contains(text, "history of alice|k0") {
		t.Errorf("the illegal scope is not named: %q", text)
	}
	path, err := visualize("two-answers", history, nil, []string{"two answers"})
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(html), "alice|k0") {
		t.Fatalf("the visualisation at %s: %v (%d bytes)", path, err, len(html))
	}
}

// The model's other refusals, each on the smallest history that shows
// it, and what it must accept.
func TestModel(t *testing.T) {
	alice := func(id int, variant string) *actor {
		return &actor{id: id, caller: "alice", key: "k0", variant: variant, otherVariant: true}
	}
	ok := func(exec int, variant string) outcome {
		return outcome{class: OK, answer: answerFor("alice", "k0", variant, exec)}
	}
	for _, tc := range []struct {
		name    string
		history []*op
		legal   bool
	}{
		{"replays of the first answer", hand(step3{alice(0, "a"), 1, 2, ok(1, "a")}, step3{alice(1, "a"), 3, 4, ok(1, "a")}), true},
		{"another caller's answer", hand(step3{alice(0, "a"), 1, 2, outcome{class: OK, answer: answerFor("bob", "k0", "a", 1)}}), false},
		{"key reuse after another payload's answer", hand(step3{alice(0, "b"), 1, 2, ok(1, "b")}, step3{alice(1, "a"), 3, 4, outcome{class: KeyReuse}}), true},
		{"key reuse for the payload that was answered", hand(step3{alice(0, "a"), 1, 2, ok(1, "a")}, step3{alice(1, "a"), 3, 4, outcome{class: KeyReuse}}), false},
		{"key reuse while another payload runs", hand(step3{alice(0, "a"), 1, 2, outcome{class: KeyReuse}}), true},
		{"key reuse with no other payload", hand(step3{&actor{id: 0, caller: "alice", key: "k0", variant: "a"}, 1, 2, outcome{class: KeyReuse}}), false},
		{"a crashed call's write replayed", hand(step3{alice(0, "a"), 1, forever, outcome{class: unknown, candidate: ok(1, "a").answer}}, step3{alice(1, "a"), 3, 4, ok(1, "a")}), true},
		{"a crashed call that wrote nothing, then another execution", hand(step3{alice(0, "a"), 1, forever, outcome{class: unknown, candidate: ok(1, "a").answer}}, step3{alice(1, "a"), 3, 4, ok(2, "a")}), true},
		{"not recorded, then the next execution's answer", hand(step3{alice(0, "a"), 1, 2, outcome{class: NotRecorded, answer: ok(1, "a").answer}}, step3{alice(1, "a"), 3, 4, ok(2, "a")}), true},
		{"not recorded after an answer was fixed", hand(step3{alice(0, "a"), 1, 2, ok(1, "a")}, step3{alice(1, "a"), 3, 4, outcome{class: NotRecorded, answer: ok(2, "a").answer}}), false},
		{"in flight and unavailable change nothing", hand(step3{alice(0, "a"), 1, 2, outcome{class: InFlight}}, step3{alice(1, "a"), 3, 4, outcome{class: Unavailable}}, step3{alice(0, "a"), 5, 6, ok(3, "a")}), true},
		{"unclassified", hand(step3{alice(0, "a"), 1, 2, outcome{class: Unclassified}}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkHistory(tc.history).result == porcupine.Ok
			if got != tc.legal {
				t.Errorf("legal = %v, want %v:%s", got, tc.legal, illegalScopes(tc.history))
			}
		})
	}
}
