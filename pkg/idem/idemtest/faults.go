package idemtest

import (
	"encoding/json"
	"net/http"
	"sync"
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
	}
	return "Fault(?)"
}

type fault struct {
	op   Op
	kind Fault
	left int
}

// Inject makes the next times requests of op fail with f (after any
// faults injected earlier for op are spent). Requests the SDK retries
// count one each.
func (s *Server) Inject(op Op, f Fault, times int) {
	if times < 1 {
		return
	}
	s.mu.Lock()
	s.faults = append(s.faults, &fault{op: op, kind: f, left: times})
	s.mu.Unlock()
}

// ClearFaults drops every fault not yet spent.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// takeFault spends the first armed fault for op; call it with s.mu held.
func (s *Server) takeFault(op Op) *fault {
	for i, f := range s.faults {
		if f.op != op {
			continue
		}
		f.left--
		if f.left == 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return &fault{op: f.op, kind: f.kind}
	}
	return nil
}

// before answers for a fault that refuses the request before it is
// served; done is false for one that lets it through (LostAnswer).
func (f *fault) before(op Op, body []byte, s *Server) (answer, bool) {
	switch f.kind {
	case Throttled:
		return answerError(http.StatusBadRequest, "ThrottlingException",
			"Rate of requests exceeds the allowed throughput. (injected)"), true
	case ServerError:
		return answerError(http.StatusInternalServerError, "InternalServerError",
			"Internal server error (injected)"), true
	case Conflict:
		if op != OpTransactWriteItems {
			return answerError(http.StatusBadRequest, "TransactionConflictException",
				"Transaction is ongoing for the item (injected)"), true
		}
		var in struct{ TransactItems []json.RawMessage }
		_ = json.Unmarshal(body, &in)
		reasons := make([]reason, max(len(in.TransactItems), 1))
		for i := range reasons {
			reasons[i] = reason{Code: "None"}
		}
		reasons[0] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item (injected)"}
		return cancelled(reasons), true
	}
	return answer{}, false
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
