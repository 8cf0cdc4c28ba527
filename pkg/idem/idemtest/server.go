package idemtest

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is an in-process DynamoDB-compatible store that behaves as
// DynamoDB does under concurrency. It answers the DynamoDB JSON API over
// HTTP, so the real AWS SDK talks to it unchanged. It is safe for
// concurrent use.
type Server struct {
	// schema guards data, the tables and their items: reads share it;
	// a request's writes commit holding it alone, and so do the table
	// requests (CreateTable, UpdateTable, DeleteTable), so no read sees
	// part of either.
	schema    sync.RWMutex
	data      map[string]*tableData
	txLatency time.Duration
	onPut     func(table string, item json.RawMessage)

	staleLag time.Duration

	mu       sync.Mutex
	held     map[string]*holder    // item -> the write holding it
	tables   map[string]*tableMeta // table -> its definition
	consumed Capacity              // capacity units consumed so far
	history  map[string][]version  // item -> versions, for stale reads
	ttl      map[string]ttlState   // table -> TTL setting
	tokens   map[string]*txToken   // ClientRequestToken -> its transaction
	calls    map[Op]int            // requests received per operation
	faults   []*fault              // armed faults, in the order injected
	// throttled holds the SDK invocations ThrottledPastRetries refuses:
	// every attempt of one is refused.
	throttled map[string]bool
	latencies map[Op][]*latency // armed latencies per operation
	holds     map[Op][]*Hold    // armed holds per operation
	stats     Stats             // conflicts produced
	httpSrv   *httptest.Server  // set by Start
	closed    bool

	// region is the Region the store answers as (its clients' and ARNs');
	// g is the simulated global table it is a Region of, if any.
	region string
	g      *Global
	// lastStamp is the time of this Region's last write of a global
	// table's item (last writer wins); guarded by schema.
	lastStamp time.Time
	streamSeq uint64 // stream records made so far; guarded by mu
}

// defaultRegion is the Region a store outside a Global answers as.
const defaultRegion = "us-east-1"

// Region is the AWS Region the store answers as: its clients', its ARNs'
// and its stream records'; us-east-1 outside a Global.
func (s *Server) Region() string { return s.region }

// Option configures a Server.
type Option func(*Server)

// WithTransactionLatency makes every TransactWriteItems hold its items for
// d before it commits, as a slow transaction on DynamoDB does: the window
// in which other writes to those items are refused widens, so tests meet
// it. The default, 0, still isolates transactions; they just commit fast.
func WithTransactionLatency(d time.Duration) Option {
	return func(s *Server) { s.txLatency = d }
}

// WithPutHook calls fn with every item a successful PutItem,
// TransactWriteItems or BatchWriteItem put, as DynamoDB JSON, while the
// write still holds the item: one item's puts arrive in commit order.
// Updates and deletes are not reported. It stands in for DynamoDB Streams,
// which the store does not serve.
func WithPutHook(fn func(table string, item json.RawMessage)) Option {
	return func(s *Server) { s.onPut = fn }
}

// SetTransactionLatency changes the latency WithTransactionLatency set,
// for transactions that start from now on.
func (s *Server) SetTransactionLatency(d time.Duration) {
	s.mu.Lock()
	s.txLatency = d
	s.mu.Unlock()
}

// NewServer returns an empty store. Serve it with Start, or mount it as an
// http.Handler.
func NewServer(opts ...Option) *Server {
	s := &Server{
		data:      map[string]*tableData{},
		held:      map[string]*holder{},
		tables:    map[string]*tableMeta{},
		consumed:  Capacity{},
		history:   map[string][]version{},
		ttl:       map[string]ttlState{},
		tokens:    map[string]*txToken{},
		calls:     map[Op]int{},
		holds:     map[Op][]*Hold{},
		throttled: map[string]bool{},
		latencies: map[Op][]*latency{},
		region:    defaultRegion,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Op names a DynamoDB API operation, as in the X-Amz-Target header.
type Op string

// The operations faults and counts are usually about.
const (
	OpGetItem            Op = "GetItem"
	OpPutItem            Op = "PutItem"
	OpUpdateItem         Op = "UpdateItem"
	OpDeleteItem         Op = "DeleteItem"
	OpTransactWriteItems Op = "TransactWriteItems"
	OpTransactGetItems   Op = "TransactGetItems"
	OpBatchWriteItem     Op = "BatchWriteItem"
	OpBatchGetItem       Op = "BatchGetItem"
	OpQuery              Op = "Query"
	OpScan               Op = "Scan"
)

// Stats counts what the store's isolation produced.
type Stats struct {
	// ConflictExceptions is how many single-item writes were refused with
	// TransactionConflictException because a transaction held their item.
	ConflictExceptions int
	// ConflictCancellations is how many transactions were cancelled with
	// reason TransactionConflict because another request held an item.
	ConflictCancellations int
}

// Stats returns the conflicts the store produced so far (injected faults
// not included).
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Calls returns how many requests of op the store received, SDK retries
// and faulted requests included.
func (s *Server) Calls(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// CallCounts returns the requests received per operation.
func (s *Server) CallCounts() map[Op]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Op]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// ResetCalls sets every call count back to zero.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	s.calls = map[Op]int{}
	s.mu.Unlock()
}

// ServeHTTP answers one DynamoDB JSON API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			s.reply(w, answerError(http.StatusBadRequest, "ValidationException", "cannot read request body"))
			return
		}
		body = b
	}
	target := r.Header.Get("X-Amz-Target")
	op := Op(target[strings.LastIndexByte(target, '.')+1:])
	s.reply(w, s.serve(&call{op: op, body: body, invocation: r.Header.Get("Amz-Sdk-Invocation-Id")}))
}

