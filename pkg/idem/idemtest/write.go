package idemtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The write path. Every write is checked as DynamoDB checks it before it
// holds anything (its table, key, values, expressions, sizes); then,
// holding its items, the store reads each item's last committed value,
// evaluates the condition, computes the new item (exact numbers), checks
// its size, and stores the puts and deletes, all of a request at once
// (commit).

// maxItemSize is DynamoDB's item size limit, 400 KB ("Service, account,
// and table quotas").
const maxItemSize = 400 * 1024

// maxTxSize is the limit on a transaction's items together, 4 MB
// ("Amazon DynamoDB Transactions: How it works").
const maxTxSize = 4 * 1024 * 1024

// maxTxActions is the most actions one transaction may hold.
const maxTxActions = 100

// writeRequest is the parameters of a PutItem, UpdateItem, DeleteItem or
// of one action of a TransactWriteItems.
type writeRequest struct {
	TableName                           string
	Item                                item
	Key                                 item
	ConditionExpression                 *string
	UpdateExpression                    *string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           item
	ReturnValues                        string
	ReturnValuesOnConditionCheckFailure string
	ReturnConsumedCapacity              string
	// The legacy parameters, which the store does not evaluate.
	Expected            json.RawMessage
	AttributeUpdates    json.RawMessage
	ConditionalOperator json.RawMessage
}

// action is one write, checked, then evaluated under its item's hold.
type action struct {
	kind   string // Put, Update, Delete, ConditionCheck
	table  string
	meta   *tableMeta
	key    attrs
	name   string // the item's lock name
	put    attrs
	cond   *cond
	upd    *updateExpr
	allOld bool // ReturnValuesOnConditionCheckFailure ALL_OLD

	// Evaluated under the hold:
	old, next attrs
}

