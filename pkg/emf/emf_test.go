package emf_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/emf"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func TestWriteEmitsOneValidLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := emf.NewWriter(&buf, "idemlambda/test")
	must.NoError(t, err)
	w.Write(emf.NewLine().
		Dimension("Function", "createproduct").Dimension("Outcome", "replayed").
		DimensionSet("Function", "Outcome").DimensionSet("Function").
		Metric("Requests", emf.Count, 1).Metric("DynamoDBCalls", emf.Count, 2).Metric("Duration", emf.Milliseconds, 3.5).
		Property("requestId", "r-1"))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	must.Len(t, lines, 1, "one line per Write")
	must.NoError(t, emf.Validate([]byte(lines[0])))

	var got map[string]any
	must.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
	check.Equal(t, "createproduct", got["Function"])
	check.Equal(t, "replayed", got["Outcome"])
	check.EqualValues(t, 2, got["DynamoDBCalls"])
	check.EqualValues(t, 3.5, got["Duration"])
	check.Equal(t, "r-1", got["requestId"])
	aws := got["_aws"].(map[string]any)
	d := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	check.Equal(t, "idemlambda/test", d["Namespace"])
	check.Equal(t, []any{[]any{"Function", "Outcome"}, []any{"Function"}}, d["Dimensions"])
	check.Len(t, d["Metrics"], 3)
	check.Zero(t, w.Dropped())
}

