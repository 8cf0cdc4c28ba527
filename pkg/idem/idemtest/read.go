package idemtest

import (
	"encoding/json"
	"net/http"
	"time"
)

// The read path: GetItem, BatchGetItem and TransactGetItems (projection,
// capacity, consistency); Query and Scan are in query.go.

// readRequest is the parameters of a GetItem or of one Get of a
// TransactGetItems.
type readRequest struct {
	TableName                string
	Key                      item
	ProjectionExpression     *string
	ExpressionAttributeNames map[string]string
	ConsistentRead           bool
	ReturnConsumedCapacity   string
	AttributesToGet          json.RawMessage
}

// get is a checked read of one item.
type get struct {
	table      string
	key        attrs
	name       string
	projection []docPath
	consistent bool
}

func (s *Server) prepareGet(r *readRequest) (*get, error) {
	if len(r.AttributesToGet) > 0 && string(r.AttributesToGet) != "null" {
		return nil, invalidf("idemtest: the legacy parameter AttributesToGet is not supported; use ProjectionExpression")
	}
	meta, err := s.table(r.TableName)
	if err != nil {
		return nil, err
	}
	key, err := decodeAttrs(r.Key)
	if err != nil {
		return nil, err
	}
	if err := meta.checkKey(key); err != nil {
		return nil, err
	}
	e, err := newExprs(r.ExpressionAttributeNames, nil)
	if err != nil {
		return nil, err
	}
	g := &get{table: r.TableName, key: key, name: itemName(r.TableName, key), consistent: r.ConsistentRead}
	if r.ProjectionExpression != nil {
		if g.projection, err = e.projection(*r.ProjectionExpression); err != nil {
			return nil, err
		}
	}
	return g, e.unused()
}

// getItem serves GetItem.
func (s *Server) getItem(c *call) answer {
	var r readRequest
	if err := json.Unmarshal(c.body, &r); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	g, err := s.prepareGet(&r)
	if err != nil {
		return errorAnswer(err)
	}
	if a := s.strongRead(g.table, g.consistent); a != nil {
		return *a
	}
	s.pause(c)
	it := s.read(g.table, g.name, g.key, g.consistent)
	use := newConsumption(r.ReturnConsumedCapacity)
	use.add(g.table, readUnits(it.size(), readFactor(g.consistent)), 0)
	s.record(OpGetItem, use)
	out := map[string]any{}
	if it != nil {
		if g.projection != nil {
			it = project(it, g.projection)
		}
		out["Item"] = it.raw()
	}
	if cc := use.single(); cc != nil {
		out["ConsumedCapacity"] = cc
	}
	return answerJSON(out)
}

// read reads an item: its last committed value, or for an eventually
// consistent read on a store WithStaleReads, possibly an older one.
func (s *Server) read(table, name string, key attrs, consistent bool) attrs {
	if !consistent {
		if it, ok := s.stale(name); ok {
			return it
		}
	}
	return s.readItem(table, key)
}

