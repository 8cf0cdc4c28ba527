package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const baselineYAML = `
checkov:
  - id: CKV_AWS_117
    resources: [CreateProductFunction]
    why: no VPC resource
serverless:
  - id: ES6000
    why: a dead-letter queue's own
govulncheck:
  - id: GO-2026-0001
    why: not reachable with our input
  - id: CKV_UNUSED
    why: stale
`

const checkovJSON = `{"results":{"failed_checks":[
 {"check_id":"CKV_AWS_117","check_name":"VPC","resource":"AWS::Serverless::Function.CreateProductFunction"}]}}`

const serverlessJSON = `[
 {"Rule":{"Id":"ES6000"},"Location":{"Path":["Resources","RelayDeadLetterQueue","Properties"]},"Message":"redrive"},
 {"Rule":{"Id":"E3012"},"Location":{"Path":["Resources","X"]},"Message":"cfn-lint's own rule: make validate's"}]`

// A govulncheck stream: one vulnerability called, one only required.
const govulnJSON = `{"config":{"scanner_name":"govulncheck"}}
{"osv":{"id":"GO-2026-0001"}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v1.2.0","trace":[{"module":"example.com/m","version":"v1.0.0","package":"example.com/m/p","function":"Decode"},{"module":"x","function":"main"}]}}
{"finding":{"osv":"GO-2026-0002","trace":[{"module":"example.com/n","version":"v0.1.0"}]}}
`

func TestBaselinedFindingsPass(t *testing.T) {
	var out strings.Builder
	ok, err := run(config{
		baseline: write(t, "b.yaml", baselineYAML), checkov: write(t, "c.json", checkovJSON),
		serverless: write(t, "s.json", serverlessJSON), govulncheck: []string{write(t, "g.json", govulnJSON)},
	}, &out)
	if err != nil || !ok {
		t.Fatalf("run = %v, %v; want a pass:\n%s", ok, err, out.String())
	}
	for _, want := range []string{
		"baselined checkov CKV_AWS_117 CreateProductFunction",
		"baselined serverless ES6000 RelayDeadLetterQueue",
		"baselined govulncheck GO-2026-0001: example.com/m@v1.0.0, fixed in v1.2.0, called",
		"not called govulncheck GO-2026-0002",
		"unused    govulncheck CKV_UNUSED",
		"scan: 3 findings, 3 baselined, 0 new",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "E3012") {
		t.Errorf("cfn-lint's own rules are make validate's, not the scan's:\n%s", out.String())
	}
}

// A finding the baseline does not name fails the scan, as one on a
// resource its entry does not list, and an entry without a reason.
func TestNewFindingsFail(t *testing.T) {
	for name, c := range map[string]struct{ baseline, checkov string }{
		"new check":      {baselineYAML, `{"results":{"failed_checks":[{"check_id":"CKV_AWS_116","resource":"AWS::Serverless::Function.CreateProductFunction"}]}}`},
		"other resource": {baselineYAML, `{"results":{"failed_checks":[{"check_id":"CKV_AWS_117","resource":"AWS::Serverless::Function.GetProductFunction"}]}}`},
		"no reason":      {"checkov:\n  - id: CKV_AWS_117\n", `[{"results":{"failed_checks":[{"check_id":"CKV_AWS_117","resource":"AWS::Serverless::Function.CreateProductFunction"}]}}]`},
	} {
		var out strings.Builder
		ok, err := run(config{baseline: write(t, "b.yaml", c.baseline), checkov: write(t, "c.json", c.checkov)}, &out)
		if err != nil || ok {
			t.Errorf("%s: run = %v, %v; want a failure:\n%s", name, ok, err, out.String())
		}
	}
	var out strings.Builder
	ok, err := run(config{baseline: write(t, "b.yaml", "govulncheck: []\n"), govulncheck: []string{write(t, "g.json", govulnJSON)}}, &out)
	if err != nil || ok || !strings.Contains(out.String(), "NEW       govulncheck GO-2026-0001") {
		t.Errorf("a called vulnerability not in the baseline: run = %v, %v:\n%s", ok, err, out.String())
	}
}

func TestUnreadableInputIsAnError(t *testing.T) {
	var out strings.Builder
	if _, err := run(config{baseline: write(t, "b.yaml", "nmap:\n  - id: x\n")}, &out); err == nil {
		t.Error("an unknown section is an error")
	}
	if _, err := run(config{baseline: write(t, "b.yaml", baselineYAML), checkov: write(t, "c.json", "not json")}, &out); err == nil {
		t.Error("a report that is not JSON is an error")
	}
}
