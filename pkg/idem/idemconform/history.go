package idemconform

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// outcome is one delivery's result as its source saw it.
type outcome struct {
	class Class
	// answer is the exact answer of a success or not-recorded delivery:
	// for HTTP the status, the stored headers and the body; for Do and
	// idemevent the JSON value; for a queue "ack".
	answer string
	// candidate is, for an unknown outcome, the answer the delivery's own
	// execution produced, if it ran one: the store may have recorded it.
	candidate string
	// detail says why, for the report.
	detail string
	// checkpoint: the stream's answer named this record, from which the
	// shard is retried.
	checkpoint bool
	// untried: a stream record after the one its batch stopped at.
	untried bool
	// outOfTime: not recorded because the invocation's time ran out: the
	// store refused the completion until the deadline less the margin.
	outOfTime bool
	// retryAfter is a 409's or 503's Retry-After.
	retryAfter time.Duration
	// unacked marks a delivery whose effect ran and was not recorded
	// that was still reported failed to its source (idemsqs: a batch item
	// failure; idemevent: an error; HTTP: an error status), which will
	// deliver it again.
	unacked bool
	// again: a failure its source delivers again (an HTTP client retrying
	// a 503).
	again bool
	// fencedOut marks a not-recorded delivery whose completion was
	// refused because another caller had taken the key over
	// (idem.ErrLeaseLost): not Run's window for a write that failed.
	fencedOut bool
	// wrong is a violation the answer shows by itself (an outcome
	// misreported).
	wrong string
}

func (o outcome) String() string {
	s := string(o.class)
	if o.answer != "" {
		s += " " + short(o.answer)
	}
	if o.detail != "" {
		s += " (" + o.detail + ")"
	}
	return s
}

// replyIn finds the reply in an answer (a JSON value, or an HTTP answer
// whose body is one); ok is false for answers that carry none (ack).
func replyIn(answer string) (Reply, bool) {
	body := answer
	if i := strings.Index(answer, "\n\n"); i >= 0 {
		body = answer[i+2:]
	}
	var r Reply
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Exec == 0 {
		return Reply{}, false
	}
	return r, true
}

// op is one delivery: its call and return in the recorder's sequence,
// and its outcome.
type op struct {
	id      int
	actor   *actor
	attempt int
	env     int
	call    int64
	ret     int64
	start   time.Time
	end     time.Time
	sweep   bool // the delivery after the faults were cleared
	out     outcome
}

// recorder keeps a cell's history. Its sequence orders calls and returns:
// fake time does not advance between events that happen at one instant,
// so timestamps could not tell them apart.
type recorder struct {
	seq atomic.Int64
	mu  sync.Mutex
	ops []*op
	// marks are instants worth seeing in the report (an effect applied, an
	// environment crashed), by scope.
	marks []mark
}

type mark struct {
	scope string
	at    int64
	what  string
}

// forever is the return of an operation whose output is unknown: it may
// take effect at any time after its call (porcupine's convention for a
// crashed client).
const forever = math.MaxInt64 / 2

func (r *recorder) begin(a *actor, attempt, env int) *op {
	o := &op{actor: a, attempt: attempt, env: env, call: r.seq.Add(1), start: time.Now()}
	r.mu.Lock()
	o.id = len(r.ops)
	r.ops = append(r.ops, o)
	r.mu.Unlock()
	return o
}

func (r *recorder) end(o *op, out outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o.out, o.end = out, time.Now()
	o.ret = r.seq.Add(1)
	if out.class == unknown {
		o.ret = forever + int64(o.id)
	}
}

func (r *recorder) mark(scope, format string, args ...any) {
	at := r.seq.Add(1)
	r.mu.Lock()
	r.marks = append(r.marks, mark{scope: scope, at: at, what: fmt.Sprintf(format, args...)})
	r.mu.Unlock()
}

func (r *recorder) history() []*op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*op(nil), r.ops...)
}

// short trims an answer for a message.
func short(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}
