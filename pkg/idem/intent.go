package idem

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/ddbexpr"
	stored "github.com/idemlambda/idemlambda/pkg/idem/internal/record"
)

// On a table with multi-Region strong consistency (the package
// documentation's "Global tables") an Effect commits without a
// transaction, in steps under the holder's lease: its conditions are
// checked (guards: writes that change nothing), its Updates' and
// Deletes' items stamped, then its writes are recorded as intents in the
// key's fenced completion (one UpdateItem: the decision), then each is
// applied once, in order, and the record says so (the finish). Whoever
// finds a completion whose intents are not all applied (the key's next
// caller, the sweeper) applies them: each application is conditional on
// the marker it leaves on its item, and on its stamp, so a write applied
// twice changes nothing the second time, even where another writer
// replaced its item in between.

// The attributes the library leaves on, or reserves in, the items an
// Effect writes on such a table.
const (
	// markerAttribute holds, as a string set, the markers of the writes
	// applied to the item: a Put's, and every Update's until the sweeper
	// clears it with the record.
	markerAttribute = "idem_applied"
	// stampAttribute holds, as a string set, the stamps of the writes
	// recorded for the item and not applied yet: an Update's or a
	// Delete's, left before the key's decision, taken off by the write's
	// application.
	stampAttribute = "idem_pending"
	// noopAttribute is an attribute no item has: a guard on an item that
	// exists removes it, which changes nothing.
	noopAttribute = "idem_noop"
	// reservedPrefix begins the placeholders the library adds to a
	// write's expressions; a write's own may not.
	reservedPrefix = "idem_"
)

// pendingHold is how far a record whose intents are not all applied
// expires: a claim never takes it over before they are (the finish
// gives it its retention back).
const pendingHold = 10 * 365 * 24 * time.Hour

// guardAttempts bounds the probes of a guard on an item that keeps
// appearing and vanishing under it.
const guardAttempts = 3

// guard is a write's condition, checked before the completion.
type guard struct {
	index  int
	table  string
	key    map[string]types.AttributeValue
	cond   string
	names  map[string]string
	values map[string]types.AttributeValue
}

// intents reads eff as an Effect on a table without transactions: the
// writes to apply once after the completion (Put, Update, Delete), and
// the conditions to check before it (a ConditionCheck's, an Update's, a
// Delete's; a Put's is checked when it is applied, its key unknown to
// the library). It refuses with ErrInvalidEffect what it cannot apply
// exactly once: an Update whose condition tests an attribute it sets or
// removes (an optimistic lock, which only a transaction keeps), a write
// that uses the library's own names, two writes of one item, writes that
// would not fit the record with the response.
func (s *Store) intents(id string, eff Effect) ([]stored.Intent, []guard, error) {
	if err := s.checkEffect(id, eff); err != nil {
		return nil, nil, err
	}
	var intents []stored.Intent
	var guards []guard
	for i, w := range eff.Writes {
		in, g, err := intentOf(i, w)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: write %d: %w", ErrInvalidEffect, i, err)
		}
		if in != nil {
			intents = append(intents, *in)
		}
		if g != nil {
			guards = append(guards, *g)
		}
	}
	if err := oneWriteAnItem(intents); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidEffect, err)
	}
	if len(intents) > 0 {
		size := valueSize(stored.EncodeIntents(intents)) + eff.Response.size()
		if size > maxResponseBytesLimit {
			return nil, nil, fmt.Errorf("%w: the writes and the response take %d bytes in the key's record, at most %d without a transaction", ErrInvalidEffect, size, maxResponseBytesLimit)
		}
	}
	return intents, guards, nil
}

