package idemtest

import (
	"encoding/json"
	"net/http"
	"time"
)

// The read path: GetItem, BatchGetItem and TransactGetItems are served
// here (projection, capacity, consistency); Query and Scan are checked
// here and served by minidyn.

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
		in, _ := json.Marshal(map[string]any{"TableName": g.table, "Key": g.key.raw(), "ConsistentRead": true})
		items[i] = decodeItemAnswer(s.forwardLocked(OpGetItem, in), "Item")
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

// search serves Query and Scan: the request is checked here (its
// expressions parsed, placeholders defined and used, ConsistentRead
// allowed), then minidyn runs it; the capacity is counted from the items
// it read.
func (s *Server) search(c *call) answer {
	var in struct {
		TableName                 string
		IndexName                 string
		KeyConditionExpression    *string
		FilterExpression          *string
		ProjectionExpression      *string
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues item
		ConsistentRead            bool
		ReturnConsumedCapacity    string
		Select                    string
		KeyConditions             json.RawMessage
		QueryFilter               json.RawMessage
		ScanFilter                json.RawMessage
		AttributesToGet           json.RawMessage
		ConditionalOperator       json.RawMessage
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	for name, raw := range map[string]json.RawMessage{"KeyConditions": in.KeyConditions, "QueryFilter": in.QueryFilter,
		"ScanFilter": in.ScanFilter, "AttributesToGet": in.AttributesToGet, "ConditionalOperator": in.ConditionalOperator} {
		if len(raw) > 0 && string(raw) != "null" {
			return errorAnswer(invalidf("idemtest: the legacy parameter %s is not supported; use expressions", name))
		}
	}
	meta, err := s.table(in.TableName)
	if err != nil {
		return errorAnswer(err)
	}
	var ix *indexMeta
	if in.IndexName != "" {
		for _, m := range meta.indexes {
			if m.name == in.IndexName {
				ix = m
			}
		}
		if ix == nil {
			return errorAnswer(invalidf("The table does not have the specified index: %s", in.IndexName))
		}
		if ix.global && in.ConsistentRead {
			return errorAnswer(invalidf("Consistent reads are not supported on global secondary indexes"))
		}
	}
	e, err := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return errorAnswer(err)
	}
	if c.op == OpQuery && in.KeyConditionExpression == nil {
		return errorAnswer(invalidf("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."))
	}
	if in.KeyConditionExpression != nil {
		if c.op == OpScan {
			return errorAnswer(invalidf("Unexpected parameter KeyConditionExpression"))
		}
		if _, err := e.condition("KeyConditionExpression", *in.KeyConditionExpression); err != nil {
			return errorAnswer(err)
		}
	}
	if in.FilterExpression != nil {
		if _, err := e.condition("FilterExpression", *in.FilterExpression); err != nil {
			return errorAnswer(err)
		}
	}
	if in.ProjectionExpression != nil {
		if _, err := e.projection(*in.ProjectionExpression); err != nil {
			return errorAnswer(err)
		}
	}
	if err := e.unused(); err != nil {
		return errorAnswer(err)
	}
	s.pause(c)
	a := s.forward(c.op, c.body)
	if !a.ok() {
		return a
	}
	// The units: the items read, before the filter and the projection.
	var read struct{ Items []item }
	if in.FilterExpression != nil || in.ProjectionExpression != nil || in.Select == "COUNT" {
		var req map[string]json.RawMessage
		_ = json.Unmarshal(c.body, &req)
		delete(req, "FilterExpression")
		delete(req, "ProjectionExpression")
		delete(req, "Select")
		names := map[string]string{}
		values := item{}
		e2, _ := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
		if in.KeyConditionExpression != nil {
			_, _ = e2.condition("KeyConditionExpression", *in.KeyConditionExpression)
		}
		for k := range e2.usedNames {
			names[k] = in.ExpressionAttributeNames[k]
		}
		for k := range e2.usedValues {
			values[k] = in.ExpressionAttributeValues[k]
		}
		delete(req, "ExpressionAttributeNames")
		delete(req, "ExpressionAttributeValues")
		if len(names) > 0 {
			req["ExpressionAttributeNames"], _ = json.Marshal(names)
		}
		if len(values) > 0 {
			req["ExpressionAttributeValues"], _ = json.Marshal(values)
		}
		body, _ := json.Marshal(req)
		_ = json.Unmarshal(s.forward(c.op, body).body, &read)
	} else {
		_ = json.Unmarshal(a.body, &read)
	}
	size := 0
	for _, raw := range read.Items {
		if it, err := decodeAttrs(raw); err == nil {
			size += it.size()
		}
	}
	use := newConsumption(in.ReturnConsumedCapacity)
	units := readUnits(size, readFactor(in.ConsistentRead))
	if ix != nil {
		use.addIndex(in.TableName, ix, units, 0)
	} else {
		use.add(in.TableName, units, 0)
	}
	s.record(c.op, use)
	if cc := use.single(); cc != nil {
		var out map[string]json.RawMessage
		if json.Unmarshal(a.body, &out) == nil {
			out["ConsumedCapacity"], _ = json.Marshal(cc)
			return answerJSON(out)
		}
	}
	return a
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
