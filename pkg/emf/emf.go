// Package emf writes CloudWatch Embedded Metric Format (EMF) lines: JSON
// log lines from which CloudWatch Logs extracts metrics, so a Lambda
// function publishes metrics by writing to stdout, with no agent and no
// API call on the request path.
//
// A Line collects one invocation's dimensions, metrics and properties;
// Writer.Write emits it as one line. Write never fails the caller: an
// error from the underlying writer is counted (Writer.Dropped) and the
// line is lost, which is what a metric may do and a response may not.
// Validate checks a line against the specification's rules, for tests.
package emf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units this package's users need; Validate accepts every unit
// CloudWatch defines.
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	Seconds      Unit = "Seconds"
	Bytes        Unit = "Bytes"
	Percent      Unit = "Percent"
	None         Unit = "None"
)

// The specification's limits.
const (
	MaxMetrics    = 100  // metrics per directive
	MaxDimensions = 30   // dimensions per dimension set
	MaxNameLength = 255  // namespace, metric and dimension names
	MaxValueBytes = 1024 // a dimension value
)

// ErrInvalid reports a line that breaks the specification.
var ErrInvalid = errors.New("emf: invalid line")

// Writer writes EMF lines under one namespace to an io.Writer (a Lambda
// function's stdout). It is safe for concurrent use; each line is written
// with one Write call.
type Writer struct {
	out       io.Writer
	namespace string
	now       func() time.Time
	mu        sync.Mutex // serialises lines and guards buf
	buf       []byte
	dropped   atomic.Int64
}

// NewWriter returns a Writer; namespace must be 1 to 255 characters.
func NewWriter(out io.Writer, namespace string) (*Writer, error) {
	if out == nil {
		return nil, errors.New("emf: nil writer")
	}
	if namespace == "" || len(namespace) > MaxNameLength || !utf8.ValidString(namespace) {
		return nil, fmt.Errorf("%w: namespace %q must be 1 to %d characters", ErrInvalid, namespace, MaxNameLength)
	}
	return &Writer{out: out, namespace: namespace, now: time.Now}, nil
}

// Namespace returns the namespace the Writer's metrics go to.
func (w *Writer) Namespace() string { return w.namespace }

// Dropped returns how many lines could not be written.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Line is one EMF document: dimension sets over named string dimensions,
// metrics, and other properties. Build it with the methods, then Write it;
// a Line is not safe for concurrent use.
type Line struct {
	dimensions []pair
	sets       [][]string
	metrics    []metric
	properties []property
}

type pair struct{ name, value string }

type metric struct {
	name  string
	unit  Unit
	value float64
}

type property struct {
	name  string
	value any
}

// NewLine returns an empty line.
func NewLine() *Line { return &Line{} }

// Dimension sets a dimension's value, for the dimension sets to use.
// Invalid UTF-8 in a name or value becomes U+FFFD here, byte by byte, so
// the limits apply to what is written.
func (l *Line) Dimension(name, value string) *Line {
	name, value = clean(name), clean(value)
	for i := range l.dimensions {
		if l.dimensions[i].name == name {
			l.dimensions[i].value = value
			return l
		}
	}
	l.dimensions = append(l.dimensions, pair{name, value})
	return l
}

// DimensionSet adds a set of dimensions (each set by Dimension) under
// which every metric of the line is published: one set per combination
// an alarm or a graph needs, such as [Function, Outcome] and [Function].
func (l *Line) DimensionSet(names ...string) *Line {
	set := make([]string, len(names))
	for i, n := range names {
		set[i] = clean(n)
	}
	l.sets = append(l.sets, set)
	return l
}

// Metric adds a metric value; adding a name twice keeps the last value.
func (l *Line) Metric(name string, unit Unit, value float64) *Line {
	name = clean(name)
	for i := range l.metrics {
		if l.metrics[i].name == name {
			l.metrics[i] = metric{name, unit, value}
			return l
		}
	}
	l.metrics = append(l.metrics, metric{name, unit, value})
	return l
}

// Property adds a member that is not a metric (a request id, say): it is
// searchable in the log, not published as a metric. The value must
// marshal to JSON; adding a name twice keeps the last value.
func (l *Line) Property(name string, value any) *Line {
	name = clean(name)
	for i := range l.properties {
		if l.properties[i].name == name {
			l.properties[i].value = value
			return l
		}
	}
	l.properties = append(l.properties, property{name, value})
	return l
}

// clean replaces each byte of invalid UTF-8 with U+FFFD, as encoding/json
// does when it writes the string.
func clean(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

// Write emits the line with the Writer's namespace and the current time.
// It never fails the caller: a line that breaks the specification, or
// that the underlying writer refuses, is counted in Dropped and lost.
func (w *Writer) Write(l *Line) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := l.appendTo(w.buf[:0], w.namespace, w.now())
	if err != nil {
		w.dropped.Add(1)
		return
	}
	if cap(b) <= maxKeptBuffer {
		w.buf = b
	}
	if _, err := w.out.Write(b); err != nil {
		w.dropped.Add(1)
	}
}

