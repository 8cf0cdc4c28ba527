package emf_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/emf"
)

func TestWriteEmitsOneValidLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := emf.NewWriter(&buf, "idemlambda/test")
	require.NoError(t, err)
	w.Write(emf.NewLine().
		Dimension("Function", "createproduct").Dimension("Outcome", "replayed").
		DimensionSet("Function", "Outcome").DimensionSet("Function").
		Metric("Requests", emf.Count, 1).Metric("DynamoDBCalls", emf.Count, 2).Metric("Duration", emf.Milliseconds, 3.5).
		Property("requestId", "r-1"))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 1, "one line per Write")
	require.NoError(t, emf.Validate([]byte(lines[0])))

	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
	assert.Equal(t, "createproduct", got["Function"])
	assert.Equal(t, "replayed", got["Outcome"])
	assert.EqualValues(t, 2, got["DynamoDBCalls"])
	assert.EqualValues(t, 3.5, got["Duration"])
	assert.Equal(t, "r-1", got["requestId"])
	aws := got["_aws"].(map[string]any)
	d := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	assert.Equal(t, "idemlambda/test", d["Namespace"])
	assert.Equal(t, []any{[]any{"Function", "Outcome"}, []any{"Function"}}, d["Dimensions"])
	assert.Len(t, d["Metrics"], 3)
	assert.Zero(t, w.Dropped())
}

// A writer that fails (a closed stdout) never reaches the caller: the line
// is counted as dropped.
func TestWriteNeverFailsTheCaller(t *testing.T) {
	t.Parallel()
	w, err := emf.NewWriter(failing{}, "ns")
	require.NoError(t, err)
	w.Write(emf.NewLine().Metric("Requests", emf.Count, 1))
	w.Write(emf.NewLine()) // no metric: not a valid line
	w.Write(emf.NewLine().DimensionSet("Missing").Metric("Requests", emf.Count, 1))
	assert.EqualValues(t, 3, w.Dropped())
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWritesFromManyGoroutinesStayWholeLines(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	w, err := emf.NewWriter(&buf, "ns")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			w.Write(emf.NewLine().Dimension("Function", "f").DimensionSet("Function").Metric("N", emf.Count, float64(i)))
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 64)
	for _, l := range lines {
		require.NoError(t, emf.Validate([]byte(l)), l)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestValidateRefusesWhatTheSpecificationForbids(t *testing.T) {
	t.Parallel()
	const ts = `"Timestamp":1764579600000`
	dir := func(inner string) string { return `"_aws":{` + ts + `,"CloudWatchMetrics":[` + inner + `]}` }
	ok := `{"F":"x","N":1,` + dir(`{"Namespace":"ns","Dimensions":[["F"]],"Metrics":[{"Name":"N","Unit":"Count"}]}`) + `}`
	require.NoError(t, emf.Validate([]byte(ok)))
	many := make([]string, 101)
	for i := range many {
		many[i] = `{"Name":"N"}`
	}
	dims := make([]string, 31)
	for i := range dims {
		dims[i] = `"F"`
	}
	for name, line := range map[string]string{
		"not json":          `{`,
		"no _aws":           `{"N":1}`,
		"seconds timestamp": `{"N":1,"_aws":{"Timestamp":1764579600,"CloudWatchMetrics":[{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"}]}]}}`,
		"no timestamp":      `{"N":1,"_aws":{"CloudWatchMetrics":[{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"}]}]}}`,
		"no directive":      `{"N":1,` + dir(``) + `}`,
		"no namespace":      `{"N":1,` + dir(`{"Namespace":"","Dimensions":[],"Metrics":[{"Name":"N"}]}`) + `}`,
		"missing value":     `{` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"}]}`) + `}`,
		"string value":      `{"N":"1",` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"}]}`) + `}`,
		"bad unit":          `{"N":1,` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N","Unit":"Requests"}]}`) + `}`,
		"bad resolution":    `{"N":1,` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N","StorageResolution":5}]}`) + `}`,
		"numeric dimension": `{"F":1,"N":1,` + dir(`{"Namespace":"ns","Dimensions":[["F"]],"Metrics":[{"Name":"N"}]}`) + `}`,
		"absent dimension":  `{"N":1,` + dir(`{"Namespace":"ns","Dimensions":[["F"]],"Metrics":[{"Name":"N"}]}`) + `}`,
		"101 metrics":       `{"N":1,` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[`+strings.Join(many, ",")+`]}`) + `}`,
		"31 dimensions":     `{"F":"x","N":1,` + dir(`{"Namespace":"ns","Dimensions":[[`+strings.Join(dims, ",")+`]],"Metrics":[{"Name":"N"}]}`) + `}`,
	} {
		err := emf.Validate([]byte(line))
		assert.ErrorIs(t, err, emf.ErrInvalid, name)
	}
}

func TestNewWriterChecksItsNamespace(t *testing.T) {
	t.Parallel()
	_, err := emf.NewWriter(&bytes.Buffer{}, "")
	assert.ErrorIs(t, err, emf.ErrInvalid)
	_, err = emf.NewWriter(&bytes.Buffer{}, strings.Repeat("n", 256))
	assert.ErrorIs(t, err, emf.ErrInvalid)
	_, err = emf.NewWriter(nil, "ns")
	assert.Error(t, err)
}

// BenchmarkWrite is the cost of one invocation's metrics line, as the
// API decorator writes it.
func BenchmarkWrite(b *testing.B) {
	w, err := emf.NewWriter(discard{}, "idemlambda/bench")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.Write(emf.NewLine().
			Dimension("Function", "createproduct").Dimension("Outcome", "executed").
			DimensionSet("Function", "Outcome").DimensionSet("Function").
			Metric("Requests", emf.Count, 1).Metric("DynamoDBCalls", emf.Count, 2).Metric("Duration", emf.Milliseconds, 4.2))
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Whatever a dimension value or property holds, the line is valid JSON
// that gives the value back exactly (invalid UTF-8 aside, which JSON
// cannot carry and becomes U+FFFD).
func FuzzWriteEscapes(f *testing.F) {
	for _, s := range []string{"plain", `quote " and \ backslash`, "tab\tnew\nline\x00", "é ✓ \u2028", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		w, err := emf.NewWriter(&buf, "ns")
		require.NoError(t, err)
		w.Write(emf.NewLine().Dimension("Seller", s).DimensionSet("Seller").Metric("N", emf.Count, 1).Property("note", s))
		if s == "" || len(s) > emf.MaxValueBytes {
			assert.EqualValues(t, 1, w.Dropped(), "an empty or oversized dimension value is refused")
			return
		}
		require.Zero(t, w.Dropped())
		require.NoError(t, emf.Validate(buf.Bytes()))
		var got map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
		want := string([]rune(s)) // each invalid byte becomes U+FFFD, as encoding/json does
		assert.Equal(t, want, got["Seller"])
		assert.Equal(t, want, got["note"])
	})
}

