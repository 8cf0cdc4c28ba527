package idemconform

import (
	"bytes"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
)

// doer is the SDK's HTTP client.
type doer interface {
	Do(*http.Request) (*http.Response, error)
}

// newClient is a client of the store served in-process (no listener, so
// it works inside a synctest bubble), through net when it is not nil.
func newClient(s *idemtest.Server, net *network) *dynamodb.Client {
	return s.HandlerClient(func(o *dynamodb.Options) {
		if net != nil {
			net.inner = o.HTTPClient
			o.HTTPClient = net
		}
	})
}

// network is one environment's way to the store: it fails everything once
// the environment has stopped, and carries the faults that hit only some
// requests (a renewal, a completion).
type network struct {
	e     *env
	inner doer
	// to is the Region whose endpoint it reaches (a cell across Regions).
	to string
}

// requestKind names what a request is for, from its operation and body.
type requestKind int

const (
	otherRequest requestKind = iota
	renewal                  // the heartbeat's fenced UpdateItem
	completion               // Run's fenced UpdateItem, or any transaction (a commit)
	// On a table without transactions (MRSC), after the decision (a
	// completion): a write of the Effect applied once (it carries its
	// marker, :idem_m), and the finish that records them all applied.
	applied
	finished
)

func kindOf(target string, body []byte) requestKind {
	op := target[strings.LastIndexByte(target, '.')+1:]
	switch {
	case op == "TransactWriteItems":
		return completion
	case (op == "PutItem" || op == "UpdateItem") && bytes.Contains(body, []byte(":idem_m")):
		return applied
	case op != "UpdateItem":
		return otherRequest
	case bytes.Contains(body, []byte(":completed")):
		return completion
	case bytes.Contains(body, []byte("attribute_exists(#in)")):
		return finished
	case bytes.Contains(body, []byte(":le")):
		return renewal
	}
	return otherRequest
}

// isWrite reports whether target is a single-item write.
func isWrite(target string) bool {
	op := target[strings.LastIndexByte(target, '.')+1:]
	return op == "PutItem" || op == "UpdateItem" || op == "DeleteItem"
}

// errDown is what a stopped environment's requests meet.
var errDown = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

func (n *network) Do(r *http.Request) (*http.Response, error) {
	e, w := n.e, n.e.w
	if e.dead.Load() || w.regions != nil && w.regions.isCut(e.region, n.to) {
		return nil, errDown
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	target := r.Header.Get("X-Amz-Target")
	kind := kindOf(target, body)
	if isWrite(target) && w.take(&w.replicatedStorm) {
		return replicatedConflict(r), nil
	}
	if kind == finished && w.take(&w.crashFinish) {
		e.crash("crash point: every write applied, before the finish")
		return nil, errDown
	}
	if kind == renewal && !w.faultsOff.Load() {
		if d := time.Duration(w.renewalDelay.Load()); d > 0 {
			// The request is stuck on its way to the store.
			t := time.NewTimer(d)
			select {
			case <-r.Context().Done():
				t.Stop()
				return nil, r.Context().Err()
			case <-t.C:
			}
		}
		if w.renewalFails.Load() {
			return throttled(r), nil
		}
	}
	if kind == completion && w.refuseFirst.Load() && !w.faultsOff.Load() {
		if c := callOf(r.Context()); c != nil {
			c.mu.Lock()
			ex := c.last
			c.mu.Unlock()
			if ex != nil && w.isFirst(ex) {
				// Refused on every attempt, for as long as its lease lasts.
				return throttled(r), nil
			}
		}
	}
	if e.dead.Load() {
		return nil, errDown
	}
	resp, err := n.inner.Do(r)
	if err == nil && resp.StatusCode == http.StatusBadRequest && kind == completion {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"Code":"ValidationError"`)) {
			w.refusalsServed.Add(1)
			if bytes.Count(b, []byte(`"Code":`)) == 2 {
				// One key's record and its write: nothing to split.
				w.refusalsOneKey.Add(1)
			}
		}
	}
	if err == nil && resp.StatusCode == http.StatusOK && kind == completion {
		if c := callOf(r.Context()); c != nil {
			c.mu.Lock()
			if c.last != nil {
				c.last.landed = true
			}
			c.mu.Unlock()
		}
		if w.take(&w.crashCompleted) {
			e.crash("crash point: after the completion landed, before its answer")
		}
	}
	if err == nil && resp.StatusCode == http.StatusOK && kind == applied {
		if c := callOf(r.Context()); c != nil {
			c.mu.Lock()
			c.applied++
			first := c.applied == 1
			c.mu.Unlock()
			if first && w.take(&w.crashApplied) {
				e.crash("crash point: between two writes applied after the decision")
			}
		}
	}
	if e.dead.Load() {
		// The store served the request; its answer never arrives.
		if resp != nil {
			_ = resp.Body.Close()
		}
		return nil, errDown
	}
	return resp, err
}

// throttled is DynamoDB's ThrottlingException answer to r.
func throttled(r *http.Request) *http.Response {
	return refusal(r, []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`))
}

// replicatedConflict is DynamoDB's answer to a write of an item another
// Region is writing, on a table with multi-Region strong consistency.
func replicatedConflict(r *http.Request) *http.Response {
	return refusal(r, []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ReplicatedWriteConflictException","message":"The request was rejected because one or more items in the request are being modified by a request in another Region."}`))
}

// refusal is an HTTP 400 answer to r with DynamoDB's error body.
func refusal(r *http.Request, body []byte) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	return &http.Response{
		StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
}