// intentOf is write i as an intent and a guard (either may be nil).
func intentOf(i int, w types.TransactWriteItem) (*stored.Intent, *guard, error) {
	switch {
	case w.Put != nil:
		p := w.Put
		if err := ownNames(p.ExpressionAttributeNames, p.ExpressionAttributeValues); err != nil {
			return nil, nil, err
		}
		for _, a := range []string{markerAttribute, stampAttribute} {
			if _, ok := p.Item[a]; ok {
				return nil, nil, fmt.Errorf("a Put of the attribute %s, which the library keeps", a)
			}
		}
		if err := readable(aws.ToString(p.ConditionExpression)); err != nil {
			return nil, nil, err
		}
		return &stored.Intent{Index: i, Op: "Put", Table: aws.ToString(p.TableName), Item: p.Item,
			Condition: aws.ToString(p.ConditionExpression), Names: p.ExpressionAttributeNames, Values: p.ExpressionAttributeValues}, nil, nil
	case w.Update != nil:
		u := w.Update
		in := &stored.Intent{Index: i, Op: "Update", Table: aws.ToString(u.TableName), Key: u.Key,
			Update: aws.ToString(u.UpdateExpression), Names: u.ExpressionAttributeNames, Values: u.ExpressionAttributeValues}
		if err := checkUpdate(in.Update, aws.ToString(u.ConditionExpression), u.ExpressionAttributeNames, u.ExpressionAttributeValues); err != nil {
			return nil, nil, err
		}
		return in, guardOf(i, in.Table, u.Key, u.ConditionExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues), nil
	case w.Delete != nil:
		d := w.Delete
		if err := ownNames(d.ExpressionAttributeNames, d.ExpressionAttributeValues); err != nil {
			return nil, nil, err
		}
		if err := readable(aws.ToString(d.ConditionExpression)); err != nil {
			return nil, nil, err
		}
		return &stored.Intent{Index: i, Op: "Delete", Table: aws.ToString(d.TableName), Key: d.Key,
				Condition: aws.ToString(d.ConditionExpression), Names: d.ExpressionAttributeNames, Values: d.ExpressionAttributeValues},
			guardOf(i, aws.ToString(d.TableName), d.Key, d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues), nil
	default: // checkEffect let only a ConditionCheck through
		c := w.ConditionCheck
		if err := ownNames(c.ExpressionAttributeNames, c.ExpressionAttributeValues); err != nil {
			return nil, nil, err
		}
		if err := readable(aws.ToString(c.ConditionExpression)); err != nil {
			return nil, nil, err
		}
		return nil, guardOf(i, aws.ToString(c.TableName), c.Key, c.ConditionExpression, c.ExpressionAttributeNames, c.ExpressionAttributeValues), nil
	}
}

// oneWriteAnItem refuses two writes of one item, as a transaction does:
// an Update's or a Delete's stamp would not survive a Put or a Delete of
// its item applied before it. A Put's item is another write's when it
// holds that write's key (a Put's own key is among its attributes, which
// the library cannot tell apart: two Puts of one item go through).
func oneWriteAnItem(intents []stored.Intent) error {
	for j, b := range intents {
		if b.Op == "Put" {
			continue
		}
		for i, a := range intents {
			if i == j || a.Table != b.Table || a.Op != "Put" && i > j {
				continue
			}
			within := a.Key
			if a.Op == "Put" {
				within = a.Item
			}
			same := len(b.Key) > 0
			for name, v := range b.Key {
				same = same && sameValue(within[name], v)
			}
			if same {
				first, second := min(a.Index, b.Index), max(a.Index, b.Index)
				return fmt.Errorf("writes %d and %d are of one item of %s, which a transaction refuses too: without one, the library could not apply each once", first, second, b.Table)
			}
		}
	}
	return nil
}

// sameValue reports whether a and b are the same key value (a string,
// number or binary).
func sameValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && string(a.Value) == string(b.Value)
	}
	return false
}

// guardOf is the guard of write i's condition, nil without one.
func guardOf(i int, table string, key map[string]types.AttributeValue, cond *string, names map[string]string, values map[string]types.AttributeValue) *guard {
	if aws.ToString(cond) == "" {
		return nil
	}
	return &guard{index: i, table: table, key: key, cond: *cond, names: names, values: values}
}

