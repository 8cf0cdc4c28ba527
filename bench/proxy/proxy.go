// Package proxy is the counting reverse proxy of make bench-peer: it sits
// between an implementation and the DynamoDB-compatible store and counts
// every request by its X-Amz-Target operation, so the calls of both
// implementations are counted the same way, at the endpoint, and not by
// either client.
package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Counts is a snapshot of what went through the proxy.
type Counts struct {
	// Ops counts requests per operation ("PutItem").
	Ops map[string]int `json:"ops"`
	// Errors counts error responses per operation and error type
	// ("PutItem ConditionalCheckFailedException").
	Errors map[string]int `json:"errors"`
	// Micros is the time per operation spent behind the proxy (forwarding,
	// the store's work, the response back), in microseconds, summed.
	Micros map[string]int64 `json:"micros"`
}

// TotalMicros is the time behind the proxy for every operation.
func (c Counts) TotalMicros() int64 {
	var n int64
	for _, v := range c.Micros {
		n += v
	}
	return n
}

// Total is the number of requests of every operation.
func (c Counts) Total() int {
	n := 0
	for _, v := range c.Ops {
		n += v
	}
	return n
}

// Error keys the proxy counts besides the error types, after the
// operation ("PutItem ConditionalCheckFailed without Item"): a failed
// condition answered without the item (the one a library would have to
// read back), and a transaction cancellation reason TransactionConflict.
const (
	NoItem         = "ConditionalCheckFailed without Item"
	ReasonConflict = "reason TransactionConflict"
)

// Proxy forwards DynamoDB JSON API requests to one endpoint and counts them.
type Proxy struct {
	rp *httputil.ReverseProxy

	mu     sync.Mutex
	ops    map[string]int
	errors map[string]int
	micros map[string]int64
}

// New returns a proxy to target (the store's base URL).
func New(target *url.URL) *Proxy {
	p := &Proxy{ops: map[string]int{}, errors: map[string]int{}, micros: map[string]int64{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	rp.ModifyResponse = p.countError
	p.rp = rp
	return p
}

// Operation returns the operation named by an X-Amz-Target header
// ("DynamoDB_20120810.PutItem" is "PutItem").
func Operation(target string) string {
	if target == "" {
		return "(none)"
	}
	return target[strings.LastIndexByte(target, '.')+1:]
}

// ServeHTTP counts the request, then forwards it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := Operation(r.Header.Get("X-Amz-Target"))
	p.mu.Lock()
	p.ops[op]++
	p.mu.Unlock()
	start := time.Now()
	p.rp.ServeHTTP(w, r)
	d := time.Since(start).Microseconds()
	p.mu.Lock()
	p.micros[op] += d
	p.mu.Unlock()
}

// countError records an error response by its __type (the part after '#'),
// leaving the body as it was for the client.
func (p *Proxy) countError(resp *http.Response) error {
	if resp.StatusCode < 300 {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var e struct {
		Type                string         `json:"__type"`
		Item                map[string]any `json:"Item"`
		CancellationReasons []struct {
			Code string         `json:"Code"`
			Item map[string]any `json:"Item"`
		} `json:"CancellationReasons"`
	}
	_ = json.Unmarshal(body, &e)
	typ := e.Type[strings.LastIndexByte(e.Type, '#')+1:]
	if typ == "" {
		typ = http.StatusText(resp.StatusCode)
	}
	op := Operation(resp.Request.Header.Get("X-Amz-Target"))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errors[op+" "+typ]++
	if typ == "ConditionalCheckFailedException" && len(e.Item) == 0 {
		p.errors[op+" "+NoItem]++
	}
	for _, r := range e.CancellationReasons {
		switch {
		case r.Code == "ConditionalCheckFailed" && len(r.Item) == 0:
			p.errors[op+" "+NoItem]++
		case r.Code == "TransactionConflict":
			p.errors[op+" "+ReasonConflict]++
		}
	}
	return nil
}

// Snapshot returns a copy of the counts so far.
func (p *Proxy) Snapshot() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Counts{Ops: maps.Clone(p.ops), Errors: maps.Clone(p.errors), Micros: maps.Clone(p.micros)}
}

// Reset sets every count back to zero.
func (p *Proxy) Reset() {
	p.mu.Lock()
	clear(p.ops)
	clear(p.errors)
	clear(p.micros)
	p.mu.Unlock()
}
