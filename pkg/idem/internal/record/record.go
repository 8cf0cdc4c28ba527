// Package record is the one reader of pkg/idem's records, and their
// format: pkg/idem reads its records with Decode, and so does
// pkg/idem/idemadmin.
//
// # Formats
//
// A completed record carries the response its key's first execution
// stored, in the format of the library that wrote it:
//
//   - Format 1 (no format attribute; every record written before issue
//     29): an HTTP response. response_status (N), response_headers (M of
//     S, absent when empty) and response_body (S, or B when not UTF-8).
//   - Format 2 (format = 2): the way in's result. response_body (S or B)
//     holds its bytes and response_meta (M of S, absent when empty) its
//     metadata, the way in's entries under their own names and the
//     library's under reserved names that begin with ':': its status
//     (MetaStatus) and why its body was not stored (MetaOmitted).
//
// The rule: the library writes only the latest format, and reads every
// format up to its own; a record of a later format is ErrCorrupt (the
// table is shared with a newer library: upgrade this one). A format 1
// record reads as the format 2 record idemhttp would write for the same
// response: its status, each header as an entry of its own name, and the
// Idempotent-Body-Omitted header, which only the store itself wrote, as
// the reason its body was omitted. So a record written before issue 29
// replays byte for byte through idemhttp, and as a value through Do.
// Only a completion writes the format attribute (a claim has no response
// to read), so a library of either format can complete the other's
// claim, and the record says which format its response is in.
package record

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

// Record statuses.
const (
	StatusInProgress = "IN_PROGRESS"
	StatusCompleted  = "COMPLETED"
)

// Format is the format this library writes, and the latest it reads.
const Format = 2

// WritesUnknown is Record.Writes of a record completed by a library that
// did not count its writes: it may have committed some.
const WritesUnknown = -1

// Reserved metadata keys: no HTTP header name holds a colon, so none
// collides with a header idemhttp stores under its own name.
const (
	// MetaStatus holds Result.Status: idemhttp's HTTP status, and a format
	// 1 record's response_status.
	MetaStatus = ":status"
	// MetaOmitted holds Result.Omitted.
	MetaOmitted = ":omitted"
)

// Result is the result a completed record holds (pkg/idem's Response).
type Result struct {
	// Status is the way in's status code; 0: none.
	Status int
	// Meta is the way in's own metadata, without the reserved entries.
	Meta map[string]string
	Body []byte
	// Omitted marks a result stored without its body (and, when they are
	// what cannot be stored, its metadata): the store records such a
	// result rather than leave its key open to run the effect again. It
	// says why: "too large" or "not storable".
	Omitted string
}

// meta is r's metadata as stored: the way in's entries, and the reserved
// ones for Status (when not 0) and Omitted (when set).
func (r Result) meta() map[string]string {
	if r.Status == 0 && r.Omitted == "" {
		return r.Meta
	}
	m := make(map[string]string, len(r.Meta)+2)
	maps.Copy(m, r.Meta)
	if r.Status != 0 {
		m[MetaStatus] = strconv.Itoa(r.Status)
	}
	if r.Omitted != "" {
		m[MetaOmitted] = r.Omitted
	}
	return m
}

// resultOf is the result whose stored form is body and meta: the
// reserved entries read into their fields (a status that is not a
// number, which this library never wrote, stays an entry).
func resultOf(body []byte, meta map[string]string) Result {
	r := Result{Body: body}
	for k, v := range meta {
		switch k {
		case MetaStatus:
			if n, err := strconv.Atoi(v); err == nil {
				r.Status = n
				continue
			}
		case MetaOmitted:
			r.Omitted = v
			continue
		}
		if r.Meta == nil {
			r.Meta = make(map[string]string, len(meta))
		}
		r.Meta[k] = v
	}
	return r
}

