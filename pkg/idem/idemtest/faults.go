package idemtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Fault is a failure the store can be told to answer with.
type Fault int

// The faults. Each hits requests of one operation, a number of times.
const (
	// LostAnswer serves the request, then answers 500 InternalServerError
	// instead of the real answer: the write landed and the client never
	// heard. The SDK retries a 500, so its retry meets its own write.
	LostAnswer Fault = iota + 1
	// Throttled refuses the request with ThrottlingException (HTTP 400),
	// which the SDK retries; nothing is written.
	Throttled
	// ServerError answers 500 InternalServerError without serving the
	// request; nothing is written.
	ServerError
	// Conflict refuses the request as if a transaction held its item:
	// TransactionConflictException for a single-item write (which the SDK
	// does not retry), and for TransactWriteItems a cancellation with
	// reason TransactionConflict on its first item, None elsewhere.
	Conflict
	// ThrottledPastRetries refuses every attempt of an SDK call, so the
	// SDK gives up: Inject's times counts SDK calls here, not requests
	// (the attempts of one call share its Amz-Sdk-Invocation-Id header; a
	// request without one is a call of its own). A single-item operation
	// or a read gets ThrottlingException (HTTP 400) on every attempt,
	// until the SDK's retries run out. A TransactWriteItems or
	// TransactGetItems is cancelled, as DynamoDB cancels a throttled
	// transaction: TransactionCanceledException with reason
	// ThrottlingError on every item, which the SDK does not retry.
	// Nothing is written.
	ThrottledPastRetries
)

// String names the fault.
func (f Fault) String() string {
	switch f {
	case LostAnswer:
		return "LostAnswer"
	case Throttled:
		return "Throttled"
	case ServerError:
		return "ServerError"
	case Conflict:
		return "Conflict"
	case ThrottledPastRetries:
		return "ThrottledPastRetries"
	case cancellation:
		return "cancellation"
	}
	return "Fault(?)"
}

// cancellation is the fault InjectCancellation arms.
const cancellation Fault = 100

type fault struct {
	op   Op
	kind Fault
	left int
	// code and index are a cancellation's reason and item.
	code  string
	index int
}

// Inject makes the next times requests of op fail with f (after any
// faults injected earlier for op are spent). Requests the SDK retries
// count one each, except under ThrottledPastRetries, which counts SDK
// calls.
func (s *Server) Inject(op Op, f Fault, times int) {
	if times < 1 {
		return
	}
	s.mu.Lock()
	s.faults = append(s.faults, &fault{op: op, kind: f, left: times})
	s.mu.Unlock()
}

// The cancellation reasons DynamoDB gives, with its messages (API
// Reference, TransactWriteItems and TransactionCanceledException).
var reasonMessages = map[string]string{
	"TransactionConflict": "Transaction is ongoing for the item",
	"ThrottlingError": "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically " +
		"scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: " +
		"https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html.",
	"ProvisionedThroughputExceeded": "The level of configured provisioned throughput for the table was exceeded. " +
		"Consider increasing your provisioning level with the UpdateTable API.",
	"ValidationError":                 "One or more parameter values were invalid",
	"ItemCollectionSizeLimitExceeded": "Collection size exceeded.",
}

// InjectCancellation makes the next times TransactWriteItems requests
// (once they are valid: a request DynamoDB refuses is refused as before)
// cancelled with reason code at item index, None on every other item,
// nothing written: TransactionCanceledException (HTTP 400), its message
// listing the reasons in brackets, as DynamoDB answers. An index past the
// transaction's last item falls on its last item. The codes are
// DynamoDB's: ThrottlingError, ProvisionedThroughputExceeded,
// ValidationError, TransactionConflict, ItemCollectionSizeLimitExceeded.
// ConditionalCheckFailed is not one of them, as the store produces it from
// a real condition; InjectCancellation panics on it and on any code
// DynamoDB does not send.
func (s *Server) InjectCancellation(code string, index, times int) {
	if _, ok := reasonMessages[code]; !ok {
		panic(fmt.Sprintf("idemtest: InjectCancellation(%q): want ThrottlingError, ProvisionedThroughputExceeded, "+
			"ValidationError, TransactionConflict or ItemCollectionSizeLimitExceeded (a ConditionalCheckFailed needs a real condition)", code))
	}
	if times < 1 {
		return
	}
	s.mu.Lock()
	s.faults = append(s.faults, &fault{op: OpTransactWriteItems, kind: cancellation, left: times, code: code, index: max(index, 0)})
	s.mu.Unlock()
}

// ClearFaults drops every fault and latency not yet spent (an SDK call that
// ThrottledPastRetries refuses is refused to its last attempt).
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.latencies = map[Op][]*latency{}
	s.mu.Unlock()
}

// takeFault spends the first armed fault for op; call it with s.mu held.
// An attempt of an SDK call ThrottledPastRetries refuses meets it again.
func (s *Server) takeFault(op Op, invocation string) *fault {
	if invocation != "" && s.throttled[string(op)+"\x00"+invocation] {
		return &fault{op: op, kind: ThrottledPastRetries}
	}
	for i, f := range s.faults {
		if f.op != op {
			continue
		}
		f.left--
		if f.left == 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		if f.kind == ThrottledPastRetries && invocation != "" {
			s.throttled[string(op)+"\x00"+invocation] = true
		}
		return &fault{op: f.op, kind: f.kind, code: f.code, index: f.index}
	}
	return nil
}

