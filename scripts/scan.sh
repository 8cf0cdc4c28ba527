#!/usr/bin/env bash
# The security scanners (make scan): govulncheck on every Go module, checkov
# and cfn-lint's Serverless Rules on template.yaml, held to
# scripts/scan-baseline.yaml by internal/tools/scancheck, which fails on any
# finding the baseline does not name with a reason.
#
# Every tool is pinned. checkov and cfn-lint-serverless live in .venv/scanners
# (reused while the pins hold). govulncheck's vulnerability database is not
# fetched from vuln.go.dev (not reachable here, nor in CI): it is the Go
# vulnerability database's own repository, golang.org/x/vulndb, pinned at
# VULNDB_VERSION and downloaded through the Go module proxy like any module,
# indexed once into .venv/vulndb/<version> by its own indexdb command, and
# given to govulncheck with -db file://. A newer database is a newer pin.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
GO=${GO:-go}
CHECKOV_VERSION=${CHECKOV_VERSION:-3.3.30}
CFN_LINT_SERVERLESS_VERSION=${CFN_LINT_SERVERLESS_VERSION:-0.3.6}
CFN_LINT_VERSION=${CFN_LINT_VERSION:-1.58.0}
GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:-v1.10.0}
VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
venv=${SCAN_VENV:-.venv/scanners}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The pip tools.
stamp="$venv/.scanners-$CHECKOV_VERSION-$CFN_LINT_SERVERLESS_VERSION-$CFN_LINT_VERSION"
if [ ! -e "$stamp" ]; then
	test -x "$venv/bin/pip" || python3 -m venv "$venv"
	"$venv/bin/pip" install --disable-pip-version-check --quiet "checkov==$CHECKOV_VERSION" \
		"cfn-lint-serverless==$CFN_LINT_SERVERLESS_VERSION" "cfn-lint==$CFN_LINT_VERSION"
	rm -f "$venv"/.scanners-*
	touch "$stamp"
fi

# The vulnerability database, from the module proxy.
db="$top/.venv/vulndb/$VULNDB_VERSION"
if [ ! -e "$db/index/db.json" ]; then
	src=$($GO mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	test -d "$src/data/osv" || { echo "scan: golang.org/x/vulndb@$VULNDB_VERSION has no data/osv" >&2; exit 2; }
	rm -rf "$db.tmp"
	(cd "$work" && $GO run "golang.org/x/vulndb/cmd/indexdb@$VULNDB_VERSION" -vulns "$src/data/osv" -out "$db.tmp")
	mv "$db.tmp" "$db"
fi
echo "scan: Go vulnerability database golang.org/x/vulndb@$VULNDB_VERSION ($(ls "$db/ID" | grep -c '\.json$') entries)"

# govulncheck on every module, its own packages and what they call. It
# loads packages with the go command on PATH: the toolchain's own, so a
# go that switches toolchains (GOTOOLCHAIN) is not asked to type-check a
# newer standard library.
GOBIN="$work/bin" $GO install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"
goroot=$($GO env GOROOT)
reports=()
for m in $(scripts/modules.sh); do
	out="$work/govulncheck-$(echo "$m" | tr / _).json"
	echo "scan: govulncheck $m"
	(cd "$m" && PATH="$goroot/bin:$PATH" "$work/bin/govulncheck" -db "file://$db" -format json ./... >"$out")
	reports+=(-govulncheck "$out")
done

echo "scan: checkov $CHECKOV_VERSION on template.yaml"
"$venv/bin/checkov" -f template.yaml --framework cloudformation --skip-download -o json --quiet --compact >"$work/checkov.json" || true
echo "scan: cfn-lint $CFN_LINT_VERSION with the Serverless Rules $CFN_LINT_SERVERLESS_VERSION on template.yaml"
"$venv/bin/cfn-lint" -a cfn_lint_serverless.rules -f json --regions us-east-1 -- template.yaml >"$work/serverless.json" || true

$GO run ./internal/tools/scancheck -baseline scripts/scan-baseline.yaml \
	-checkov "$work/checkov.json" -serverless "$work/serverless.json" "${reports[@]}"