// checkUpdate refuses an Update the library cannot apply exactly once
// without a transaction: its condition is checked before the
// completion and not when it is applied, so it must not test what the
// update sets or removes (an optimistic lock: another writer's update
// in between would be lost). Its ADDs and DELETEs (to a counter, a set)
// hold whatever another writer did in between.
func checkUpdate(update, cond string, names map[string]string, values map[string]types.AttributeValue) error {
	if err := ownNames(names, values); err != nil {
		return err
	}
	actions, err := ddbexpr.Actions(update)
	if err != nil {
		return err
	}
	tested := map[string]bool{}
	if cond != "" {
		attrs, err := ddbexpr.Attributes(cond)
		if err != nil {
			return err
		}
		for _, a := range attrs {
			tested[resolve(a, names)] = true
		}
	}
	for _, a := range actions {
		target := resolve(a.Target, names)
		switch {
		case target == markerAttribute || target == stampAttribute:
			return fmt.Errorf("an Update of the attribute %s, which the library keeps", target)
		case (a.Clause == "SET" || a.Clause == "REMOVE") && tested[target]:
			return fmt.Errorf("an Update whose condition tests %s, which it sets or removes: without a transaction its condition is checked before the key's completion, not when it is applied, and another writer's update in between would be lost (use ADD, or a transaction on a regional table)", target)
		}
	}
	return nil
}

// ownNames refuses placeholders the library adds to a write's own.
func ownNames(names map[string]string, values map[string]types.AttributeValue) error {
	for n := range names {
		if strings.HasPrefix(n, "#"+reservedPrefix) {
			return fmt.Errorf("the placeholder %s: names beginning with #%s are the library's", n, reservedPrefix)
		}
	}
	for v := range values {
		if strings.HasPrefix(v, ":"+reservedPrefix) {
			return fmt.Errorf("the placeholder %s: values beginning with :%s are the library's", v, reservedPrefix)
		}
	}
	return nil
}

// readable refuses a condition the library cannot read.
func readable(cond string) error {
	if cond == "" {
		return nil
	}
	_, _, err := ddbexpr.Placeholders(cond)
	return err
}

// resolve is the attribute an expression's top-level path names: a
// placeholder's, or the bare name itself.
func resolve(written string, names map[string]string) string {
	if strings.HasPrefix(written, "#") {
		return names[written]
	}
	return written
}

// used is names and values kept to the placeholders exprs use, with add
// and addValues: DynamoDB refuses a placeholder an expression does not
// use.
func used(names map[string]string, values map[string]types.AttributeValue, add map[string]string, addValues map[string]types.AttributeValue, exprs ...string) (map[string]string, map[string]types.AttributeValue) {
	outN, outV := maps.Clone(add), maps.Clone(addValues)
	if outN == nil {
		outN = map[string]string{}
	}
	if outV == nil {
		outV = map[string]types.AttributeValue{}
	}
	for _, e := range exprs {
		ns, vs, _ := ddbexpr.Placeholders(e)
		for _, n := range ns {
			if v, ok := names[n]; ok {
				outN[n] = v
			}
		}
		for _, v := range vs {
			if av, ok := values[v]; ok {
				outV[v] = av
			}
		}
	}
	if len(outV) == 0 {
		outV = nil
	}
	return outN, outV
}

// keyName is one attribute of key, the same every time: every item of
// the table has it.
func keyName(key map[string]types.AttributeValue) string {
	return slices.Sorted(maps.Keys(key))[0]
}

// checkGuard checks g's condition against its item as it is now, with
// writes that change nothing: an UpdateItem (the item exists and the
// condition holds) or, when there is no item, a DeleteItem (the
// condition holds on no item). A failed condition wraps
// ErrConditionFailed, naming the write.
func (s *Store) checkGuard(ctx context.Context, g guard) error {
	k := keyName(g.key)
	for range guardAttempts {
		names, values := used(g.names, g.values,
			map[string]string{"#idem_k": k, "#idem_x": noopAttribute}, nil, g.cond)
		held, item, err := s.probe(ctx, g, func() error {
			_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(g.table), Key: g.key,
				ConditionExpression:                 aws.String("attribute_exists(#idem_k) AND (" + g.cond + ")"),
				UpdateExpression:                    aws.String("REMOVE #idem_x"),
				ExpressionAttributeNames:            names,
				ExpressionAttributeValues:           values,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			return err
		})
		switch {
		case err != nil || held:
			return err
		case len(item) > 0:
			return guardFailed(g, item)
		}
		names, values = used(g.names, g.values, map[string]string{"#idem_k": k}, nil, g.cond)
		held, item, err = s.probe(ctx, g, func() error {
			_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(g.table), Key: g.key,
				ConditionExpression:                 aws.String("attribute_not_exists(#idem_k) AND (" + g.cond + ")"),
				ExpressionAttributeNames:            names,
				ExpressionAttributeValues:           values,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			return err
		})
		switch {
		case err != nil || held:
			return err
		case len(item) == 0:
			return guardFailed(g, nil)
		}
		// The item appeared since: check it again.
	}
	return fmt.Errorf("idem: check write %d's condition: its item keeps appearing and vanishing: %w", g.index, busy())
}