func TestWriteRefusesClashingNames(t *testing.T) {
	t.Parallel()
	for name, line := range map[string]*emf.Line{
		"metric is a dimension":     emf.NewLine().Dimension("F", "x").DimensionSet("F").Metric("F", emf.Count, 1),
		"property is a metric":      emf.NewLine().Metric("N", emf.Count, 1).Property("N", 2),
		"property is _aws":          emf.NewLine().Metric("N", emf.Count, 1).Property("_aws", 2),
		"NaN":                       emf.NewLine().Metric("N", emf.Count, math.NaN()),
		"property will not marshal": emf.NewLine().Metric("N", emf.Count, 1).Property("p", make(chan int)),
	} {
		var buf bytes.Buffer
		w, err := emf.NewWriter(&buf, "ns")
		require.NoError(t, err)
		w.Write(line)
		assert.EqualValues(t, 1, w.Dropped(), name)
		assert.Zero(t, buf.Len(), "%s: nothing half-written", name)
	}
}

// The same line renders to the same bytes: dimensions in the order the
// sets name them, metrics in the order added, so a log search or a diff
// of two runs is stable.
func TestWriteIsDeterministic(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := emf.NewWriter(&buf, "ns")
	require.NoError(t, err)
	build := func() *emf.Line {
		return emf.NewLine().Dimension("B", "2").Dimension("A", "1").DimensionSet("A", "B").DimensionSet("A").
			Metric("Z", emf.Count, 1).Metric("Y", emf.None, 0.25).Metric("Z", emf.Count, 3)
	}
	w.Write(build())
	w.Write(build())
	lines := strings.SplitAfter(buf.String(), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, lines[0], lines[1])
	assert.Contains(t, lines[0], `"A":"1","B":"2","Z":3,"Y":0.25}`)
}