// Size is what the result costs in its record, as DynamoDB counts item
// sizes: the body's bytes, and for the metadata as stored a map's 3 bytes
// and, per entry, 1 byte besides its key's and value's.
func (r Result) Size() int {
	n := len(r.Body)
	if meta := r.meta(); len(meta) > 0 {
		n += 3
		for k, v := range meta {
			n += 1 + len(k) + len(v)
		}
	}
	return n
}

// headerOmitted is the header by which format 1 records marked a response
// stored without its body (idemhttp.HeaderBodyOmitted).
const headerOmitted = "Idempotent-Body-Omitted"

// ErrCorrupt reports a record that cannot be read: a required attribute
// missing or of another type, an unknown status, a later format.
var ErrCorrupt = errors.New("idem: corrupt idempotency record")

// Record is an idempotency record as stored, its result in the latest
// format whatever the format it was written in.
type Record struct {
	ID             string
	Status         string
	Fingerprint    string
	LeaseToken     string
	LeaseExpiresAt time.Time // millisecond precision
	CompletionID   string
	// Format is the format the record's result was written in: 1 or 2;
	// 0 for a record in progress.
	Format int
	// Result is the stored result, set when Status is COMPLETED.
	Result      Result
	CreatedAt   time.Time
	CompletedAt time.Time
	ExpiresAt   time.Time // second precision; DynamoDB TTL
	// Writes is the number of DynamoDB writes the key's first execution
	// committed in the transaction that completed the record (Execute's
	// and Transact's, an ExecuteBatch transaction's shared writes; 0 for
	// Run and Do), once COMPLETED: evicting the key runs them again.
	// WritesUnknown for a record completed before records counted them;
	// 0 for a record in progress, whose writes have not landed.
	Writes int
	// Intents are the writes, on a table with multi-Region strong
	// consistency, recorded with the completion and not all applied yet;
	// Marked the items whose updates carry the completion's apply-once
	// markers, once they are.
	Intents []Intent
	Marked  []Marked
	// Origin is the Region whose replica took the record's claim, and
	// Epoch the epoch of its home lease there ("" and 0 when the store
	// that claimed it was not told of Regions).
	Origin string
	Epoch  int64
}

// Intent is one write of an effect recorded with its key's completion,
// where no transaction can carry it (a table with multi-Region strong
// consistency), to be applied once, after the completion.
type Intent struct {
	// Index is the write's position in the effect.
	Index int
	// Op is "Put", "Update" or "Delete".
	Op    string
	Table string
	// Item is a Put's item; Key an Update's or a Delete's key.
	Item, Key map[string]types.AttributeValue
	// Condition, Update, Names and Values are the write's expressions.
	Condition, Update string
	Names             map[string]string
	Values            map[string]types.AttributeValue
	// At is what an Update's or a Delete's item was before the decision:
	// AtStamped, AtAbsent, or "" (recorded by a version that did not
	// stamp items).
	At string
}

// What an intent's item was before the decision.
const (
	// AtStamped: the item existed, and took the write's stamp.
	AtStamped = "stamped"
	// AtAbsent: there was no item.
	AtAbsent = "absent"
)

// Marked is an item whose update carries a completion's apply-once
// marker.
type Marked struct {
	Table  string
	Key    map[string]types.AttributeValue
	Marker string
}

// EncodeIntents is intents as a record stores them.
func EncodeIntents(intents []Intent) types.AttributeValue {
	list := make([]types.AttributeValue, len(intents))
	for i, in := range intents {
		m := map[string]types.AttributeValue{
			"i": ddbitem.N(int64(in.Index)), "op": ddbitem.S(in.Op), "t": ddbitem.S(in.Table),
		}
		if in.Item != nil {
			m["item"] = &types.AttributeValueMemberM{Value: in.Item}
		}
		if in.Key != nil {
			m["key"] = &types.AttributeValueMemberM{Value: in.Key}
		}
		if in.Condition != "" {
			m["c"] = ddbitem.S(in.Condition)
		}
		if in.Update != "" {
			m["u"] = ddbitem.S(in.Update)
		}
		if len(in.Names) > 0 {
			m["n"] = ddbitem.StringMap(in.Names)
		}
		if len(in.Values) > 0 {
			m["v"] = &types.AttributeValueMemberM{Value: in.Values}
		}
		if in.At != "" {
			m["at"] = ddbitem.S(in.At)
		}
		list[i] = &types.AttributeValueMemberM{Value: m}
	}
	return &types.AttributeValueMemberL{Value: list}
}