// probe sends one of g's probes: held is true when its condition held;
// else, with a nil err, item is the item it failed on (none: there is
// no item). err is the store's.
func (s *Store) probe(ctx context.Context, g guard, send func() error) (held bool, item map[string]types.AttributeValue, err error) {
	var ccf *types.ConditionalCheckFailedException
	err = s.retryConflicts(ctx, send)
	switch {
	case err == nil:
		return true, nil, nil
	case !errors.As(err, &ccf):
		return false, nil, fmt.Errorf("idem: check write %d's condition: %w", g.index, err)
	}
	return false, ccf.Item, nil
}

// guardFailed is the error of write g's condition found false on item
// (nil: on no item).
func guardFailed(g guard, item map[string]types.AttributeValue) error {
	return &txError{Index: g.index, Code: "ConditionalCheckFailed", Message: "checked before the key's completion", Item: item, kind: ErrConditionFailed}
}

// decided is a key's completion recorded with its Effect's writes, to
// apply.
type decided struct {
	id, cid   string
	completed time.Time
	intents   []stored.Intent
	// landed: the decision is recorded; what fails after it fails only
	// the application of its writes, which the key's next caller does.
	landed bool
	// retention is how long the record replays once its writes are
	// applied: the deciding call's (CallRetention), or in a recovery the
	// recovering call's, which every call of an operation passes alike.
	retention time.Duration
}

// expires is the expiry of d's record once its writes are applied: the
// one its completion would have written without them.
func (d decided) expires() time.Time {
	return time.Unix(d.completed.Add(d.retention).Unix(), 0)
}

// commitStrong commits eff under lease l without a transaction: its
// guards, then the fenced completion that records its intents (the
// decision), then the intents applied. Before the decision, errors are
// ErrInvalidEffect, ErrConditionFailed (a guard failed) or ErrLeaseLost
// (nothing written), or the decision's DynamoDB error, whose landing is
// unknown: the caller's release finds out, and then applies d. After it
// (d.landed), an error is the application's: the writes left apply with
// the key's next call.
func (l *hold) commitStrong(ctx context.Context, eff Effect) (d decided, expires time.Time, err error) {
	s := l.store
	intents, guards, err := s.intents(l.id, eff)
	if err != nil {
		return decided{}, time.Time{}, err
	}
	for _, g := range guards {
		if err := s.checkGuard(ctx, g); err != nil {
			return decided{}, time.Time{}, err
		}
	}
	u, expires, cid, err := l.completion(eff.Response, len(eff.Writes))
	if err != nil {
		return decided{}, time.Time{}, err
	}
	if err := s.stampItems(ctx, cid, intents); err != nil {
		return decided{}, time.Time{}, err
	}
	d = decided{id: l.id, cid: cid, completed: l.completedAt, intents: intents, retention: l.retention}
	if len(intents) > 0 {
		// Until every write is applied, the record neither expires nor
		// can be taken over.
		u.ExpressionAttributeNames["#idem_in"] = s.attr.Intents
		u.ExpressionAttributeValues[":idem_in"] = stored.EncodeIntents(intents)
		u.ExpressionAttributeValues[":exp"] = num(l.completedAt.Add(pendingHold).Unix())
		u.UpdateExpression = aws.String(aws.ToString(u.UpdateExpression) + ", #idem_in = :idem_in")
	}
	if err := l.update(ctx, u, cid); err != nil {
		return d, time.Time{}, err
	}
	d.landed = true
	return d, expires, s.apply(ctx, d, false)
}

// applyPending applies the intents of rec, a completed record that a
// claim met, before its response is answered: a key's writes are all
// applied before any caller is told it completed.
func (s *Store) applyPending(ctx context.Context, rec record) (record, error) {
	if len(rec.Intents) == 0 {
		return rec, nil
	}
	d := decided{id: rec.ID, cid: rec.CompletionID, completed: rec.CompletedAt, intents: rec.Intents, retention: s.settingsFor(ctx).retention}
	if err := s.apply(ctx, d, true); err != nil {
		return rec, err
	}
	rec.Intents = nil
	rec.ExpiresAt = d.expires()
	return rec, nil
}

