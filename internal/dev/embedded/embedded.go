// Package embedded serves the in-process DynamoDB-compatible store
// (github.com/truora/minidyn/server) the way DynamoDB answers, so clients
// built for AWS, the Lambda bootstraps included, talk to it unchanged.
package embedded

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/truora/minidyn/server"
)

// Store is the embedded store and its HTTP handler.
type Store struct {
	// Server is minidyn's server, for failure injection in tests.
	Server  *server.Server
	handler http.Handler

	mu  sync.Mutex
	ttl map[string]ttlSpec // table name -> TTL setting

	// writeMu orders write requests with their OnPut callbacks when a
	// callback is set; minidyn serializes every request anyway.
	writeMu sync.Mutex
	onPut   func(Put)
}

// Put is an item that a successful write request put into a table.
type Put struct {
	Table string
	Item  map[string]events.DynamoDBAttributeValue
}

// OnPut registers fn to receive every item put by PutItem,
// TransactWriteItems or BatchWriteItem once the write has succeeded, in
// commit order. The embedded store has no Streams API; this is what the
// local runner feeds the outbox relay from. Updates and deletes are not
// reported. Call it before the store serves requests.
func (s *Store) OnPut(fn func(Put)) { s.onPut = fn }

// New returns an empty store.
func New() *Store {
	s := &Store{Server: server.NewServer(), ttl: map[string]ttlSpec{}}
	s.handler = withCRC32(http.HandlerFunc(s.route))
	return s
}

// ServeHTTP answers DynamoDB JSON API requests.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// route answers the TTL API itself (minidyn has none) and hands the rest
// to minidyn.
func (s *Store) route(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	switch op {
	case "UpdateTimeToLive":
		s.updateTTL(w, r)
	case "DescribeTimeToLive":
		s.describeTTL(w, r)
	case "PutItem", "TransactWriteItems", "BatchWriteItem":
		if s.onPut == nil {
			s.Server.ServeHTTP(w, r)
			return
		}
		s.write(w, r, op)
	default:
		s.Server.ServeHTTP(w, r)
	}
}

// write serves a write request and reports its puts when it succeeded.
func (s *Store) write(w http.ResponseWriter, r *http.Request, op string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, "ValidationException", "cannot read request body")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.Server.ServeHTTP(sw, r)
	if sw.status != http.StatusOK {
		return
	}
	for _, p := range puts(op, body) {
		s.onPut(p)
	}
}

// puts lists the items a write request put, from its JSON.
func puts(op string, body []byte) []Put {
	type item = map[string]events.DynamoDBAttributeValue
	var out []Put
	switch op {
	case "PutItem":
		var in struct {
			TableName string
			Item      item
		}
		if json.Unmarshal(body, &in) == nil {
			out = append(out, Put{Table: in.TableName, Item: in.Item})
		}
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct {
				Put *struct {
					TableName string
					Item      item
				}
			}
		}
		if json.Unmarshal(body, &in) == nil {
			for _, ti := range in.TransactItems {
				if ti.Put != nil {
					out = append(out, Put{Table: ti.Put.TableName, Item: ti.Put.Item})
				}
			}
		}
	case "BatchWriteItem":
		var in struct {
			RequestItems map[string][]struct {
				PutRequest *struct{ Item item }
			}
		}
		if json.Unmarshal(body, &in) == nil {
			for table, reqs := range in.RequestItems {
				for _, req := range reqs {
					if req.PutRequest != nil {
						out = append(out, Put{Table: table, Item: req.PutRequest.Item})
					}
				}
			}
		}
	}
	return out
}

// statusWriter remembers the status a handler sent.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

type ttlSpec struct {
	AttributeName string `json:"AttributeName"`
	Enabled       bool   `json:"Enabled"`
}

// updateTTL records the setting. Like AWS, which deletes expired items
// only eventually (within days), the store never deletes them: readers
// must treat expired items as absent, and this project's do.
func (s *Store) updateTTL(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TableName               string  `json:"TableName"`
		TimeToLiveSpecification ttlSpec `json:"TimeToLiveSpecification"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.TableName == "" || in.TimeToLiveSpecification.AttributeName == "" {
		writeError(w, "ValidationException", "TableName and TimeToLiveSpecification.AttributeName are required")
		return
	}
	s.mu.Lock()
	s.ttl[in.TableName] = in.TimeToLiveSpecification
	s.mu.Unlock()
	writeJSON(w, map[string]any{"TimeToLiveSpecification": in.TimeToLiveSpecification})
}

func (s *Store) describeTTL(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TableName string `json:"TableName"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.TableName == "" {
		writeError(w, "ValidationException", "TableName is required")
		return
	}
	s.mu.Lock()
	spec, ok := s.ttl[in.TableName]
	s.mu.Unlock()
	desc := map[string]any{"TimeToLiveStatus": "DISABLED"}
	if ok && spec.Enabled {
		desc = map[string]any{"TimeToLiveStatus": "ENABLED", "AttributeName": spec.AttributeName}
	}
	writeJSON(w, map[string]any{"TimeToLiveDescription": desc})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazon.coral.validate#" + code, "message": msg})
}

// withCRC32 adds the X-Amz-Crc32 header DynamoDB sends with every
// response. The SDK checks it and, when it is missing, logs a warning on
// every call; minidyn does not send it.
func withCRC32(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		for k, vs := range rec.header {
			w.Header()[k] = vs
		}
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(rec.body.Bytes())), 10))
		w.Header().Set("Content-Length", strconv.Itoa(rec.body.Len()))
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	})
}

// recorder buffers a response so its checksum can lead it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}