// prepare checks a write as DynamoDB does before running it.
func (s *Server) prepare(kind string, r *writeRequest) (*action, error) {
	for name, raw := range map[string]json.RawMessage{"Expected": r.Expected, "AttributeUpdates": r.AttributeUpdates, "ConditionalOperator": r.ConditionalOperator} {
		if len(raw) > 0 && string(raw) != "null" {
			return nil, invalidf("idemtest: the legacy parameter %s is not supported; use expressions", name)
		}
	}
	meta, err := s.table(r.TableName)
	if err != nil {
		return nil, err
	}
	a := &action{kind: kind, table: r.TableName, meta: meta}
	e, err := newExprs(r.ExpressionAttributeNames, r.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	if kind == "Put" {
		if a.put, err = decodeAttrs(r.Item); err != nil {
			return nil, err
		}
		if err := meta.checkItem(a.put); err != nil {
			return nil, err
		}
		if a.put.size() > maxItemSize {
			return nil, invalidf("One or more parameter values were invalid: Item size has exceeded the maximum allowed size")
		}
		a.key = meta.keyOfItem(a.put)
	} else {
		if a.key, err = decodeAttrs(r.Key); err != nil {
			return nil, err
		}
		if err := meta.checkKey(a.key); err != nil {
			return nil, err
		}
	}
	if r.UpdateExpression != nil {
		if kind != "Update" {
			return nil, invalidf("Unexpected parameter UpdateExpression")
		}
		if a.upd, err = e.update(*r.UpdateExpression, meta.keyNames()); err != nil {
			return nil, err
		}
	}
	if r.ConditionExpression != nil {
		if a.cond, err = e.condition("ConditionExpression", *r.ConditionExpression); err != nil {
			return nil, err
		}
	}
	if err := e.unused(); err != nil {
		return nil, err
	}
	switch r.ReturnValuesOnConditionCheckFailure {
	case "", "NONE":
	case "ALL_OLD":
		a.allOld = true
	default:
		return nil, invalidf("1 validation error detected: Value '%s' at 'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]", r.ReturnValuesOnConditionCheckFailure)
	}
	a.name = itemName(r.TableName, a.key)
	return a, nil
}

// itemName is the name under which an item is held: its table and key,
// numbers by value.
func itemName(table string, key attrs) string {
	var b strings.Builder
	b.WriteString(table)
	for _, n := range sortedKeys(key) {
		v := key[n]
		text := v.s
		if v.t == "N" {
			if d, err := parseNumber(v.s); err == nil {
				text = canonicalNumber(d)
			}
		}
		fmt.Fprintf(&b, "\x00%s=%s:%s", n, v.t, text)
	}
	return b.String()
}

// outcome is how an action fared against its item.
type outcome struct {
	failed  bool   // its condition failed
	invalid string // the update cannot apply: DynamoDB's message
}

// evaluate reads the action's item and computes what it writes; call it
// holding the item.
func (s *Server) evaluate(a *action) outcome {
	a.old = s.readItem(a.table, a.key)
	if a.cond != nil && !a.cond.eval(a.old) {
		return outcome{failed: true}
	}
	switch a.kind {
	case "Put":
		a.next = a.put
	case "Delete":
		a.next = nil
	case "ConditionCheck":
		a.next = a.old
	case "Update":
		next := a.old.clone()
		if next == nil {
			next = a.key.clone()
		}
		if a.upd != nil {
			var err error
			if next, err = a.upd.apply(a.old, a.key); err != nil {
				return outcome{invalid: err.Error()}
			}
		}
		if next.size() > maxItemSize {
			return outcome{invalid: "Item size to update has exceeded the maximum allowed size"}
		}
		if err := a.meta.checkIndexKeys(next); err != nil {
			return outcome{invalid: err.Error()}
		}
		a.next = next
	}
	return outcome{}
}

// writes reports whether the action changes its item.
func (a *action) writes() bool { return a.kind != "ConditionCheck" }

// writeUnits is the write units the action consumes outside a
// transaction: the larger of its item before and after, per KB.
func (a *action) writeUnits() float64 {
	return writeUnits(max(a.old.size(), a.next.size()))
}

// commit applies the writes of one request at once: no read sees some
// of them without the others. A request on a table deleted since it was
// checked writes nothing. A global table's writes are stamped for last
// writer wins, recorded in its stream and sent to its other replicas
// (MREC), or applied to every replica at once (MRSC).
func (s *Server) commit(actions []*action) error {
	if s.g != nil && s.g.mode == MRSC && strong(actions) {
		return s.g.commitStrong(s, actions)
	}
	s.schema.Lock()
	defer s.schema.Unlock()
	for _, a := range actions {
		if s.data[a.table] == nil {
			return &apiError{code: "ResourceNotFoundException", msg: "Requested resource not found"}
		}
	}
	now := time.Now()
	for _, a := range actions {
		if !a.writes() {
			continue
		}
		d := s.data[a.table]
		pk := d.meta.primaryKey(a.key)
		old := d.write(a.key, pk, a.next)
		s.remember(a.table, a.name, a.key, a.next, now)
		if gt := d.meta.gt; gt != nil {
			st := s.stampFor(d, pk, now)
			d.stamps[pk] = st
			s.appendStream(d, a.key, old, a.next, s.region, now)
			s.g.send(s.region, gt, change{table: a.table, pk: pk, name: a.name, key: a.key, item: a.next, st: st}, now)
		}
	}
	return nil
}

// strong reports whether a request writes a table of a global table with
// multi-Region strong consistency.
func strong(actions []*action) bool {
	return slices.ContainsFunc(actions, func(a *action) bool { return a.meta.gt != nil })
}

// strongNames are the items of an MRSC global table a request writes.
func (s *Server) strongNames(actions []*action) []string {
	if s.g == nil || s.g.mode != MRSC {
		return nil
	}
	var names []string
	for _, a := range actions {
		if a.meta.gt != nil {
			names = append(names, a.name)
		}
	}
	return names
}

// noStrongTransactions refuses a transaction on a table of an MRSC global
// table, which DynamoDB does not support.
func (s *Server) noStrongTransactions(tables []string) error {
	if s.g == nil || s.g.mode != MRSC {
		return nil
	}
	for _, table := range tables {
		if meta, err := s.table(table); err == nil && meta.gt != nil {
			return invalidf("Transactions are not supported for global tables with MultiRegionConsistency set to STRONG")
		}
	}
	return nil
}

// writeItem serves PutItem, UpdateItem and DeleteItem.
func (s *Server) writeItem(c *call) answer {
	var r writeRequest
	if err := json.Unmarshal(c.body, &r); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	kind := strings.TrimSuffix(string(c.op), "Item")
	switch {
	case kind == "Update" && r.Item != nil, kind != "Put" && r.Key == nil:
		return errorAnswer(invalidf("1 validation error detected: Value null at 'key' failed to satisfy constraint: Member must not be null"))
	case kind == "Put" && r.Item == nil:
		return errorAnswer(invalidf("1 validation error detected: Value null at 'item' failed to satisfy constraint: Member must not be null"))
	}
	switch r.ReturnValues {
	case "", "NONE", "ALL_OLD":
	case "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW":
		if kind != "Update" {
			return errorAnswer(invalidf("ReturnValues can only be ALL_OLD or NONE"))
		}
	default:
		return errorAnswer(invalidf("1 validation error detected: Value '%s' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]", r.ReturnValues))
	}
	a, err := s.prepare(kind, &r)
	if err != nil {
		return errorAnswer(err)
	}
	if !s.holdOne(a.name) {
		s.mu.Lock()
		s.stats.ConflictExceptions++
		s.mu.Unlock()
		return answerError(http.StatusBadRequest, "TransactionConflictException", "Transaction is ongoing for the item")
	}
	defer s.unhold([]string{a.name})
	if names := s.strongNames([]*action{a}); names != nil {
		release, refused := s.g.strongBegin(s.region, names)
		if refused != nil {
			return *refused
		}
		defer release()
	}
	s.pause(c)

	use := newConsumption(r.ReturnConsumedCapacity)
	defer s.record(c.op, use)
	o := s.evaluate(a)
	switch {
	case o.failed:
		use.add(a.table, 0, writeUnits(a.old.size()))
		out := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "message": "The conditional request failed"}
		if a.allOld && a.old != nil {
			out["Item"] = a.old.raw()
		}
		b, _ := json.Marshal(out)
		return answer{status: http.StatusBadRequest, body: b}
	case o.invalid != "":
		return errorAnswer(invalidf("%s", o.invalid))
	}
	if err := s.commit([]*action{a}); err != nil {
		return errorAnswer(err)
	}
	use.add(a.table, 0, a.writeUnits())
	use.indexWrites(a.table, a.meta, a.old, a.next)
	if kind == "Put" && s.onPut != nil {
		raw, _ := json.Marshal(a.put.raw())
		s.onPut(a.table, raw)
	}
	out := map[string]any{}
	if cc := use.single(); cc != nil {
		out["ConsumedCapacity"] = cc
	}
	if ret := returnValues(r.ReturnValues, a); ret != nil {
		out["Attributes"] = ret.raw()
	}
	return answerJSON(out)
}