// apply applies d's intents, each once, in order, then records that they
// are (the finish). recovery: the call did not decide them.
func (s *Store) apply(ctx context.Context, d decided, recovery bool) (err error) {
	if len(d.intents) == 0 {
		return nil
	}
	t := traceOf(ctx)
	var applied, already int
	if t.IntentsStart != nil || t.IntentsDone != nil {
		ctx = start(ctx, t.IntentsStart, idemtrace.IntentsStartInfo{Writes: len(d.intents), Recovery: recovery})
		defer func() {
			event(ctx, t.IntentsDone, idemtrace.IntentsDoneInfo{Applied: applied, Already: already, Err: err})
		}()
	}
	var marked []stored.Marked
	for _, in := range d.intents {
		m := marker(d.cid, in.Index)
		was, err := s.applyOne(ctx, d, in, m)
		if err != nil {
			return err
		}
		if was {
			already++
		} else {
			applied++
		}
		if in.Op == "Update" {
			marked = append(marked, stored.Marked{Table: in.Table, Key: in.Key, Marker: m})
		}
	}
	return s.finish(ctx, d, marked)
}

// marker is the mark write i of the completion cid leaves on its item.
func marker(cid string, i int) string {
	sum := sha256.Sum256([]byte(cid + "/" + strconv.Itoa(i)))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// stampItems leaves, before the key's decision, the stamp m of each Update
// and Delete of intents (the marker its application leaves) on its item,
// in the item's stampAttribute, and records what it found (At): an
// application is conditional on its stamp, and takes it off. An item
// that has lost the stamp without the write's marker was replaced or
// deleted by another writer after the stamp; the write is not applied
// then: it counts as applied just before that write, which overwrote
// everything it would have changed (a PutItem replaces the whole item;
// a Delete of an item already gone, or replaced since, deletes nothing
// of the item it was decided on). An item missing at the stamp is
// recorded absent: an Update creates it, a Delete has nothing to delete.
// A commit that never decides leaves its stamps, which nothing reads.
func (s *Store) stampItems(ctx context.Context, cid string, intents []stored.Intent) error {
	for i := range intents {
		in := &intents[i]
		if in.Op == "Put" { // its key is among its item's attributes, which the library cannot tell apart
			continue
		}
		m := marker(cid, in.Index)
		err := s.retryConflicts(ctx, func() error {
			_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(in.Table), Key: in.Key,
				UpdateExpression:          aws.String("ADD #idem_p :idem_ms"),
				ConditionExpression:       aws.String("attribute_exists(#idem_k)"),
				ExpressionAttributeNames:  map[string]string{"#idem_p": stampAttribute, "#idem_k": keyName(in.Key)},
				ExpressionAttributeValues: map[string]types.AttributeValue{":idem_ms": &types.AttributeValueMemberSS{Value: []string{m}}},
			})
			return err
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			in.At = stored.AtStamped
		case errors.As(err, &ccf):
			in.At = stored.AtAbsent
		default:
			return fmt.Errorf("idem: stamp write %d's item (%s to %s): %w", in.Index, in.Op, in.Table, err)
		}
	}
	return nil
}

