// Package embedded serves the in-process DynamoDB-compatible store the
// way DynamoDB answers, for the local runner and the tests: the strict
// store of pkg/idem/idemtest (transactions isolated as on AWS), with the
// puts it commits reported in order, which is what the local runner feeds
// the outbox relay from in place of DynamoDB Streams.
//
// Besides the DynamoDB JSON API, it answers GET /consumed with the
// capacity units the store has consumed since it started, per table and
// operation, counted as DynamoDB bills an on-demand table: every request,
// whatever its ReturnConsumedCapacity asked, failed conditions and
// cancelled transactions included (their answers carry no
// ConsumedCapacity, on DynamoDB as here). make bench-peer reads it.
package embedded

import (
	"encoding/json"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// Store is the embedded store and its HTTP handler.
type Store struct {
	// Server is the strict store, for fault injection and call counts.
	Server *idemtest.Server
	onPut  func(Put)
}

// Put is an item that a successful write request put into a table.
type Put struct {
	Table string
	Item  map[string]events.DynamoDBAttributeValue
}

// New returns an empty store; opts tune the strict store (a transaction
// latency, say).
func New(opts ...idemtest.Option) *Store {
	s := &Store{}
	s.Server = idemtest.NewServer(append(opts, idemtest.WithPutHook(s.put))...)
	return s
}

// OnPut registers fn to receive every item put by PutItem,
// TransactWriteItems or BatchWriteItem once the write has succeeded, in
// commit order for each item. Updates and deletes are not reported. Call
// it before the store serves requests.
func (s *Store) OnPut(fn func(Put)) { s.onPut = fn }

func (s *Store) put(table string, raw json.RawMessage) {
	if s.onPut == nil {
		return
	}
	var it map[string]events.DynamoDBAttributeValue
	if json.Unmarshal(raw, &it) == nil {
		s.onPut(Put{Table: table, Item: it})
	}
}

// ConsumedPath is where the store answers with its consumed capacity.
const ConsumedPath = "/consumed"

// Units are the capacity units one operation consumed on one table, and
// how many requests consumed them; the JSON of GET /consumed is
// map[table]map[operation]Units.
type Units struct {
	Read     float64 `json:"read"`
	Write    float64 `json:"write"`
	Requests int     `json:"requests"`
}

// Consumed is the capacity units consumed since the store started, by
// table and operation.
func (s *Store) Consumed() map[string]map[string]Units {
	out := map[string]map[string]Units{}
	for table, ops := range s.Server.Consumed() {
		m := make(map[string]Units, len(ops))
		for op, u := range ops {
			m[string(op)] = Units{Read: u.Read, Write: u.Write, Requests: u.Requests}
		}
		out[table] = m
	}
	return out
}

// ServeHTTP answers DynamoDB JSON API requests, and GET /consumed.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == ConsumedPath {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Consumed())
		return
	}
	s.Server.ServeHTTP(w, r)
}
