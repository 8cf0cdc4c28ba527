package idemtest

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The isolation model. DynamoDB runs a TransactWriteItems over a span of
// time in which it holds every item the transaction touches:
//
//   - a PutItem, UpdateItem or DeleteItem on a held item is refused with
//     TransactionConflictException (HTTP 400, not retried by the SDK);
//   - a transaction touching a held item is cancelled with reason
//     TransactionConflict at that item's index and None elsewhere;
//   - reads see the last committed value.
//
// Here a single-item write holds its item from arrival to answer, and a
// transaction holds the items whose prepare passed (prepareTx) from its
// arrival until it commits or is cancelled: for the time it takes plus
// the configured latency when every item passed, only while a Hold or
// InjectLatency parks it when one failed (DynamoDB's coordinator cancels
// as soon as a prepare fails). An item whose condition fails is never
// held. A single-item write or a transaction meeting an item a
// transaction holds is refused as above; one meeting an item a
// single-item write holds waits for it, as DynamoDB applies one item's
// writes in turn. A request's writes are stored at its end, all at once
// (commit), so reads see committed values.

// txToken is a ClientRequestToken DynamoDB has seen: the request it came
// with, and whether that request is still running.
type txToken struct {
	digest  [32]byte
	running bool
	done    time.Time
}

// tokenWindow is how long DynamoDB answers a repeated ClientRequestToken
// from its first success.
const tokenWindow = 10 * time.Minute

// holder is a write holding an item: a transaction, which others meet
// as a conflict, or a single-item write, which other single-item writes
// wait for (DynamoDB applies one item's writes one at a time).
type holder struct {
	tx   bool
	done chan struct{}
}

// prepareTx is a transaction's prepare phase ("Distributed Transactions
// at Scale in Amazon DynamoDB", USENIX ATC '23): every item at once, each
// evaluated against its last committed value. An item another transaction
// holds is a conflict and is not evaluated; an item whose condition fails
// (or whose update cannot apply) is refused without being held, as a
// storage node marks an item only when its prepare succeeds; an item that
// passes is held by the transaction. When any item is a conflict, the
// transaction holds nothing: it is cancelled at once. A single-item write
// on one of the items is let finish first: it takes DynamoDB
// milliseconds, and here, where every request's writes are stored under
// one lock, a conflict with it would be an artifact of that lock.
//
// held lists the items the transaction now holds (unhold them); failed is
// true when a reason is not None.
func (s *Server) prepareTx(actions []*action) (reasons []reason, held []string, failed bool) {
	reasons = noneReasons(len(actions))
	var busy []int
	for {
		s.mu.Lock()
		var wait chan struct{}
		busy = busy[:0]
		for i, a := range actions {
			switch h := s.held[a.name]; {
			case h == nil:
			case h.tx:
				busy = append(busy, i)
			default:
				wait = h.done
			}
		}
		if wait == nil {
			// Every free item is held while it is evaluated, so that no
			// write changes it in between; single-item writes and other
			// transactions wait for that as for a single-item write.
			for i, a := range actions {
				if !slices.Contains(busy, i) {
					s.held[a.name] = &holder{done: make(chan struct{})}
				}
			}
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		<-wait
	}
	for i, a := range actions {
		if slices.Contains(busy, i) {
			reasons[i] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}
			failed = true
			continue
		}
		switch o := s.evaluate(a); {
		case o.failed:
			reasons[i] = reason{Code: "ConditionalCheckFailed", Message: "The conditional request failed"}
			if a.allOld && a.old != nil {
				reasons[i].Item = a.old.raw()
			}
			failed = true
		case o.invalid != "":
			reasons[i] = reason{Code: "ValidationError", Message: o.invalid}
			failed = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(busy) > 0 {
		s.stats.ConflictCancellations++
	}
	for i, a := range actions {
		if slices.Contains(busy, i) {
			continue
		}
		h := s.held[a.name]
		delete(s.held, a.name)
		close(h.done) // whoever waited looks again
		if reasons[i].Code == "None" && len(busy) == 0 {
			s.held[a.name] = &holder{tx: true, done: make(chan struct{})}
			held = append(held, a.name)
		}
	}
	return reasons, held, failed
}

// holdOne holds one item for a single-item write, after any other
// single-item write on it; ok is false when a transaction holds it.
func (s *Server) holdOne(name string) (ok bool) {
	for {
		s.mu.Lock()
		h := s.held[name]
		if h == nil {
			s.held[name] = &holder{done: make(chan struct{})}
			s.mu.Unlock()
			return true
		}
		s.mu.Unlock()
		if h.tx {
			return false
		}
		<-h.done
	}
}

func (s *Server) unhold(names []string) {
	s.mu.Lock()
	for _, n := range names {
		if h := s.held[n]; h != nil {
			close(h.done)
			delete(s.held, n)
		}
	}
	s.mu.Unlock()
}

// repeatedToken answers a transaction whose ClientRequestToken DynamoDB
// has seen in the last ten minutes: success again without writing when
// the first succeeded with the same request, IdempotentParameterMismatch
// for another request, TransactionInProgressException while the first
// still runs. done is false for a token not seen (it is then recorded as
// running) or one whose transaction failed.
func (s *Server) repeatedToken(token string, body []byte) (answer, bool) {
	if token == "" {
		return answer{}, false
	}
	digest := requestDigest(body)
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[token]
	switch {
	case !ok || (!t.running && time.Since(t.done) > tokenWindow):
		s.tokens[token] = &txToken{digest: digest, running: true}
		return answer{}, false
	case t.digest != digest:
		return answerError(http.StatusBadRequest, "IdempotentParameterMismatchException",
			"The request uses the same client token as a previous, but non-identical request."), true
	case t.running:
		return answerError(http.StatusBadRequest, "TransactionInProgressException",
			"The transaction with the given request token is already in progress."), true
	default:
		return answerJSON(map[string]any{}), true
	}
}

// requestDigest identifies a request by its parameters, not its bytes:
// the SDK writes attribute maps in Go's map order, so two calls with the
// same parameters may differ byte for byte. Re-encoding sorts every
// object's members.
func requestDigest(body []byte) [32]byte {
	var v any
	if json.Unmarshal(body, &v) == nil {
		if canon, err := json.Marshal(v); err == nil {
			body = canon
		}
	}
	return sha256.Sum256(body)
}

// endToken records how the token's transaction ended: a failed one may be
// sent again under the same token and runs again.
func (s *Server) endToken(token string, ok bool) {
	if token == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		delete(s.tokens, token)
		return
	}
	if t := s.tokens[token]; t != nil {
		t.running, t.done = false, time.Now()
	}
}

// reason is one cancellation reason, as DynamoDB sends it.
type reason struct {
	Code    string `json:"Code"`
	Message string `json:"Message,omitempty"`
	Item    item   `json:"Item,omitempty"`
}

// cancelled is a TransactionCanceledException with reasons.
func cancelled(reasons []reason) answer {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = r.Code
	}
	b, _ := json.Marshal(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})
	return answer{status: http.StatusBadRequest, body: b}
}