// before answers for a fault that refuses the request before it is
// served; done is false for one that lets it through (LostAnswer) or that
// the operation answers once the request is known valid (a cancellation).
func (f *fault) before(c *call) (answer, bool) {
	switch f.kind {
	case Throttled:
		return throttling(), true
	case ThrottledPastRetries:
		if c.op == OpTransactWriteItems || c.op == OpTransactGetItems {
			return answer{}, false
		}
		return throttling(), true
	case ServerError:
		return answerError(http.StatusInternalServerError, "InternalServerError",
			"Internal server error (injected)"), true
	case Conflict:
		if c.op != OpTransactWriteItems {
			return answerError(http.StatusBadRequest, "TransactionConflictException",
				"Transaction is ongoing for the item (injected)"), true
		}
		var in struct{ TransactItems []json.RawMessage }
		_ = json.Unmarshal(c.body, &in)
		reasons := noneReasons(max(len(in.TransactItems), 1))
		reasons[0] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item (injected)"}
		return cancelled(reasons), true
	}
	return answer{}, false
}

func throttling() answer {
	return answerError(http.StatusBadRequest, "ThrottlingException", "Rate of requests exceeds the allowed throughput.")
}

// cancel answers a valid transaction of n items that an injected
// cancellation or ThrottledPastRetries refuses; done is false when no
// such fault hit it (f may be nil).
func (f *fault) cancel(n int) (answer, bool) {
	if f == nil || n == 0 {
		return answer{}, false
	}
	switch f.kind {
	case ThrottledPastRetries:
		reasons := make([]reason, n)
		for i := range reasons {
			reasons[i] = reason{Code: "ThrottlingError", Message: reasonMessages["ThrottlingError"]}
		}
		return cancelled(reasons), true
	case cancellation:
		reasons := noneReasons(n)
		reasons[min(f.index, n-1)] = reason{Code: f.code, Message: reasonMessages[f.code]}
		return cancelled(reasons), true
	}
	return answer{}, false
}

// noneReasons is n cancellation reasons None.
func noneReasons(n int) []reason {
	reasons := make([]reason, n)
	for i := range reasons {
		reasons[i] = reason{Code: "None"}
	}
	return reasons
}

// latency is a delay InjectLatency armed.
type latency struct {
	d    time.Duration
	left int
}

// InjectLatency makes the next times requests of op wait d (time.Sleep,
// so fake time inside a testing/synctest bubble) at the point where they
// hold their items, as the op holds them normally: a slow single-item
// write keeps its item from other writes, a slow transaction keeps its
// items and meets conflicts for d longer, a slow read answers d later.
// It adds to WithTransactionLatency.
func (s *Server) InjectLatency(op Op, d time.Duration, times int) {
	if times < 1 || d <= 0 {
		return
	}
	s.mu.Lock()
	s.latencies[op] = append(s.latencies[op], &latency{d: d, left: times})
	s.mu.Unlock()
}

// takeLatency spends the first latency armed for op; call it with s.mu
// held.
func (s *Server) takeLatency(op Op) time.Duration {
	ls := s.latencies[op]
	if len(ls) == 0 {
		return 0
	}
	l := ls[0]
	l.left--
	if l.left == 0 {
		s.latencies[op] = ls[1:]
	}
	return l.d
}

// Hold is a request parked at the store until released: a transaction
// parks holding its items, so the window in which DynamoDB refuses other
// writes to them stays open for as long as a test needs.
type Hold struct {
	arrived     chan struct{}
	released    chan struct{}
	arriveOnce  sync.Once
	releaseOnce sync.Once
}

// Hold parks the next request of op that reaches the point where it
// holds its items (a read: as it arrives) until Release is called.
// Faults injected for op act first.
func (s *Server) Hold(op Op) *Hold {
	h := &Hold{arrived: make(chan struct{}), released: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		h.Release() // a closed store parks nothing
		return h
	}
	s.holds[op] = append(s.holds[op], h)
	return h
}

// Arrived is closed once the held request is parked.
func (h *Hold) Arrived() <-chan struct{} { return h.arrived }

// Release lets the held request go on; it may be called more than once,
// and before the request arrives (then it does not park).
func (h *Hold) Release() { h.releaseOnce.Do(func() { close(h.released) }) }

// pause parks the request while it holds its items: on a hold armed for
// its operation, then for its injected latency.
func (s *Server) pause(c *call) {
	s.waitHold(c.op)
	if c.latency > 0 {
		time.Sleep(c.latency)
	}
}

// waitHold parks the request if a hold is armed for op.
func (s *Server) waitHold(op Op) {
	s.mu.Lock()
	var h *Hold
	if hs := s.holds[op]; len(hs) > 0 {
		h, s.holds[op] = hs[0], hs[1:]
	}
	s.mu.Unlock()
	if h == nil {
		return
	}
	h.arriveOnce.Do(func() { close(h.arrived) })
	<-h.released
}
