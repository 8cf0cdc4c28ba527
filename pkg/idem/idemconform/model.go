package idemconform

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The sequential specification of an idempotent operation, per scope
// (caller and key): the first completed execution fixes the answer (and
// the payload it was for); every later call replays it, or is told
// in-flight, unavailable, key reuse (another payload) or refused without
// an effect. A call whose output is unknown (its environment crashed), or
// whose effect ran without its completion being recorded, may or may not
// have fixed the answer: the model is nondeterministic there.

// input is what a delivery asked for.
type input struct {
	scope   string // caller|key
	variant string // the payload
	// otherVariant says another payload for this scope was in the
	// workload: only then can key reuse be answered before any answer is
	// fixed (the other payload's execution holds the key).
	otherVariant bool
}

// state is a scope's: nothing yet, or the fixed answer and the payload it
// was for.
type state struct {
	fixed   bool
	variant string
	answer  string
}

// step is the specification: the states a scope can be in after a
// delivery with input in answered out, from s; none if it cannot be
// answered so.
func step(s state, in input, out outcome) []state {
	switch out.class {
	case OK:
		if !namesScope(out.answer, in.scope, in.variant) {
			return nil
		}
		if !s.fixed {
			return []state{{fixed: true, variant: in.variant, answer: out.answer}}
		}
		if s.variant == in.variant && s.answer == out.answer {
			return []state{s}
		}
		return nil
	case KeyReuse:
		if s.fixed {
			if s.variant != in.variant {
				return []state{s}
			}
			return nil
		}
		if in.otherVariant {
			return []state{s}
		}
		return nil
	case NotRecorded:
		// Its effect ran, so nothing was fixed when it started; its
		// answer was not recorded, unless the write landed after all.
		if s.fixed || !namesScope(out.answer, in.scope, in.variant) {
			return nil
		}
		return []state{s, {fixed: true, variant: in.variant, answer: out.answer}}
	case unknown:
		if !s.fixed && out.candidate != "" {
			return []state{s, {fixed: true, variant: in.variant, answer: out.candidate}}
		}
		return []state{s}
	case InFlight, Unavailable, LeaseLost, Refused, Failed:
		return []state{s}
	}
	return nil // unclassified
}

// namesScope reports whether an answer is the one an execution for this
// scope and payload produced; answers that carry no reply (ack) pass.
func namesScope(answer, scope, variant string) bool {
	r, ok := replyIn(answer)
	if !ok {
		return answer != ""
	}
	return r.Caller+"|"+r.Key == scope && r.Variant == variant
}

// model is step for porcupine, partitioned by scope.
var model = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, o := range history {
			sc := o.Input.(input).scope
			if _, ok := by[sc]; !ok {
				order = append(order, sc)
			}
			by[sc] = append(by[sc], o)
		}
		sort.Strings(order)
		out := make([][]porcupine.Operation, 0, len(order))
		for _, sc := range order {
			out = append(out, by[sc])
		}
		return out
	},
	Init: func() []any { return []any{state{}} },
	Step: func(s, in, out any) []any {
		next := step(s.(state), in.(input), out.(outcome))
		states := make([]any, len(next))
		for i, n := range next {
			states[i] = n
		}
		return states
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(input), out.(outcome)
		return fmt.Sprintf("%s [%s] -> %s", i.scope, i.variant, o)
	},
	DescribeState: func(s any) string {
		st := s.(state)
		if !st.fixed {
			return "nothing fixed"
		}
		return fmt.Sprintf("fixed [%s] %s", st.variant, short(st.answer))
	},
	DescribeOperationMetadata: func(info any) string {
		if info == nil {
			return ""
		}
		return info.(string)
	},
}

// operations turns a history into porcupine's operations.
func operations(history []*op) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, len(history))
	for _, o := range history {
		ops = append(ops, porcupine.Operation{
			ClientId: o.actor.id,
			Input:    input{scope: o.actor.scope(), variant: o.actor.variant, otherVariant: o.actor.otherVariant},
			Call:     o.call,
			Output:   o.out,
			Return:   o.ret,
			Metadata: fmt.Sprintf("attempt %d in env %d, %s .. %s%s", o.attempt, o.env,
				o.start.Format(time.StampMilli), o.end.Format(time.StampMilli), map[bool]string{true: " (after the faults were cleared)"}[o.sweep]),
		})
	}
	return ops
}

// checked is what checking a history found.
type checked struct {
	result     porcupine.CheckResult
	partitions int
	ops        int
}

// checkHistory checks a history against the model.
func checkHistory(history []*op) checked {
	ops := operations(history)
	m := model.ToModel()
	res := porcupine.CheckOperationsTimeout(m, ops, time.Minute)
	return checked{result: res, partitions: len(m.Partition(ops)), ops: len(ops)}
}

// illegalScopes lists, as text, the histories of the scopes whose
// history the model refuses.
func illegalScopes(history []*op) string {
	by := map[string][]*op{}
	for _, o := range history {
		by[o.actor.scope()] = append(by[o.actor.scope()], o)
	}
	m := model.ToModel()
	var b strings.Builder
	for _, sc := range slices.Sorted(maps.Keys(by)) {
		ops := by[sc]
		if porcupine.CheckOperations(m, operations(ops)) {
			continue
		}
		sort.Slice(ops, func(i, j int) bool { return ops[i].call < ops[j].call })
		fmt.Fprintf(&b, "\n    history of %s:", sc)
		for _, o := range ops {
			ret := strconv.FormatInt(o.ret, 10)
			if o.ret >= forever {
				ret = "never"
			}
			fmt.Fprintf(&b, "\n      [%d..%s] actor %d [%s] attempt %d env %d: %s", o.call, ret, o.actor.id, o.actor.variant, o.attempt, o.env, o.out)
		}
	}
	return b.String()
}

// reportDir is where failing cells write their visualisation.
func reportDir() string {
	if d := os.Getenv("CONFORMANCE_REPORT_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "idem-conformance")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// visualize writes porcupine's HTML view of a history, with the
// recorder's marks and the violations as annotations, and returns its
// path.
func visualize(name string, history []*op, marks []mark, violations []string) (string, error) {
	ops := operations(history)
	m := model.ToModel()
	_, info := porcupine.CheckOperationsVerbose(m, ops, time.Minute)
	var notes []porcupine.Annotation
	for _, mk := range marks {
		notes = append(notes, porcupine.Annotation{Tag: mk.scope, Start: mk.at, Description: mk.what})
	}
	for i, v := range violations {
		notes = append(notes, porcupine.Annotation{
			Tag: "violations", Start: int64(i), Description: fmt.Sprintf("violation %d", i+1), Details: v,
			BackgroundColor: "#f4b6b6",
		})
	}
	info.AddAnnotations(notes)
	dir := reportDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, unsafeName.ReplaceAllString(name, "_")+".html")
	if err := porcupine.VisualizePath(m, info, path); err != nil {
		return "", errors.Join(fmt.Errorf("visualize %s", name), err)
	}
	return path, nil
}
