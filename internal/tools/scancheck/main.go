// Command scancheck holds the scanners' reports to the baseline: every
// finding must be in it, with the reason it is accepted, or the scan
// fails (make scan, scripts/scan.sh).
//
//	go run ./internal/tools/scancheck -baseline scripts/scan-baseline.yaml \
//	    -checkov checkov.json -serverless cfn-lint.json -govulncheck a.json -govulncheck b.json
//
// It reads checkov's JSON report (failed checks, by check id and the
// template's logical id), cfn-lint's JSON with the Serverless Rules (their
// own rules only, ES/WS/IS; cfn-lint's are make validate's), and
// govulncheck's JSON stream per module (a vulnerability whose trace
// reaches a function the code calls; the others, in a module or package
// the code does not call, are listed, not failed). It prints each finding
// with its reason or as NEW, each baseline entry no finding matched (to be
// removed) and each temporary one, and exits 1 on a NEW finding or a
// baseline entry without a reason, 2 when it cannot read its input.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.baseline, "baseline", "scripts/scan-baseline.yaml", "the baseline: the accepted findings, each with why")
	flag.StringVar(&cfg.checkov, "checkov", "", "checkov's JSON report (-o json)")
	flag.StringVar(&cfg.serverless, "serverless", "", "cfn-lint's JSON report with the Serverless Rules (-a cfn_lint_serverless.rules -f json)")
	flag.Func("govulncheck", "govulncheck's JSON report of one module (-format json; repeatable)", func(s string) error {
		cfg.govulncheck = append(cfg.govulncheck, s)
		return nil
	})
	flag.Parse()
	ok, err := run(cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scancheck:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}