// maxKeptBuffer bounds the buffer a Writer keeps between lines, so one
// huge line does not pin its memory.
const maxKeptBuffer = 16 << 10

// maxMagnitude is the largest magnitude CloudWatch accepts, 2^360.
var maxMagnitude = math.Ldexp(1, 360)

// check refuses a line CloudWatch would not extract, or would read other
// than meant: every rule Validate applies, checked before writing.
func (l *Line) check() error {
	if len(l.metrics) == 0 || len(l.metrics) > MaxMetrics {
		return fmt.Errorf("%w: %d metrics, want 1 to %d", ErrInvalid, len(l.metrics), MaxMetrics)
	}
	names := make(map[string]string, len(l.dimensions)+len(l.metrics)+len(l.properties)) // root member -> what it is
	sets := make(map[string]bool, len(l.sets))
	for _, set := range l.sets {
		if len(set) > MaxDimensions {
			return fmt.Errorf("%w: a dimension set of %d, at most %d", ErrInvalid, len(set), MaxDimensions)
		}
		key := strings.Join(set, "\x00")
		if sets[key] {
			return fmt.Errorf("%w: dimension set %q twice", ErrInvalid, set)
		}
		sets[key] = true
		for i, d := range set {
			if slices.Contains(set[:i], d) {
				return fmt.Errorf("%w: dimension %q twice in a set", ErrInvalid, d)
			}
			v, ok := l.value(d)
			if !ok || !validName(d) || v == "" || len(v) > MaxValueBytes {
				return fmt.Errorf("%w: dimension %q = %q", ErrInvalid, d, v)
			}
			names[d] = "dimension"
		}
	}
	for _, m := range l.metrics {
		if !validName(m.name) || math.IsNaN(m.value) || math.Abs(m.value) > maxMagnitude {
			return fmt.Errorf("%w: metric %q = %v", ErrInvalid, m.name, m.value)
		}
		if m.unit != "" && !units[string(m.unit)] {
			return fmt.Errorf("%w: metric %q has unit %q, which CloudWatch does not know", ErrInvalid, m.name, m.unit)
		}
		if what, clash := names[m.name]; clash {
			return fmt.Errorf("%w: metric %q is also a %s", ErrInvalid, m.name, what)
		}
		names[m.name] = "metric"
	}
	for _, p := range l.properties {
		if p.name == "" || p.name == "_aws" {
			return fmt.Errorf("%w: property %q", ErrInvalid, p.name)
		}
		if what, clash := names[p.name]; clash {
			return fmt.Errorf("%w: property %q is also a %s", ErrInvalid, p.name, what)
		}
		names[p.name] = "property"
	}
	return nil
}

func validName(n string) bool { return n != "" && len(n) <= MaxNameLength && n != "_aws" }

// appendTo renders the line as one JSON object and a newline, after
// check. The directive comes first, then the dimensions in the order the
// sets name them, the metrics in the order they were added, then the
// properties. A line without dimension sets gets the one empty set, which
// the specification's schema asks for.
func (l *Line) appendTo(b []byte, namespace string, at time.Time) ([]byte, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, at.UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = appendString(b, namespace)
	b = append(b, `,"Dimensions":[`...)
	if len(l.sets) == 0 {
		b = append(b, `[]`...)
	}
	var used []string // dimensions the sets name, in order, once each
	for i, set := range l.sets {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, d := range set {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendString(b, d)
			if !slices.Contains(used, d) {
				used = append(used, d)
			}
		}
		b = append(b, ']')
	}
	b = append(b, `],"Metrics":[`...)
	for i, m := range l.metrics {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":`...)
		b = appendString(b, m.name)
		if m.unit != "" {
			b = append(b, `,"Unit":`...)
			b = appendString(b, string(m.unit))
		}
		b = append(b, '}')
	}
	b = append(b, `]}]}`...)
	for _, d := range used {
		v, _ := l.value(d)
		b = append(b, ',')
		b = appendString(b, d)
		b = append(b, ':')
		b = appendString(b, v)
	}
	for _, m := range l.metrics {
		b = append(b, ',')
		b = appendString(b, m.name)
		b = append(b, ':')
		b = strconv.AppendFloat(b, m.value, 'g', -1, 64)
	}
	for _, p := range l.properties {
		v, err := json.Marshal(p.value)
		if err != nil {
			return nil, fmt.Errorf("%w: property %q: %w", ErrInvalid, p.name, err)
		}
		b = append(b, ',')
		b = appendString(b, p.name)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}', '\n'), nil
}

func (l *Line) value(dimension string) (string, bool) {
	for _, p := range l.dimensions {
		if p.name == dimension {
			return p.value, true
		}
	}
	return "", false
}

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// units are the units CloudWatch accepts.
var units = map[string]bool{
	"Seconds": true, "Microseconds": true, "Milliseconds": true, "Bytes": true, "Kilobytes": true,
	"Megabytes": true, "Gigabytes": true, "Terabytes": true, "Bits": true, "Kilobits": true,
	"Megabits": true, "Gigabits": true, "Terabits": true, "Percent": true, "Count": true,
	"Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true, "Gigabytes/Second": true,
	"Terabytes/Second": true, "Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true,
	"Gigabits/Second": true, "Terabits/Second": true, "Count/Second": true, "None": true,
}