// A writer that fails (a closed stdout) never reaches the caller: the line
// is counted as dropped.
func TestWriteNeverFailsTheCaller(t *testing.T) {
	t.Parallel()
	w, err := emf.NewWriter(failing{}, "ns")
	must.NoError(t, err)
	w.Write(emf.NewLine().Metric("Requests", emf.Count, 1))
	w.Write(emf.NewLine()) // no metric: not a valid line
	w.Write(emf.NewLine().DimensionSet("Missing").Metric("Requests", emf.Count, 1))
	check.EqualValues(t, 3, w.Dropped())
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWritesFromManyGoroutinesStayWholeLines(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	w, err := emf.NewWriter(&buf, "ns")
	must.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			w.Write(emf.NewLine().Dimension("Function", "f").DimensionSet("Function").Metric("N", emf.Count, float64(i)))
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	must.Len(t, lines, 64)
	for _, l := range lines {
		must.NoError(t, emf.Validate([]byte(l)), l)
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
	must.NoError(t, emf.Validate([]byte(ok)))
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
		"null value":        `{"N":null,` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"}]}`) + `}`,
		"null in values":    `{"N":[1,null],` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"}]}`) + `}`,
		"beyond 2^360":      `{"N":1e300,` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"}]}`) + `}`,
		"no Dimensions":     `{"N":1,` + dir(`{"Namespace":"ns","Metrics":[{"Name":"N"}]}`) + `}`,
		"empty dimension":   `{"":"x","N":1,` + dir(`{"Namespace":"ns","Dimensions":[[""]],"Metrics":[{"Name":"N"}]}`) + `}`,
		"repeated in a set": `{"F":"x","N":1,` + dir(`{"Namespace":"ns","Dimensions":[["F","F"]],"Metrics":[{"Name":"N"}]}`) + `}`,
		"metric twice":      `{"N":1,` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"},{"Name":"N"}]}`) + `}`,
		"member twice":      `{"N":1,"N":2,` + dir(`{"Namespace":"ns","Dimensions":[],"Metrics":[{"Name":"N"}]}`) + `}`,
	} {
		err := emf.Validate([]byte(line))
		check.ErrorIs(t, err, emf.ErrInvalid, name)
	}
}

// Numbers CloudWatch takes are written as JSON numbers, exponents and
// negative zero included; a line without dimension sets gets the one
// empty set the schema asks for.
func TestWriteNumbersAndNoDimensions(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := emf.NewWriter(&buf, "ns")
	must.NoError(t, err)
	w.Write(emf.NewLine().Metric("A", emf.None, math.Copysign(0, -1)).Metric("B", emf.None, 1e6).
		Metric("C", emf.None, 1e-7).Metric("D", emf.None, 5e-324).Metric("E", emf.None, -1e100))
	must.Zero(t, w.Dropped())
	must.NoError(t, emf.Validate(buf.Bytes()))
	check.Contains(t, buf.String(), `"Dimensions":[[]]`)
	var got map[string]any
	must.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	delete(got, "_aws")
	check.Equal(t, map[string]any{"A": 0.0, "B": 1e6, "C": 1e-7, "D": 5e-324, "E": -1e100}, got)
}

func TestNewWriterChecksItsNamespace(t *testing.T) {
	t.Parallel()
	_, err := emf.NewWriter(&bytes.Buffer{}, "")
	check.ErrorIs(t, err, emf.ErrInvalid)
	_, err = emf.NewWriter(&bytes.Buffer{}, strings.Repeat("n", 256))
	check.ErrorIs(t, err, emf.ErrInvalid)
	_, err = emf.NewWriter(nil, "ns")
	check.Error(t, err)
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

// Whatever the names and values hold, Write either drops the line or
// writes one that Validate accepts and that gives the values back
// exactly (invalid UTF-8 aside, which JSON cannot carry: each such byte
// becomes U+FFFD, as encoding/json writes it).
func FuzzWriteEscapes(f *testing.F) {
	for _, s := range []string{"plain", `quote " and \ backslash`, "tab\tnew\nline\x00", "é ✓ \u2028", "\xff\xfe", strings.Repeat("\xa2", 400)} {
		f.Add("Seller", s, "N")
		f.Add(s, "v", "N")
		f.Add("D", "v", s)
	}
	f.Fuzz(func(t *testing.T, dim, value, name string) {
		var buf bytes.Buffer
		w, err := emf.NewWriter(&buf, "ns")
		must.NoError(t, err)
		w.Write(emf.NewLine().Dimension(dim, value).DimensionSet(dim).Metric(name, emf.Count, 1).Property("note", value))
		if w.Dropped() == 1 {
			check.Zero(t, buf.Len(), "a dropped line leaves nothing half-written")
			return
		}
		must.Zero(t, w.Dropped())
		must.NoError(t, emf.Validate(buf.Bytes()), "Write wrote a line Validate refuses: %s", buf.String())
		var got map[string]any
		must.NoError(t, json.Unmarshal(buf.Bytes(), &got))
		want := string([]rune(value)) // each invalid byte becomes U+FFFD, as encoding/json does
		check.Equal(t, want, got[string([]rune(dim))])
		check.Equal(t, want, got["note"])
		check.EqualValues(t, 1, got[string([]rune(name))])
	})
}

func TestWriteRefusesClashingNames(t *testing.T) {
	t.Parallel()
	for name, line := range map[string]*emf.Line{
		"metric is a dimension":       emf.NewLine().Dimension("F", "x").DimensionSet("F").Metric("F", emf.Count, 1),
		"property is a metric":        emf.NewLine().Metric("N", emf.Count, 1).Property("N", 2),
		"property is _aws":            emf.NewLine().Metric("N", emf.Count, 1).Property("_aws", 2),
		"NaN":                         emf.NewLine().Metric("N", emf.Count, math.NaN()),
		"property will not marshal":   emf.NewLine().Metric("N", emf.Count, 1).Property("p", make(chan int)),
		"value too long once cleaned": emf.NewLine().Dimension("D", strings.Repeat("\xff", 400)).DimensionSet("D").Metric("N", emf.Count, 1),
		"unknown unit":                emf.NewLine().Metric("N", emf.Unit("Requests"), 1),
		"names equal once cleaned":    emf.NewLine().Dimension("\xff", "x").DimensionSet("\xff").Metric("\xfe", emf.Count, 1),
		"property equal once cleaned": emf.NewLine().Metric("\xff", emf.Count, 1).Property("\xfe", 1),
		"a name twice in a set":       emf.NewLine().Dimension("F", "x").DimensionSet("F", "F").Metric("N", emf.Count, 1),
		"a set twice":                 emf.NewLine().Dimension("F", "x").DimensionSet("F").DimensionSet("F").Metric("N", emf.Count, 1),
		"beyond 2^360":                emf.NewLine().Metric("N", emf.Count, 1e300),
		"infinite":                    emf.NewLine().Metric("N", emf.Count, math.Inf(-1)),
	} {
		var buf bytes.Buffer
		w, err := emf.NewWriter(&buf, "ns")
		must.NoError(t, err)
		w.Write(line)
		check.EqualValues(t, 1, w.Dropped(), name)
		check.Zero(t, buf.Len(), "%s: nothing half-written", name)
	}
}

// The same line renders to the same bytes: dimensions in the order the
// sets name them, metrics in the order added, so a log search or a diff
// of two runs is stable.
func TestWriteIsDeterministic(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := emf.NewWriter(&buf, "ns")
	must.NoError(t, err)
	build := func() *emf.Line {
		return emf.NewLine().Dimension("B", "2").Dimension("A", "1").DimensionSet("A", "B").DimensionSet("A").
			Metric("Z", emf.Count, 1).Metric("Y", emf.None, 0.25).Metric("Z", emf.Count, 3)
	}
	w.Write(build())
	w.Write(build())
	// The two lines may be written in different milliseconds.
	stamp := regexp.MustCompile(`"Timestamp":\d+`)
	lines := strings.SplitAfter(stamp.ReplaceAllString(buf.String(), `"Timestamp":0`), "\n")
	must.Len(t, lines, 3)
	check.Equal(t, lines[0], lines[1])
	check.Contains(t, lines[0], `"A":"1","B":"2","Z":3,"Y":0.25}`)
}