// batchGet serves BatchGetItem.
func (s *Server) batchGet(c *call) answer {
	var in struct {
		RequestItems map[string]struct {
			Keys                     []item
			ProjectionExpression     *string
			ExpressionAttributeNames map[string]string
			ConsistentRead           bool
			AttributesToGet          json.RawMessage
		}
		ReturnConsumedCapacity string
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	var gets []*get
	seen := map[string]bool{}
	for _, table := range sortedKeys(in.RequestItems) {
		ka := in.RequestItems[table]
		for _, k := range ka.Keys {
			g, err := s.prepareGet(&readRequest{TableName: table, Key: k, ProjectionExpression: ka.ProjectionExpression,
				ExpressionAttributeNames: ka.ExpressionAttributeNames, ConsistentRead: ka.ConsistentRead, AttributesToGet: ka.AttributesToGet})
			if err != nil {
				return errorAnswer(err)
			}
			if seen[g.name] {
				return errorAnswer(invalidf("Provided list of item keys contains duplicates"))
			}
			seen[g.name] = true
			gets = append(gets, g)
		}
	}
	if len(gets) == 0 || len(gets) > 100 {
		return errorAnswer(invalidf("Too many items requested for the BatchGetItem call"))
	}
	for _, g := range gets {
		if a := s.strongRead(g.table, g.consistent); a != nil {
			return *a
		}
	}
	s.pause(c)
	use := newConsumption(in.ReturnConsumedCapacity)
	responses := map[string][]item{}
	for _, g := range gets {
		it := s.read(g.table, g.name, g.key, g.consistent)
		use.add(g.table, readUnits(it.size(), readFactor(g.consistent)), 0)
		if responses[g.table] == nil {
			responses[g.table] = []item{}
		}
		if it != nil {
			if g.projection != nil {
				it = project(it, g.projection)
			}
			responses[g.table] = append(responses[g.table], it.raw())
		}
	}
	s.record(OpBatchGetItem, use)
	out := map[string]any{"Responses": responses, "UnprocessedKeys": map[string]any{}}
	if cc := use.list(); cc != nil {
		out["ConsumedCapacity"] = cc
	}
	return answerJSON(out)
}

// transactGet serves TransactGetItems: cancelled with TransactionConflict
// where a write in progress (a transaction, or a PutItem, UpdateItem,
// DeleteItem or BatchWriteItem) holds an item, as DynamoDB does; else
// every item is read at one instant, no write committing among the reads,
// so the answer is never half a transaction.
func (s *Server) transactGet(c *call) answer {
	var in struct {
		TransactItems []struct {
			Get *readRequest
		}
		ReturnConsumedCapacity string
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	switch n := len(in.TransactItems); {
	case n == 0:
		return errorAnswer(invalidf("1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1"))
	case n > maxTxActions:
		return errorAnswer(invalidf("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", maxTxActions))
	}
	gets := make([]*get, len(in.TransactItems))
	seen := map[string]bool{}
	for i, ti := range in.TransactItems {
		if ti.Get == nil {
			return errorAnswer(invalidf("1 validation error detected: Value null at 'transactItems.%d.member.get' failed to satisfy constraint: Member must not be null", i+1))
		}
		g, err := s.prepareGet(ti.Get)
		if err != nil {
			return errorAnswer(err)
		}
		if seen[g.name] {
			return errorAnswer(invalidf("Transaction request cannot include multiple operations on one item"))
		}
		seen[g.name] = true
		gets[i] = g
	}
	tables := make([]string, len(gets))
	for i, g := range gets {
		tables[i] = g.table
	}
	if err := s.noStrongTransactions(tables); err != nil {
		return errorAnswer(err)
	}
	if a, done := c.fault.cancel(len(gets)); done {
		return a
	}
	s.pause(c)

	// The reads run under the lock commits take: every item as of one
	// instant. A write holding an item cancels the read, as on DynamoDB.
	s.schema.RLock()
	reasons := noneReasons(len(gets))
	conflict := false
	s.mu.Lock()
	for i, g := range gets {
		if s.held[g.name] != nil {
			reasons[i] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}
			conflict = true
		}
	}
	if conflict {
		s.stats.ConflictCancellations++
	}
	s.mu.Unlock()
	if conflict {
		s.schema.RUnlock()
		return cancelled(reasons)
	}
	items := make([]attrs, len(gets))
	for i, g := range gets {
		items[i] = s.readLocked(g.table, g.key)
	}
	s.schema.RUnlock()

	use := newConsumption(in.ReturnConsumedCapacity)
	responses := make([]map[string]any, len(gets))
	for i, g := range gets {
		it := items[i]
		use.add(g.table, readUnits(it.size(), 2), 0)
		responses[i] = map[string]any{}
		if it != nil {
			if g.projection != nil {
				it = project(it, g.projection)
			}
			responses[i]["Item"] = it.raw()
		}
	}
	s.record(OpTransactGetItems, use)
	out := map[string]any{"Responses": responses}
	if cc := use.list(); cc != nil {
		out["ConsumedCapacity"] = cc
	}
	return answerJSON(out)
}

// strongRead refuses a strongly consistent read of an MRSC global table in
// a Region that cannot reach a second member: it cannot know the latest
// version. Eventually consistent reads answer from the local replica.
func (s *Server) strongRead(table string, consistent bool) *answer {
	if !consistent || s.g == nil || s.g.mode != MRSC {
		return nil
	}
	if meta, err := s.table(table); err != nil || meta.gt == nil {
		return nil
	}
	s.g.mu.Lock()
	ok := s.g.quorum(s.region)
	if !ok {
		s.g.stats.Unavailable++
	}
	s.g.mu.Unlock()
	if ok {
		return nil
	}
	a := unavailable(false)
	return &a
}

// version is an item as a write committed it (nil: deleted).
type version struct {
	at time.Time
	it attrs
}

// WithStaleReads makes eventually consistent reads (GetItem and
// BatchGetItem without ConsistentRead) return an item as it was lag ago:
// the last version committed before then, which may be older than the
// last committed value, as DynamoDB's eventually consistent reads may be
// ("Read consistency"). Code that reads without ConsistentRead where it
// needs its own last write then fails a test as it would fail on AWS.
// Strongly consistent reads, transactions, Query and Scan are not
// affected. The default, 0, serves every read the last committed value.
func WithStaleReads(lag time.Duration) Option {
	return func(s *Server) { s.staleLag = lag }
}

// remember records a committed version for stale reads; call it holding
// s.schema for writing.
func (s *Server) remember(table, name string, key, it attrs, now time.Time) {
	if s.staleLag <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.history[name]
	if len(h) == 0 {
		// The item as it was before its first remembered write is unknown
		// here: absent, as if it were written before the store kept any.
		h = []version{{at: time.Time{}, it: nil}}
	}
	h = append(h, version{at: now, it: it})
	// Keep the last version older than the lag and every one since.
	cut := 0
	for i, v := range h {
		if now.Sub(v.at) >= s.staleLag {
			cut = i
		}
	}
	s.history[name] = h[cut:]
}

// stale returns the version an eventually consistent read sees, when
// the store keeps one.
func (s *Server) stale(name string) (attrs, bool) {
	if s.staleLag <= 0 {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.history[name]
	if len(h) == 0 {
		return nil, false
	}
	cutoff := time.Now().Add(-s.staleLag)
	var seen *version
	for i := range h {
		if !h[i].at.After(cutoff) {
			seen = &h[i]
		}
	}
	if seen == nil {
		return nil, false
	}
	return seen.it, true
}