// call is one request as the store serves it.
type call struct {
	op   Op
	body []byte
	// invocation is the SDK's Amz-Sdk-Invocation-Id: every attempt
	// (retry) of one SDK call carries the same.
	invocation string
	// fault is the injected fault the request meets, if any.
	fault *fault
	// latency is how long the request waits while it holds its items
	// (InjectLatency).
	latency time.Duration
}

// reply writes an answer with the CRC32 header DynamoDB sends (the SDK
// checks it, and logs a warning on every call without it).
func (s *Server) reply(w http.ResponseWriter, a answer) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(a.body)), 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// answer is a response: its status and JSON body.
type answer struct {
	status int
	body   []byte
}

func answerJSON(v any) answer {
	b, err := json.Marshal(v)
	if err != nil {
		return answerError(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	return answer{status: http.StatusOK, body: b}
}

// answerError is an error answer as DynamoDB words it.
func answerError(status int, code, msg string) answer {
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": msg})
	return answer{status: status, body: b}
}

// serve answers a request: faults first, then the operation. A request
// that panics the store is answered 500 with the panic, so a test sees
// the store's bug in the answer rather than losing its process.
func (s *Server) serve(c *call) (a answer) {
	defer func() {
		if p := recover(); p != nil {
			a = answerError(http.StatusInternalServerError, "InternalServerError", fmt.Sprintf("idemtest: the store panicked serving %s: %v", c.op, p))
		}
	}()
	s.mu.Lock()
	s.calls[c.op]++
	c.fault = s.takeFault(c.op, c.invocation)
	c.latency = s.takeLatency(c.op)
	s.mu.Unlock()
	if s.g != nil {
		if s.g.isDown(s.region) {
			return unavailable(true)
		}
		s.g.deliver(false)
	}
	if c.fault != nil {
		if a, done := c.fault.before(c); done {
			return a
		}
	}
	a = s.route(c)
	if c.fault != nil && c.fault.kind == LostAnswer {
		// The request was served; its answer never reaches the client.
		return answerError(http.StatusInternalServerError, "InternalServerError", "idemtest: answer lost (injected)")
	}
	return a
}

// route serves a request.
func (s *Server) route(c *call) answer {
	op, body := c.op, c.body
	switch op {
	case "UpdateTimeToLive":
		return s.updateTTL(body)
	case "DescribeTimeToLive":
		return s.describeTTL(body)
	case "CreateTable":
		return s.createTable(body)
	case "UpdateTable":
		return s.updateTable(body)
	case "DeleteTable":
		return s.deleteTable(body)
	case "DescribeTable":
		return s.describeTable(body)
	case "ListTables":
		return s.listTables(body)
	case OpGetItem:
		return s.getItem(c)
	case OpBatchGetItem:
		return s.batchGet(c)
	case OpQuery, OpScan:
		return s.serveSearch(c)
	case OpPutItem, OpUpdateItem, OpDeleteItem:
		return s.writeItem(c)
	case OpTransactWriteItems:
		return s.transactWrite(c)
	case OpTransactGetItems:
		return s.transactGet(c)
	case OpBatchWriteItem:
		return s.batchWrite(c)
	default:
		return answerError(http.StatusBadRequest, "UnknownOperationException", "idemtest: the store does not serve "+string(op))
	}
}

// item is an item or key in DynamoDB JSON, attribute by attribute.
type item = map[string]json.RawMessage

// Close stops the server Start started; a Server that was only mounted as
// a handler has nothing to stop.
func (s *Server) Close() {
	s.mu.Lock()
	srv := s.httpSrv
	s.closed = true
	holds := s.holds
	s.holds = map[Op][]*Hold{}
	s.mu.Unlock()
	for _, hs := range holds {
		for _, h := range hs {
			h.Release()
		}
	}
	if srv != nil {
		srv.Close()
	}
}