// Validate checks one line (a JSON object) against the specification: an
// _aws member with a millisecond Timestamp and CloudWatchMetrics
// directives, each with a namespace, at most 100 metrics whose names
// are root members holding a number (or up to 100 numbers), units
// CloudWatch knows, and dimension sets of at most 30 names whose root
// members are strings. It is for tests: Write never emits anything else.
func Validate(line []byte) error {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(line, &root); err != nil {
		return fmt.Errorf("%w: not a JSON object: %w", ErrInvalid, err)
	}
	if dup := duplicateMember(line); dup != "" {
		return fmt.Errorf("%w: member %q twice", ErrInvalid, dup)
	}
	var meta struct {
		Timestamp         *json.Number `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string      `json:"Namespace"`
			Dimensions *[][]string `json:"Dimensions"`
			Metrics    []struct {
				Name              string `json:"Name"`
				Unit              string `json:"Unit"`
				StorageResolution *int   `json:"StorageResolution"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	}
	raw, ok := root["_aws"]
	if !ok {
		return fmt.Errorf("%w: no _aws member", ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&meta); err != nil {
		return fmt.Errorf("%w: _aws: %w", ErrInvalid, err)
	}
	if meta.Timestamp == nil {
		return fmt.Errorf("%w: no _aws.Timestamp", ErrInvalid)
	}
	ts, err := strconv.ParseInt(meta.Timestamp.String(), 10, 64)
	// Milliseconds since the epoch: 13 digits from 2001 to 2286.
	if err != nil || ts < 1e12 || ts >= 1e13 {
		return fmt.Errorf("%w: Timestamp %s is not epoch milliseconds", ErrInvalid, meta.Timestamp)
	}
	if len(meta.CloudWatchMetrics) == 0 {
		return fmt.Errorf("%w: no CloudWatchMetrics directive", ErrInvalid)
	}
	for _, d := range meta.CloudWatchMetrics {
		if d.Namespace == "" || len(d.Namespace) > MaxNameLength {
			return fmt.Errorf("%w: Namespace %q", ErrInvalid, d.Namespace)
		}
		if len(d.Metrics) == 0 || len(d.Metrics) > MaxMetrics {
			return fmt.Errorf("%w: %d metrics in a directive, want 1 to %d", ErrInvalid, len(d.Metrics), MaxMetrics)
		}
		if d.Dimensions == nil {
			return fmt.Errorf("%w: a directive without Dimensions", ErrInvalid)
		}
		defined := map[string]bool{}
		for _, m := range d.Metrics {
			if m.Name == "" || len(m.Name) > MaxNameLength {
				return fmt.Errorf("%w: metric name %q", ErrInvalid, m.Name)
			}
			if defined[m.Name] {
				return fmt.Errorf("%w: metric %s defined twice in a directive", ErrInvalid, m.Name)
			}
			defined[m.Name] = true
			if m.Unit != "" && !units[m.Unit] {
				return fmt.Errorf("%w: metric %s has unit %q", ErrInvalid, m.Name, m.Unit)
			}
			if r := m.StorageResolution; r != nil && *r != 1 && *r != 60 {
				return fmt.Errorf("%w: metric %s StorageResolution %d", ErrInvalid, m.Name, *r)
			}
			if !isNumbers(root[m.Name]) {
				return fmt.Errorf("%w: metric %s is not a number (or up to 100 numbers) at the root: %s", ErrInvalid, m.Name, root[m.Name])
			}
		}
		for _, set := range *d.Dimensions {
			if len(set) > MaxDimensions {
				return fmt.Errorf("%w: a dimension set of %d, at most %d", ErrInvalid, len(set), MaxDimensions)
			}
			for i, name := range set {
				if name == "" || slices.Contains(set[:i], name) {
					return fmt.Errorf("%w: dimension set %q: an empty or repeated name", ErrInvalid, set)
				}
				var v string
				if err := json.Unmarshal(root[name], &v); err != nil || v == "" || len(v) > MaxValueBytes {
					return fmt.Errorf("%w: dimension %s is not a string of 1 to %d bytes at the root: %s", ErrInvalid, name, MaxValueBytes, root[name])
				}
			}
		}
	}
	return nil
}

// isNumbers reports whether a metric's member is a number, or an array
// of 1 to 100 numbers, each within CloudWatch's range (null is none:
// encoding/json would decode it as 0).
func isNumbers(raw json.RawMessage) bool {
	var vs []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		if json.Unmarshal(raw, &vs) != nil || len(vs) == 0 || len(vs) > 100 {
			return false
		}
	} else {
		vs = []json.RawMessage{raw}
	}
	for _, v := range vs {
		var f float64
		if len(v) == 0 || v[0] == 'n' || json.Unmarshal(v, &f) != nil || math.Abs(f) > maxMagnitude {
			return false
		}
	}
	return true
}

// duplicateMember returns a member name the top-level object holds
// twice, or "".
func duplicateMember(line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		key, _ := tok.(string)
		if seen[key] {
			return key
		}
		seen[key] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}