// returnValues is what ReturnValues asks of a write that succeeded.
func returnValues(mode string, a *action) attrs {
	var out attrs
	switch mode {
	case "ALL_OLD":
		out = a.old
	case "ALL_NEW":
		out = a.next
	case "UPDATED_OLD", "UPDATED_NEW":
		src := a.next
		if mode == "UPDATED_OLD" {
			src = a.old
		}
		if a.upd != nil {
			out = project(src, a.upd.paths())
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// transactWrite serves TransactWriteItems.
func (s *Server) transactWrite(c *call) answer {
	var in struct {
		ClientRequestToken     string
		ReturnConsumedCapacity string
		TransactItems          []struct {
			Put, Update, Delete, ConditionCheck *writeRequest
		}
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
	actions := make([]*action, len(in.TransactItems))
	seen := map[string]bool{}
	size := 0
	for i, ti := range in.TransactItems {
		var kind string
		var r *writeRequest
		count := 0
		for k, v := range map[string]*writeRequest{"Put": ti.Put, "Update": ti.Update, "Delete": ti.Delete, "ConditionCheck": ti.ConditionCheck} {
			if v != nil {
				kind, r = k, v
				count++
			}
		}
		if count != 1 {
			return errorAnswer(invalidf("TransactItems can only contain one of Check, Put, Update or Delete"))
		}
		switch {
		case kind == "Update" && r.UpdateExpression == nil:
			return errorAnswer(invalidf("1 validation error detected: Value null at 'transactItems.%d.member.update.updateExpression' failed to satisfy constraint: Member must not be null", i+1))
		case kind == "ConditionCheck" && r.ConditionExpression == nil:
			return errorAnswer(invalidf("1 validation error detected: Value null at 'transactItems.%d.member.conditionCheck.conditionExpression' failed to satisfy constraint: Member must not be null", i+1))
		}
		a, err := s.prepare(kind, r)
		if err != nil {
			return errorAnswer(err)
		}
		if seen[a.name] {
			return errorAnswer(invalidf("Transaction request cannot include multiple operations on one item"))
		}
		seen[a.name] = true
		actions[i] = a
		// The items' aggregate size: a Put's item, the key of the others.
		if a.put != nil {
			size += a.put.size()
		} else {
			size += a.key.size()
		}
	}
	if size > maxTxSize {
		return errorAnswer(invalidf("Transaction request size has exceeded the maximum allowed size of 4 MB"))
	}
	tables := make([]string, len(actions))
	for i, a := range actions {
		tables[i] = a.table
	}
	if err := s.noStrongTransactions(tables); err != nil {
		return errorAnswer(err)
	}

	if a, done := c.fault.cancel(len(actions)); done {
		return a
	}
	if a, done := s.repeatedToken(in.ClientRequestToken, c.body); done {
		return a
	}
	use := newConsumption(in.ReturnConsumedCapacity)
	defer s.record(OpTransactWriteItems, use)
	reasons, held, failed := s.prepareTx(actions)
	defer s.unhold(held)
	if failed {
		if len(held) > 0 {
			s.pause(c) // a Hold or an injected latency parks it holding them
		}
		// A cancelled transaction has run its prepare phase: one write
		// unit per KB of each item it met.
		for _, a := range actions {
			use.add(a.table, 0, writeUnits(a.old.size()))
		}
		s.endToken(in.ClientRequestToken, false)
		return cancelled(reasons)
	}
	s.pause(c)
	s.mu.Lock()
	latency := s.txLatency
	s.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	if err := s.commit(actions); err != nil {
		s.endToken(in.ClientRequestToken, false)
		return errorAnswer(err)
	}
	s.endToken(in.ClientRequestToken, true)
	for _, a := range actions {
		use.add(a.table, 0, 2*a.writeUnits())
		if a.writes() {
			use.indexWrites(a.table, a.meta, a.old, a.next)
		}
	}
	if s.onPut != nil {
		for _, a := range actions {
			if a.kind == "Put" {
				raw, _ := json.Marshal(a.put.raw())
				s.onPut(a.table, raw)
			}
		}
	}
	out := map[string]any{}
	if cc := use.list(); cc != nil {
		out["ConsumedCapacity"] = cc
	}
	return answerJSON(out)
}

// batchWrite serves BatchWriteItem. A request whose item a transaction
// holds is not applied and comes back in UnprocessedItems, which callers
// of BatchWriteItem must retry anyway; the rest are held together, after
// any single-item writes on them, like a transaction's items, and applied
// at once.
func (s *Server) batchWrite(c *call) answer {
	type req = struct {
		PutRequest    *struct{ Item item } `json:",omitempty"`
		DeleteRequest *struct{ Key item }  `json:",omitempty"`
	}
	var in struct {
		RequestItems           map[string][]req
		ReturnConsumedCapacity string
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		return answerError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	// Every request checked first: a batch DynamoDB refuses holds nothing.
	type entry struct {
		a *action
		r req
	}
	var entries []entry
	seen := map[string]bool{}
	total := 0
	for _, table := range sortedKeys(in.RequestItems) {
		for _, r := range in.RequestItems[table] {
			total++
			var a *action
			var err error
			switch {
			case r.PutRequest != nil && r.DeleteRequest == nil:
				a, err = s.prepare("Put", &writeRequest{TableName: table, Item: r.PutRequest.Item})
			case r.DeleteRequest != nil && r.PutRequest == nil:
				a, err = s.prepare("Delete", &writeRequest{TableName: table, Key: r.DeleteRequest.Key})
			default:
				err = invalidf("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
			}
			if err != nil {
				return errorAnswer(err)
			}
			if seen[a.name] {
				return errorAnswer(invalidf("Provided list of item keys contains duplicates"))
			}
			seen[a.name] = true
			entries = append(entries, entry{a: a, r: r})
		}
	}
	if total == 0 || total > 25 {
		return errorAnswer(invalidf("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]"))
	}
	var apply []*action
	unprocessed := map[string][]req{}
	var names []string
	for {
		s.mu.Lock()
		var wait chan struct{}
		for _, e := range entries {
			if h := s.held[e.a.name]; h != nil && !h.tx {
				wait = h.done
			}
		}
		if wait == nil {
			for _, e := range entries {
				if h := s.held[e.a.name]; h != nil {
					unprocessed[e.a.table] = append(unprocessed[e.a.table], e.r)
					continue
				}
				s.held[e.a.name] = &holder{done: make(chan struct{})}
				names = append(names, e.a.name)
				apply = append(apply, e.a)
			}
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		<-wait
	}
	defer s.unhold(names)
	if strongNames := s.strongNames(apply); strongNames != nil {
		release, refused := s.g.strongBegin(s.region, strongNames)
		if refused != nil {
			return *refused
		}
		defer release()
	}
	s.pause(c)
	use := newConsumption(in.ReturnConsumedCapacity)
	defer s.record(OpBatchWriteItem, use)
	for _, a := range apply {
		s.evaluate(a)
	}
	if err := s.commit(apply); err != nil {
		return errorAnswer(err)
	}
	for _, a := range apply {
		use.add(a.table, 0, a.writeUnits())
		use.indexWrites(a.table, a.meta, a.old, a.next)
	}
	if s.onPut != nil {
		for _, a := range apply {
			if a.kind == "Put" {
				raw, _ := json.Marshal(a.put.raw())
				s.onPut(a.table, raw)
			}
		}
	}
	out := map[string]any{"UnprocessedItems": unprocessed}
	if cc := use.list(); cc != nil {
		out["ConsumedCapacity"] = cc
	}
	return answerJSON(out)
}