// EncodeMarked is marked as a record stores it.
func EncodeMarked(marked []Marked) types.AttributeValue {
	list := make([]types.AttributeValue, len(marked))
	for i, mk := range marked {
		list[i] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"t": ddbitem.S(mk.Table), "key": &types.AttributeValueMemberM{Value: mk.Key}, "m": ddbitem.S(mk.Marker),
		}}
	}
	return &types.AttributeValueMemberL{Value: list}
}

// decodeIntents reads a record's intents, if it has any.
func decodeIntents(item map[string]types.AttributeValue, attr string) ([]Intent, error) {
	var out []Intent
	err := eachMap(item, attr, func(m map[string]types.AttributeValue) error {
		r := ddbitem.Read(m)
		in := Intent{Index: int(r.Int("i")), Op: r.S("op"), Table: r.S("t")}
		in.Item, _ = optMap(m, "item")
		in.Key, _ = optMap(m, "key")
		in.Condition, _ = r.OptS("c")
		in.Update, _ = r.OptS("u")
		in.Names, _ = r.StringMap("n")
		in.Values, _ = optMap(m, "v")
		in.At, _ = r.OptS("at")
		if err := r.Err(); err != nil {
			return err
		}
		switch {
		case in.Op == "Put" && in.Item != nil, in.Op == "Update" && in.Key != nil && in.Update != "", in.Op == "Delete" && in.Key != nil:
		default:
			return fmt.Errorf("intent %d: %s without what it writes", in.Index, in.Op)
		}
		out = append(out, in)
		return nil
	})
	return out, err
}

// decodeMarked reads a record's marked items.
func decodeMarked(item map[string]types.AttributeValue, attr string) ([]Marked, error) {
	var out []Marked
	err := eachMap(item, attr, func(m map[string]types.AttributeValue) error {
		r := ddbitem.Read(m)
		mk := Marked{Table: r.S("t"), Marker: r.S("m")}
		mk.Key, _ = optMap(m, "key")
		if err := r.Err(); err != nil {
			return err
		}
		if mk.Key == nil {
			return errors.New("a marked item without its key")
		}
		out = append(out, mk)
		return nil
	})
	return out, err
}

// eachMap calls fn with each map of the list attribute attr, if item has it.
func eachMap(item map[string]types.AttributeValue, attr string, fn func(map[string]types.AttributeValue) error) error {
	av, ok := item[attr]
	if !ok {
		return nil
	}
	l, ok := av.(*types.AttributeValueMemberL)
	if !ok {
		return fmt.Errorf("%s is not a list", attr)
	}
	for _, e := range l.Value {
		m, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return fmt.Errorf("%s holds an element that is not a map", attr)
		}
		if err := fn(m.Value); err != nil {
			return fmt.Errorf("%s: %w", attr, err)
		}
	}
	return nil
}

// optMap is the map attribute name of m; ok is false when absent.
func optMap(m map[string]types.AttributeValue, name string) (map[string]types.AttributeValue, bool) {
	v, ok := m[name].(*types.AttributeValueMemberM)
	if !ok {
		return nil, false
	}
	return v.Value, true
}

// Expired mirrors the claim condition's "expires_at < :now_s".
func (r Record) Expired(now time.Time) bool { return r.ExpiresAt.Unix() < now.Unix() }

