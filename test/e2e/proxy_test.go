//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// opPutEvents is the X-Amz-Target of EventBridge PutEvents.
const opPutEvents = "AWSEvents.PutEvents"

// serialProxy sits between every AWS client of the test and moto and
// forwards one request at a time.
//
// moto's server is threaded and its DynamoDB conditional writes are not
// atomic: two PutItem calls with attribute_not_exists can both succeed when
// they overlap. The clients still send concurrent duplicate POSTs
// concurrently (they wait on the proxy's mutex together, which the proxy
// measures), but moto sees them one after another, as a DynamoDB partition
// would order them.
//
// It can also fail one PutEvents entry on the way (failEntry), the way
// EventBridge reports a partial failure.
type serialProxy struct {
	URL string

	target  *url.URL
	forward *httputil.ReverseProxy
	client  *http.Client

	waiting, maxWaiting atomic.Int64

	mu     sync.Mutex // held for the whole round trip of a request to moto
	ops    map[string]int
	fault  *entryFault // armed fault, nil when none
	faults []entryFault
}

// entryFault fails entry Index of the next PutEvents call that has more
// entries than Index. The entry is not forwarded, so moto never delivers
// it; the others are, and the response moto gave for them is returned
// with a failed result spliced in at Index, as EventBridge answers a call
// in which one entry failed.
type entryFault struct {
	// Index is the entry to fail.
	Index int
	// Entries is how many entries the failed call had (set when it fires).
	Entries int
	// EventID is the CloudEvent id in the failed entry's Detail.
	EventID string
}

// newSerialProxy starts a proxy to the moto endpoint on 127.0.0.1.
func newSerialProxy(t *testing.T, endpoint string) *serialProxy {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil || target.Scheme == "" || target.Host == "" {
		t.Fatalf("moto endpoint %q is not a URL: %v", endpoint, err)
	}
	p := &serialProxy{target: target, ops: map[string]int{}, client: &http.Client{}}
	p.forward = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	srv := httptest.NewServer(p) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// ServeHTTP forwards the request to moto while holding the mutex.
func (p *serialProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.waiting.Add(1)
	for m := p.maxWaiting.Load(); n > m && !p.maxWaiting.CompareAndSwap(m, n); m = p.maxWaiting.Load() {
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting.Add(-1)

	op := r.Header.Get("X-Amz-Target")
	p.ops[op]++
	if op == opPutEvents && p.fault != nil {
		if err := p.putEventsWithFailedEntry(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
		}
		return
	}
	p.forward.ServeHTTP(w, r)
}

// failEntry arms a one-shot entryFault at index.
func (p *serialProxy) failEntry(index int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = &entryFault{Index: index}
}

// firedFaults returns the faults that fired so far.
func (p *serialProxy) firedFaults() []entryFault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.faults)
}

// stats returns the forwarded request count per X-Amz-Target and the most
// requests that waited for the mutex at once.
func (p *serialProxy) stats() (map[string]int, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ops := make(map[string]int, len(p.ops))
	for k, v := range p.ops {
		ops[k] = v
	}
	return ops, p.maxWaiting.Load()
}

// putEventsRequest and putEventsResponse are the parts of the PutEvents
// JSON bodies the fault touches; entries stay raw so nothing else changes.
type putEventsRequest struct {
	Entries []json.RawMessage `json:"Entries"`
}

type putEventsResponse struct {
	FailedEntryCount int               `json:"FailedEntryCount"`
	Entries          []json.RawMessage `json:"Entries"`
}

// putEventsWithFailedEntry applies the armed fault to one PutEvents call:
// it forwards the call without the failed entry and answers with moto's
// results plus a failed one at the entry's position. A call too short for
// the fault is forwarded unchanged and the fault stays armed.
func (p *serialProxy) putEventsWithFailedEntry(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("read PutEvents request: %w", err)
	}
	var in map[string]json.RawMessage
	var req putEventsRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return fmt.Errorf("decode PutEvents request: %w", err)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("decode PutEvents entries: %w", err)
	}
	f := *p.fault
	if f.Index >= len(req.Entries) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.forward.ServeHTTP(w, r)
		return nil
	}
	var entry struct{ Detail string }
	if err := json.Unmarshal(req.Entries[f.Index], &entry); err != nil {
		return fmt.Errorf("decode PutEvents entry %d: %w", f.Index, err)
	}
	var detail struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(entry.Detail), &detail); err != nil {
		return fmt.Errorf("decode PutEvents entry %d detail: %w", f.Index, err)
	}
	f.Entries, f.EventID = len(req.Entries), detail.ID

	kept := slices.Delete(slices.Clone(req.Entries), f.Index, f.Index+1)
	if in["Entries"], err = json.Marshal(kept); err != nil {
		return fmt.Errorf("encode PutEvents entries: %w", err)
	}
	fwdBody, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode PutEvents request: %w", err)
	}
	// The signature no longer matches the body; moto does not check it.
	fwd, err := http.NewRequestWithContext(r.Context(), r.Method, p.target.JoinPath(r.URL.Path).String(), bytes.NewReader(fwdBody))
	if err != nil {
		return fmt.Errorf("build PutEvents request: %w", err)
	}
	fwd.Header = r.Header.Clone()
	fwd.Header.Del("Content-Length")
	resp, err := p.client.Do(fwd)
	if err != nil {
		return fmt.Errorf("forward PutEvents: %w", err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read PutEvents response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PutEvents without entry %d: moto answered %s: %s", f.Index, resp.Status, respBody)
	}
	var out putEventsResponse
	if err := json.Unmarshal(respBody, &out); err != nil {
		return fmt.Errorf("decode PutEvents response: %w", err)
	}
	failed, err := json.Marshal(map[string]string{
		"ErrorCode":    "InternalFailure",
		"ErrorMessage": "injected by the e2e proxy: entry " + strconv.Itoa(f.Index) + " not delivered",
	})
	if err != nil {
		return fmt.Errorf("encode failed entry: %w", err)
	}
	out.Entries = slices.Insert(out.Entries, f.Index, json.RawMessage(failed))
	out.FailedEntryCount++
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encode PutEvents response: %w", err)
	}
	for k, v := range resp.Header {
		if !strings.EqualFold(k, "Content-Length") {
			w.Header()[k] = v
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write PutEvents response: %w", err)
	}
	p.faults = append(p.faults, f)
	p.fault = nil
	return nil
}
