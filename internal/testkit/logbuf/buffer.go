// Package logbuf holds a concurrency-safe buffer that stands in for a
// function's stdout in tests: its JSON log lines and its metrics lines
// (CloudWatch EMF) arrive interleaved, as they do in Lambda.
package logbuf

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/emf"
)

// Buffer is a bytes.Buffer safe for concurrent writers, such as loggers and
// publishers that tests read back.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns the non-empty lines written so far.
func (s *Buffer) Lines() []string {
	var out []string
	for _, l := range strings.Split(s.String(), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Logs returns the lines that are not metrics lines.
func (s *Buffer) Logs() []string {
	var out []string
	for _, l := range s.Lines() {
		if !isEMF(l) {
			out = append(out, l)
		}
	}
	return out
}

// Metrics returns the metrics lines, decoded, after checking each against
// the EMF specification (emf.Validate): a line that breaks it fails tb.
func (s *Buffer) Metrics(tb testing.TB) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, l := range s.Lines() {
		if !isEMF(l) {
			continue
		}
		if err := emf.Validate([]byte(l)); err != nil {
			tb.Errorf("metrics line breaks the EMF specification: %v\n%s", err, l)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			tb.Errorf("metrics line: %v", err)
			continue
		}
		out = append(out, m)
	}
	return out
}

// isEMF reports whether a line is a JSON object with an _aws member.
func isEMF(line string) bool {
	var probe struct {
		AWS json.RawMessage `json:"_aws"`
	}
	return json.Unmarshal([]byte(line), &probe) == nil && probe.AWS != nil
}
