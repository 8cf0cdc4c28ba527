package idemtest

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"regexp"
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
// Here every write holds its items from arrival to answer (a single-item
// write for the time it takes, a transaction for that plus the configured
// latency). A single-item write or a transaction meeting an item a
// transaction holds is refused as above; one meeting an item a
// single-item write holds waits for it, as DynamoDB applies one item's
// writes in turn. minidyn applies a transaction at its end, all at once,
// so reads see committed values.

// txOp is one item of a transaction, whichever its kind.
type txOp struct {
	TableName                           string
	Item                                item
	Key                                 item
	ConditionExpression                 string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           item
	ReturnValuesOnConditionCheckFailure string
}

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

// holdTx marks a transaction's items as held, unless a transaction holds
// one already: then it returns the indexes of those it holds, and holds
// none. A single-item write on one of them is let finish first: it takes
// DynamoDB milliseconds, and here, where minidyn applies every request
// under one lock, a conflict with it would be an artifact of that lock.
func (s *Server) holdTx(names []string) (busy []int) {
	for {
		s.mu.Lock()
		var wait chan struct{}
		for i, n := range names {
			switch h := s.held[n]; {
			case h == nil:
			case h.tx:
				busy = append(busy, i)
			default:
				wait = h.done
			}
		}
		if len(busy) > 0 {
			s.mu.Unlock()
			return busy
		}
		if wait == nil {
			for _, n := range names {
				s.held[n] = &holder{tx: true, done: make(chan struct{})}
			}
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		<-wait
	}
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

// writeItem serves PutItem, UpdateItem and DeleteItem.
func (s *Server) writeItem(c *call) answer {
	op, body := c.op, c.body
	var in struct {
		TableName                           string
		Item                                item
		Key                                 item
		ReturnValues                        string
		ReturnValuesOnConditionCheckFailure string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	src := in.Key
	if op == OpPutItem {
		src = in.Item
	}
	key, err := s.keyOf(in.TableName, src)
	if err != nil {
		return s.forward(op, body) // minidyn words the validation error
	}
	name := lockName(in.TableName, key)
	if !s.holdOne(name) {
		s.mu.Lock()
		s.stats.ConflictExceptions++
		s.mu.Unlock()
		return answerError(http.StatusBadRequest, "TransactionConflictException",
			"Transaction is ongoing for the item")
	}
	defer s.unhold([]string{name})
	s.pause(c)

	// minidyn ignores ALL_OLD on PutItem (it echoes the new item on success
	// and returns no item on a failed condition) and on DeleteItem: read
	// the old item while it is held, so the answer is DynamoDB's.
	oldOnFail := in.ReturnValuesOnConditionCheckFailure == "ALL_OLD"
	oldOnPut := op == OpPutItem && in.ReturnValues == "ALL_OLD"
	var old item
	if oldOnFail || oldOnPut {
		old = s.getItem(in.TableName, key)
	}
	a := s.forward(op, body)
	switch {
	case a.ok() && oldOnPut:
		a = withField(a, "Attributes", old)
	case oldOnFail && old != nil && a.errorType() == "ConditionalCheckFailedException":
		a = withField(a, "Item", old)
	}
	if a.ok() && op == OpPutItem && s.onPut != nil {
		raw, _ := json.Marshal(in.Item)
		s.onPut(in.TableName, raw)
	}
	return a
}

// withField sets (or, for a nil value, removes) one field of an answer's
// JSON object.
func withField(a answer, field string, v item) answer {
	var obj map[string]json.RawMessage
	if json.Unmarshal(a.body, &obj) != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	if v == nil {
		delete(obj, field)
	} else {
		raw, _ := json.Marshal(v)
		obj[field] = raw
	}
	b, _ := json.Marshal(obj)
	return answer{status: a.status, body: b}
}

// transactWrite serves TransactWriteItems.
func (s *Server) transactWrite(c *call) answer {
	body := c.body
	var in struct {
		ClientRequestToken string
		TransactItems      []struct {
			Put, Update, Delete, ConditionCheck *txOp
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	ops := make([]*txOp, len(in.TransactItems))
	names := make([]string, len(in.TransactItems))
	seen := map[string]bool{}
	for i, ti := range in.TransactItems {
		op, src := ti.ConditionCheck, item(nil)
		switch {
		case ti.Put != nil:
			op, src = ti.Put, ti.Put.Item
		case ti.Update != nil:
			op = ti.Update
		case ti.Delete != nil:
			op = ti.Delete
		}
		if op == nil {
			return s.forward(OpTransactWriteItems, body)
		}
		if src == nil {
			src = op.Key
		}
		key, err := s.keyOf(op.TableName, src)
		if err != nil || seen[lockName(op.TableName, key)] {
			return s.forward(OpTransactWriteItems, body) // minidyn words the validation error
		}
		op.Key = key
		ops[i], names[i] = op, lockName(op.TableName, key)
		seen[names[i]] = true
	}

	if a, done := c.fault.cancel(len(ops)); done {
		return a
	}
	if a, done := s.repeatedToken(in.ClientRequestToken, body); done {
		return a
	}
	if busy := s.holdTx(names); busy != nil {
		s.mu.Lock()
		s.stats.ConflictCancellations++
		s.mu.Unlock()
		s.endToken(in.ClientRequestToken, false)
		reasons := noneReasons(len(names))
		for _, i := range busy {
			reasons[i] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}
		}
		return cancelled(reasons)
	}
	defer s.unhold(names)
	s.pause(c)
	s.mu.Lock()
	latency := s.txLatency
	s.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	a := s.forward(OpTransactWriteItems, body)
	s.endToken(in.ClientRequestToken, a.ok())
	if a.ok() {
		if s.onPut != nil {
			for _, ti := range in.TransactItems {
				if ti.Put != nil {
					raw, _ := json.Marshal(ti.Put.Item)
					s.onPut(ti.Put.TableName, raw)
				}
			}
		}
		return a
	}
	if a.errorType() == "TransactionCanceledException" {
		return s.explain(ops, a)
	}
	return a
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

// explain rebuilds the reasons of a transaction that minidyn cancelled for
// a failed condition. minidyn stops at the first failed condition and
// returns no item for a Put; DynamoDB evaluates every condition and
// returns each failed item's value when ALL_OLD was asked for. The items
// before the first failure passed; those after it are checked again, all
// in one condition-only transaction, then again past each further
// failure, while the transaction still holds them all.
func (s *Server) explain(ops []*txOp, orig answer) answer {
	first := firstFailed(orig)
	if first < 0 || first >= len(ops) {
		return orig
	}
	reasons := make([]reason, len(ops))
	for i := range reasons {
		reasons[i] = reason{Code: "None"}
	}
	failed := []int{first}
	for from := first + 1; from < len(ops); {
		var idx []int
		var checks []any
		for i := from; i < len(ops); i++ {
			if ops[i].ConditionExpression == "" {
				continue
			}
			idx = append(idx, i)
			checks = append(checks, map[string]any{"ConditionCheck": conditionCheck(ops[i])})
		}
		if len(checks) == 0 {
			break
		}
		in, _ := json.Marshal(map[string]any{"TransactItems": checks})
		a := s.forward(OpTransactWriteItems, in)
		if a.ok() {
			break
		}
		k := firstFailed(a)
		if k < 0 || k >= len(idx) {
			return orig // not a failed condition: keep minidyn's answer
		}
		failed = append(failed, idx[k])
		from = idx[k] + 1
	}
	for _, i := range failed {
		reasons[i] = reason{Code: "ConditionalCheckFailed", Message: "The conditional request failed"}
		if ops[i].ReturnValuesOnConditionCheckFailure == "ALL_OLD" {
			reasons[i].Item = s.getItem(ops[i].TableName, ops[i].Key)
		}
	}
	return cancelled(reasons)
}

// conditionCheck is op's condition as a ConditionCheck item, with only
// the names and values the condition uses (DynamoDB refuses unused ones).
func conditionCheck(op *txOp) map[string]any {
	check := map[string]any{
		"TableName":           op.TableName,
		"Key":                 op.Key,
		"ConditionExpression": op.ConditionExpression,
	}
	if n := usedNames(op.ConditionExpression, op.ExpressionAttributeNames); len(n) > 0 {
		check["ExpressionAttributeNames"] = n
	}
	if v := usedValues(op.ConditionExpression, op.ExpressionAttributeValues); len(v) > 0 {
		check["ExpressionAttributeValues"] = v
	}
	return check
}

// firstFailed is the index of the ConditionalCheckFailed reason in a
// cancellation answer from minidyn, or -1.
func firstFailed(a answer) int {
	var out struct{ CancellationReasons []reason }
	if json.Unmarshal(a.body, &out) != nil {
		return -1
	}
	for i, r := range out.CancellationReasons {
		if r.Code == "ConditionalCheckFailed" {
			return i
		}
	}
	return -1
}

var (
	namePlaceholder  = regexp.MustCompile(`#[A-Za-z0-9_]+`)
	valuePlaceholder = regexp.MustCompile(`:[A-Za-z0-9_]+`)
)

// usedNames keeps the names expr refers to: DynamoDB refuses unused ones.
func usedNames(expr string, names map[string]string) map[string]string {
	out := map[string]string{}
	for _, p := range namePlaceholder.FindAllString(expr, -1) {
		if v, ok := names[p]; ok {
			out[p] = v
		}
	}
	return out
}

// usedValues keeps the values expr refers to.
func usedValues(expr string, values item) item {
	out := item{}
	for _, p := range valuePlaceholder.FindAllString(expr, -1) {
		if v, ok := values[p]; ok {
			out[p] = v
		}
	}
	return out
}

// transactGet serves TransactGetItems: cancelled with TransactionConflict
// where a write in progress (a transaction, or a PutItem, UpdateItem,
// DeleteItem or BatchWriteItem) holds an item, as DynamoDB does.
func (s *Server) transactGet(c *call) answer {
	body := c.body
	var in struct {
		TransactItems []struct{ Get *txOp }
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	if a, done := c.fault.cancel(len(in.TransactItems)); done {
		return a
	}
	s.pause(c)
	reasons := make([]reason, len(in.TransactItems))
	conflict := false
	s.mu.Lock()
	for i, ti := range in.TransactItems {
		reasons[i] = reason{Code: "None"}
		if ti.Get == nil {
			continue
		}
		if h := s.held[lockName(ti.Get.TableName, ti.Get.Key)]; h != nil {
			reasons[i] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}
			conflict = true
		}
	}
	if conflict {
		s.stats.ConflictCancellations++
	}
	s.mu.Unlock()
	if conflict {
		return cancelled(reasons)
	}
	return s.forward(OpTransactGetItems, body)
}

// batchWrite serves BatchWriteItem. A request whose item a transaction
// holds is not applied and comes back in UnprocessedItems, which callers
// of BatchWriteItem must retry anyway; the rest are held together, after
// any single-item writes on them, like a transaction's items.
func (s *Server) batchWrite(c *call) answer {
	body := c.body
	type req = struct {
		PutRequest    *struct{ Item item } `json:",omitempty"`
		DeleteRequest *struct{ Key item }  `json:",omitempty"`
	}
	var in struct{ RequestItems map[string][]req }
	if err := json.Unmarshal(body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	// Every key first: a request DynamoDB refuses holds nothing.
	type entry struct {
		table string
		r     req
		name  string
	}
	var entries []entry
	seen := map[string]bool{}
	for table, reqs := range in.RequestItems {
		for _, r := range reqs {
			var src item
			switch {
			case r.PutRequest != nil:
				src = r.PutRequest.Item
			case r.DeleteRequest != nil:
				src = r.DeleteRequest.Key
			}
			key, err := s.keyOf(table, src)
			if err != nil {
				return s.forward(OpBatchWriteItem, body) // minidyn words the validation error
			}
			name := lockName(table, key)
			if seen[name] {
				return answerError(http.StatusBadRequest, "ValidationException", "Provided list of item keys contains duplicates")
			}
			seen[name] = true
			entries = append(entries, entry{table: table, r: r, name: name})
		}
	}
	apply := map[string][]req{}
	unprocessed := map[string][]req{}
	var names []string
	for {
		s.mu.Lock()
		var wait chan struct{}
		for _, e := range entries {
			if h := s.held[e.name]; h != nil && !h.tx {
				wait = h.done
			}
		}
		if wait == nil {
			for _, e := range entries {
				if h := s.held[e.name]; h != nil {
					unprocessed[e.table] = append(unprocessed[e.table], e.r)
					continue
				}
				s.held[e.name] = &holder{done: make(chan struct{})}
				names = append(names, e.name)
				apply[e.table] = append(apply[e.table], e.r)
			}
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		<-wait
	}
	defer s.unhold(names)
	s.pause(c)
	out := answerJSON(map[string]any{"UnprocessedItems": map[string]any{}})
	if len(apply) > 0 {
		fwd, _ := json.Marshal(map[string]any{"RequestItems": apply})
		out = s.forward(OpBatchWriteItem, fwd)
		if !out.ok() {
			return out
		}
		if s.onPut != nil {
			for table, reqs := range apply {
				for _, r := range reqs {
					if r.PutRequest != nil {
						raw, _ := json.Marshal(r.PutRequest.Item)
						s.onPut(table, raw)
					}
				}
			}
		}
	}
	if len(unprocessed) == 0 {
		return out
	}
	var got struct{ UnprocessedItems map[string][]req }
	_ = json.Unmarshal(out.body, &got)
	if got.UnprocessedItems == nil {
		got.UnprocessedItems = map[string][]req{}
	}
	for table, reqs := range unprocessed {
		got.UnprocessedItems[table] = append(got.UnprocessedItems[table], reqs...)
	}
	return answerJSON(got)
}
