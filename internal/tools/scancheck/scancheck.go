package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

type config struct {
	baseline, checkov, serverless string
	govulncheck                   []string
}

// Scanners, as the baseline's sections name them.
const (
	checkov     = "checkov"
	serverless  = "serverless"
	govulncheck = "govulncheck"
)

// entry is one accepted finding of the baseline: a check, rule or
// vulnerability id, on the listed resources (none: wherever it is
// found), with why it is accepted. Temporary says what removes it.
type entry struct {
	ID        string   `yaml:"id"`
	Resources []string `yaml:"resources"`
	Why       string   `yaml:"why"`
	Temporary string   `yaml:"temporary"`
}

// baseline is the file: the accepted findings of each scanner.
type baseline map[string][]entry

// finding is one thing a scanner reported.
type finding struct {
	scanner, id, resource, what string
}

func (f finding) String() string {
	s := f.scanner + " " + f.id
	if f.resource != "" {
		s += " " + f.resource
	}
	return s + ": " + f.what
}

func readBaseline(path string) (baseline, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var bl baseline
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&bl); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for section := range bl {
		if section != checkov && section != serverless && section != govulncheck {
			return nil, fmt.Errorf("%s: unknown section %q (want %s, %s or %s)", path, section, checkov, serverless, govulncheck)
		}
	}
	return bl, nil
}

// checkovReport reads checkov's failed checks (one report, or a list of
// them, one per framework).
func checkovReport(b []byte) ([]finding, error) {
	type report struct {
		Results struct {
			FailedChecks []struct {
				CheckID   string `json:"check_id"`
				CheckName string `json:"check_name"`
				Resource  string `json:"resource"`
			} `json:"failed_checks"`
		} `json:"results"`
	}
	var reports []report
	if err := json.Unmarshal(b, &reports); err != nil {
		var one report
		if err := json.Unmarshal(b, &one); err != nil {
			return nil, fmt.Errorf("not a checkov JSON report: %w", err)
		}
		reports = []report{one}
	}
	var out []finding
	for _, r := range reports {
		for _, c := range r.Results.FailedChecks {
			// AWS::Serverless::Function.CreateProductFunction
			res := c.Resource
			if i := strings.LastIndex(res, "."); i >= 0 {
				res = res[i+1:]
			}
			out = append(out, finding{checkov, c.CheckID, res, c.CheckName})
		}
	}
	return out, nil
}

// serverlessRule is a Serverless Rules id: ES, WS or IS and four digits.
var serverlessRule = regexp.MustCompile(`^[EWI]S[0-9]{4}$`)

// serverlessReport reads cfn-lint's JSON matches of the Serverless Rules.
func serverlessReport(b []byte) ([]finding, error) {
	var matches []struct {
		Rule struct {
			ID string `json:"Id"`
		} `json:"Rule"`
		Location struct {
			Path []any `json:"Path"`
		} `json:"Location"`
		Message string `json:"Message"`
	}
	if err := json.Unmarshal(b, &matches); err != nil {
		return nil, fmt.Errorf("not a cfn-lint JSON report: %w", err)
	}
	var out []finding
	for _, m := range matches {
		if !serverlessRule.MatchString(m.Rule.ID) {
			continue
		}
		res := ""
		if len(m.Location.Path) > 1 && m.Location.Path[0] == "Resources" {
			res, _ = m.Location.Path[1].(string)
		}
		out = append(out, finding{serverless, m.Rule.ID, res, m.Message})
	}
	return out, nil
}

// govulncheckReport reads govulncheck's JSON stream: the vulnerabilities
// the code calls (a finding whose trace starts at a function), and, apart,
// those it only imports or requires.
func govulncheckReport(b []byte) (called, other []finding, err error) {
	type frame struct {
		Module   string `json:"module"`
		Version  string `json:"version"`
		Package  string `json:"package"`
		Function string `json:"function"`
	}
	type message struct {
		Finding *struct {
			OSV          string  `json:"osv"`
			FixedVersion string  `json:"fixed_version"`
			Trace        []frame `json:"trace"`
		} `json:"finding"`
	}
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("not a govulncheck JSON stream: %w", err)
		}
		if m.Finding == nil || len(m.Finding.Trace) == 0 {
			continue
		}
		f := m.Finding
		top := f.Trace[0]
		what := fmt.Sprintf("%s@%s, fixed in %s", top.Module, top.Version, cmp.Or(f.FixedVersion, "no release"))
		key := f.OSV + "|" + what
		if top.Function != "" {
			if seen["called|"+key] {
				continue
			}
			seen["called|"+key] = true
			called = append(called, finding{govulncheck, f.OSV, "", what + ", called"})
		} else if !seen[key] {
			seen[key] = true
			other = append(other, finding{govulncheck, f.OSV, "", what})
		}
	}
	return called, other, nil
}

// match returns the baseline entry that accepts f, or nil.
func (bl baseline) match(f finding) *entry {
	for i, e := range bl[f.scanner] {
		if e.ID == f.id && (len(e.Resources) == 0 || slices.Contains(e.Resources, f.resource)) {
			return &bl[f.scanner][i]
		}
	}
	return nil
}

// run reads the reports cfg names and holds them to the baseline,
// reporting to out; it reports whether the scan passes.
func run(cfg config, out io.Writer) (bool, error) {
	bl, err := readBaseline(cfg.baseline)
	if err != nil {
		return false, err
	}
	var findings, informational []finding
	read := func(path string, parse func([]byte) ([]finding, error)) error {
		if path == "" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fs, err := parse(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		findings = append(findings, fs...)
		return nil
	}
	if err := read(cfg.checkov, checkovReport); err != nil {
		return false, err
	}
	if err := read(cfg.serverless, serverlessReport); err != nil {
		return false, err
	}
	for _, path := range cfg.govulncheck {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err
		}
		called, other, err := govulncheckReport(b)
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		findings = append(findings, called...)
		informational = append(informational, other...)
	}

	pass := true
	used := map[*entry]bool{}
	for _, f := range findings {
		e := bl.match(f)
		if e == nil {
			pass = false
			fmt.Fprintf(out, "NEW       %s\n", f)
			continue
		}
		used[e] = true
		fmt.Fprintf(out, "baselined %s\n", f)
	}
	for _, f := range informational {
		fmt.Fprintf(out, "not called %s (in a module or package the code does not call)\n", f)
	}
	for scanner, entries := range bl {
		for i := range entries {
			e := &bl[scanner][i]
			if strings.TrimSpace(e.Why) == "" {
				pass = false
				fmt.Fprintf(out, "NO REASON %s %s: every baseline entry says why it is accepted\n", scanner, e.ID)
			}
			if e.Temporary != "" {
				fmt.Fprintf(out, "TEMPORARY %s %s %v: %s\n", scanner, e.ID, e.Resources, e.Temporary)
			}
			if !used[e] && scannerRan(cfg, scanner) {
				fmt.Fprintf(out, "unused    %s %s %v: no finding matched; remove it from the baseline\n", scanner, e.ID, e.Resources)
			}
		}
	}
	fresh := 0
	for _, f := range findings {
		if bl.match(f) == nil {
			fresh++
		}
	}
	fmt.Fprintf(out, "scan: %d findings, %d baselined, %d new\n", len(findings), len(findings)-fresh, fresh)
	return pass, nil
}

func scannerRan(cfg config, scanner string) bool {
	switch scanner {
	case checkov:
		return cfg.checkov != ""
	case serverless:
		return cfg.serverless != ""
	}
	return len(cfg.govulncheck) > 0
}
