#!/usr/bin/env bash
# The Go modules of this repository, one directory a line, the
# application's (.) first: the library (pkg, its test store
# pkg/idem/idemtest included), its OpenTelemetry adapter (pkg/idem/idemotel,
# so that pkg stays free of OpenTelemetry), the library's conformance suite
# (pkg/idem/idemconform, a public harness) and the adopter test module (test/adopter)
# are modules of their own. Every make target that vets, lints, tests, fuzzes
# or benchmarks runs once per module.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files --cached --others --exclude-standard '*go.mod' | xargs -n1 dirname | sort -u |
	awk '$0 == "." { print; next } { rest[++n] = $0 } END { for (i = 1; i <= n; i++) print rest[i] }'