// applyOne applies one intent of d, conditional on its marker m, and on
// its stamp where it left one: already is true when it was applied
// before, or its item overwritten since. A Put whose own
// condition fails (an item another writer put under its key since the
// completion) wraps ErrConditionFailed and stays recorded; a Delete
// whose condition fails was applied before, or its item changed since:
// either way it is done.
func (s *Store) applyOne(ctx context.Context, d decided, in stored.Intent, m string) (already bool, err error) {
	var ccf *types.ConditionalCheckFailedException
	mark := map[string]string{"#idem_m": markerAttribute}
	// What an Update's condition is on its item, besides its marker's
	// absence: its stamp, where the item existed at the decision. An
	// Update of an item absent then has only its marker: the item found
	// without it is taken as another writer's creation, not this
	// completion's own replaced since, because an Update of a shared item
	// (a counter) is what other writers most often make, and skipping
	// would lose this write, even under a live concurrent applier.
	var onItem string
	switch {
	case in.At == stored.AtStamped:
		onItem = "contains(#idem_p, :idem_m)"
		mark["#idem_p"] = stampAttribute
	case in.At == stored.AtAbsent && in.Op == "Delete":
		return true, nil // nothing to delete when it was decided
	}
	err = s.retryConflicts(ctx, func() error {
		switch in.Op {
		case "Put":
			cond := "NOT contains(#idem_m, :idem_m)"
			if in.Condition != "" {
				cond = "(" + in.Condition + ") AND " + cond
			}
			item := maps.Clone(in.Item)
			item[markerAttribute] = &types.AttributeValueMemberSS{Value: []string{m}}
			names, values := used(in.Names, in.Values, mark, map[string]types.AttributeValue{":idem_m": str(m)}, cond)
			_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(in.Table), Item: item, ConditionExpression: aws.String(cond),
				ExpressionAttributeNames: names, ExpressionAttributeValues: values,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			return err
		case "Update":
			update, err := ddbexpr.AddAction(in.Update, "#idem_m :idem_ms")
			if err != nil {
				return err
			}
			cond := "NOT contains(#idem_m, :idem_m)"
			switch in.At {
			case stored.AtStamped:
				if update, err = ddbexpr.DeleteAction(update, "#idem_p :idem_ms"); err != nil {
					return err
				}
				cond = onItem
			case stored.AtAbsent:
				if onItem != "" {
					cond = onItem
				}
			}
			names, values := used(in.Names, in.Values, mark, map[string]types.AttributeValue{
				":idem_m": str(m), ":idem_ms": &types.AttributeValueMemberSS{Value: []string{m}},
			}, update, cond)
			_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(in.Table), Key: in.Key, UpdateExpression: aws.String(update),
				ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			})
			return err
		default: // Delete
			var cond *string
			if in.Condition != "" {
				cond = aws.String(in.Condition)
			}
			var add map[string]string
			var addValues map[string]types.AttributeValue
			if onItem != "" {
				if cond != nil {
					cond = aws.String("(" + *cond + ") AND " + onItem)
				} else {
					cond = aws.String(onItem)
				}
				add, addValues = map[string]string{"#idem_p": stampAttribute}, map[string]types.AttributeValue{":idem_m": str(m)}
			}
			names, values := used(in.Names, in.Values, add, addValues, aws.ToString(cond))
			if len(names) == 0 {
				names = nil
			}
			_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(in.Table), Key: in.Key, ConditionExpression: cond,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			})
			return err
		}
	})
	switch {
	case err == nil:
		return false, nil
	case !errors.As(err, &ccf):
		return false, fmt.Errorf("%w: write %d (%s to %s): %w", errNotApplied, in.Index, in.Op, in.Table, err)
	case in.Op == "Put" && !hasMarker(ccf.Item, m):
		return false, fmt.Errorf("%w: write %d (Put to %s): its condition failed when it was applied, after the key's completion: another writer put an item under its key since; it stays recorded, and the key's callers get this error until the item is removed or the key evicted: %w",
			ErrConditionFailed, in.Index, in.Table, err)
	}
	return true, nil
}

// hasMarker reports whether item carries the marker m.
func hasMarker(item map[string]types.AttributeValue, m string) bool {
	set, ok := item[markerAttribute].(*types.AttributeValueMemberSS)
	return ok && slices.Contains(set.Value, m)
}

// finish records that d's intents are applied: they go, the record gets
// its retention back, and the items whose updates carry markers are
// listed for the sweeper. Only the first of several callers finishing
// d writes it.
func (s *Store) finish(ctx context.Context, d decided, marks []stored.Marked) error {
	names := map[string]string{"#in": s.attr.Intents, "#exp": s.attr.ExpiresAt, "#cid": s.attr.CompletionID}
	values := map[string]types.AttributeValue{
		":exp": num(d.expires().Unix()), ":cid": str(d.cid),
	}
	update := "REMOVE #in SET #exp = :exp"
	if len(marks) > 0 {
		names["#mk"], values[":mk"] = s.attr.Markers, stored.EncodeMarked(marks)
		update += ", #mk = :mk"
	}
	var ccf *types.ConditionalCheckFailedException
	err := s.retryConflicts(ctx, func() error {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: s.key(d.id),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String("#cid = :cid AND attribute_exists(#in)"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		})
		return err
	})
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("%w: record them applied: %w", errNotApplied, err)
	}
	return nil
}