// Decode reads an item in layout l (with its defaults); a missing or
// mistyped required attribute is ErrCorrupt, never a panic.
func Decode(l idemtable.Layout, item map[string]types.AttributeValue) (Record, error) {
	attr := l.Attributes
	in := ddbitem.Read(item)
	id, hasKey := l.ID(item)
	r := Record{
		ID:          id,
		Status:      in.S(attr.Status),
		Fingerprint: in.S(attr.Fingerprint),
		ExpiresAt:   time.Unix(in.Int(attr.ExpiresAt), 0),
	}
	r.LeaseToken, _ = in.OptS(attr.LeaseToken)
	r.CompletionID, _ = in.OptS(attr.CompletionID)
	if ms, ok := in.OptInt(attr.LeaseExpiresAt); ok {
		r.LeaseExpiresAt = time.UnixMilli(ms)
	}
	r.CreatedAt, _ = in.OptTime(attr.CreatedAt)
	r.CompletedAt, _ = in.OptTime(attr.CompletedAt)
	r.Origin, _ = in.OptS(attr.Origin)
	r.Epoch, _ = in.OptInt(attr.Epoch)
	var bad error
	if !hasKey {
		bad = fmt.Errorf("%w: no key of the store's layout", ErrCorrupt)
	}
	switch r.Status {
	case StatusInProgress:
		// Without both, no caller could ever take the key over.
		for _, a := range []string{attr.LeaseToken, attr.LeaseExpiresAt} {
			if !in.Has(a) && bad == nil {
				bad = fmt.Errorf("%w: in progress without %s", ErrCorrupt, a)
			}
		}
	case StatusCompleted:
		r.Format = 1
		if f, ok := in.OptInt(attr.Format); ok {
			r.Format = int(f)
		}
		r.Writes = WritesUnknown
		if n, ok := in.OptInt(attr.Writes); ok {
			r.Writes = int(n)
		}
		var err1, err2 error
		r.Intents, err1 = decodeIntents(item, attr.Intents)
		r.Marked, err2 = decodeMarked(item, attr.Markers)
		if err := errors.Join(err1, err2); err != nil && bad == nil {
			bad = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		switch r.Format {
		case 1:
			r.Result = formatOne(in, attr)
		case 2:
			meta, _ := in.StringMap(attr.ResponseMeta)
			r.Result = resultOf(in.Bytes(attr.ResponseBody), meta)
		default:
			if bad == nil {
				bad = fmt.Errorf("%w: format %d, this library reads up to %d: upgrade it", ErrCorrupt, r.Format, Format)
			}
		}
	default:
		if in.Err() == nil && bad == nil {
			bad = fmt.Errorf("%w: unknown status %q", ErrCorrupt, r.Status)
		}
	}
	if err := in.Err(); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if bad != nil {
		return Record{}, bad
	}
	return r, nil
}

// formatOne reads a format 1 record's HTTP response as the result
// idemhttp writes for it.
func formatOne(in *ddbitem.Reader, attr idemtable.Attributes) Result {
	headers, _ := in.StringMap(attr.ResponseHeaders)
	meta := make(map[string]string, len(headers)+1)
	for k, v := range headers {
		if k == headerOmitted {
			k = MetaOmitted
		}
		meta[k] = v
	}
	meta[MetaStatus] = strconv.FormatInt(in.Int(attr.ResponseStatus), 10)
	return resultOf(in.Bytes(attr.ResponseBody), meta)
}

// Item is the attributes of a completed result, in the latest format, to
// add to a record, with the number of DynamoDB writes committed with it.
func Item(attr idemtable.Attributes, r Result, writes int) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attr.Format:       ddbitem.N(Format),
		attr.ResponseBody: ddbitem.Blob(r.Body),
		attr.Writes:       ddbitem.N(int64(writes)),
	}
	meta := r.meta()
	// An empty map is left out: some DynamoDB-compatible servers give one
	// back as something else, and no metadata reads back as none.
	if len(meta) > 0 {
		item[attr.ResponseMeta] = ddbitem.StringMap(meta)
	}
	return item
}
