#!/usr/bin/env bash
# The library's published module graph, as an adopter resolves it.
#
# An adopter requires github.com/idemlambda/idemlambda/pkg and nothing
# else of ours. This builds three throwaway modules in a temporary
# directory and runs `go mod tidy` in each:
#
#   adopter      imports pkg/idem, idemhttp, idemsqs, idemevent and
#                pkg/money; its go.mod replaces only this repository's own
#                modules (by the committed go.mod files of this checkout);
#   comparison   imports the third-party packages the library stands on,
#                directly: the SDK's config, DynamoDB client and
#                attributevalue, aws-lambda-go, uuid, bojanz/currency, at
#                the versions the library's go.mod selects;
#   oteladopter  imports pkg/idem/idemotel, the OpenTelemetry adapter (a
#                module of its own), with the same replaces,
#
# and fails unless: the library's go.mod has no replace and requires no
# module at the zero pseudo-version (v0.0.0-00010101000000-000000000000,
# which the module proxy refuses, so an adopter's tidy would fail);
# tidy succeeds for the adopter; no test-only module (testify, minidyn,
# porcupine, yaml, testcontainers, x/exp, ...) is in its go.mod, nor in
# its go.sum unless the comparison's go.sum has it too (aws-lambda-go's
# own tests import testify, so go mod tidy keeps testify's checksums in
# any module that imports aws-lambda-go/events); its go.sum has no
# more lines than the comparison's, and no OpenTelemetry module (that is
# idemotel's, never the library's); and the idemotel adopter tidies and
# builds with neither a test-only module nor the OpenTelemetry SDK in
# its go.mod. It prints the modules' go.sum lines and module counts.
#
# Fast on a warm module cache (no download); GRAPH_CHECK_KEEP=1 keeps
# the temporary directory and prints where it is.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
GO=${GO:-go}

fail() {
	echo "graph-check: $*" >&2
	exit 1
}

lib=github.com/idemlambda/idemlambda/pkg
# Test-only modules: none may reach an adopter through the library.
testonly='github.com/stretchr/testify|github.com/stretchr/objx|github.com/davecgh/go-spew|github.com/pmezard/go-difflib|github.com/truora/minidyn|github.com/anishathalye/porcupine|go.yaml.in/yaml|gopkg.in/yaml|github.com/testcontainers/|golang.org/x/exp|honnef.co/go/tools|github.com/google/go-cmp'

# The library's go.mod as published: no replace, no placeholder.
if grep -Eq '^[[:space:]]*replace' pkg/go.mod; then
	fail "pkg/go.mod has a replace directive: adopters ignore it, and go install refuses a module with one"
fi
if grep -q 'v0.0.0-00010101000000-000000000000' pkg/go.mod; then
	fail "pkg/go.mod requires a module at v0.0.0-00010101000000-000000000000, which the module proxy refuses: an adopter's go mod tidy would fail"
fi

tmp=$(mktemp -d)
if [ "${GRAPH_CHECK_KEEP:-}" = 1 ]; then
	echo "graph-check: keeping $tmp"
else
	trap 'rm -rf "$tmp"' EXIT
fi
export GOFLAGS=-mod=mod GOWORK=off

goversion=$(sed -n 's/^go \([0-9.]*\)$/\1/p' pkg/go.mod)
# The version the library's go.mod (else the application's) requires.
version() {
	local v
	v=$(awk -v m="$1" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' pkg/go.mod)
	[ -n "$v" ] || v=$(awk -v m="$1" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' go.mod)
	[ -n "$v" ] || fail "no version of $1 in pkg/go.mod or go.mod"
	echo "$v"
}

# The adopter: the library, this checkout's modules replaced.
mkdir -p "$tmp/adopter"
{
	echo "module example.com/adopter"
	echo
	echo "go $goversion"
	echo
	echo "require $lib v0.0.0-00010101000000-000000000000"
	echo
	for m in $(scripts/modules.sh); do
		path=$(cd "$m" && $GO list -m)
		echo "replace $path => $root/$m"
	done
} >"$tmp/adopter/go.mod"
cat >"$tmp/adopter/main.go" <<'EOF'
package main

import (
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemevent"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemsqs"
	"github.com/idemlambda/idemlambda/pkg/money"
)

var (
	_ = idem.NewStore
	_ = idemhttp.ProblemFor
	_ = idemsqs.New[string]
	_ = idemevent.ErrNoKey
	_ = money.New
)

func main() {}
EOF

# The comparison: the same third-party packages, imported directly.
mkdir -p "$tmp/comparison"
{
	echo "module example.com/comparison"
	echo
	echo "go $goversion"
	echo
	echo "require ("
	for m in github.com/aws/aws-sdk-go-v2 github.com/aws/aws-sdk-go-v2/config github.com/aws/aws-sdk-go-v2/service/dynamodb \
		github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue github.com/aws/aws-lambda-go github.com/google/uuid github.com/bojanz/currency; do
		echo "	$m $(version $m)"
	done
	echo ")"
} >"$tmp/comparison/go.mod"
cat >"$tmp/comparison/main.go" <<'EOF'
package main

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/bojanz/currency"
	"github.com/google/uuid"
)

var (
	_ = events.SQSEvent{}
	_ = lambda.Start
	_ = config.LoadDefaultConfig
	_ = attributevalue.Marshal
	_ = dynamodb.NewFromConfig
	_ = currency.NewAmount
	_ = uuid.New
)

func main() {}
EOF

for m in adopter comparison; do
	if ! (cd "$tmp/$m" && $GO mod tidy) >"$tmp/$m.log" 2>&1; then
		cat "$tmp/$m.log" >&2
		fail "go mod tidy failed for the $m module"
	fi
done
(cd "$tmp/adopter" && $GO build ./...) || fail "the adopter module does not build"

count() { wc -l <"$tmp/$1/go.sum" | tr -d ' '; }
modules() { (cd "$tmp/$1" && $GO list -m all | wc -l | tr -d ' '); }
summods() { awk '{ print $1 }' "$tmp/$1/go.sum" | sort -u; }
a=$(count adopter)
c=$(count comparison)
echo "graph-check: adopter (idem, idemhttp, idemsqs, idemevent, money): go.sum $a lines, $(modules adopter) modules in its graph"
echo "graph-check: comparison (SDK config, dynamodb, attributevalue, aws-lambda-go, uuid, currency): go.sum $c lines, $(modules comparison) modules in its graph"

if grep -Eq "$testonly" "$tmp/adopter/go.mod"; then
	grep -E "$testonly" "$tmp/adopter/go.mod" >&2
	fail "a test-only module is in the adopter's go.mod"
fi
ours=$(comm -23 <(summods adopter | grep -E "$testonly" || true) <(summods comparison))
if [ -n "$ours" ]; then
	echo "$ours" >&2
	fail "test-only modules in the adopter's go.sum that the third-party packages do not bring"
fi
theirs=$(summods adopter | grep -E "$testonly" | tr '\n' ' ' || true)
if [ -n "$theirs" ]; then
	echo "graph-check: in both go.sum files, through aws-lambda-go's own tests (not the library): $theirs"
fi
if [ "$a" -gt "$c" ]; then
	echo "graph-check: lines only the adopter's go.sum has:" >&2
	comm -23 <(sort "$tmp/adopter/go.sum") <(sort "$tmp/comparison/go.sum") >&2
	fail "the adopter's go.sum ($a lines) is longer than the comparison's ($c)"
fi
# OpenTelemetry is the adapter's (pkg/idem/idemotel, a module of its
# own): an adopter of the library resolves none of it.
if grep -q '^go.opentelemetry.io/' "$tmp/adopter/go.sum"; then
	awk '$1 ~ /^go.opentelemetry.io\// { print $1 }' "$tmp/adopter/go.sum" | sort -u >&2
	fail "OpenTelemetry is in the library adopter's go.sum: pkg must not depend on it (pkg/idem/idemotel does)"
fi

# The adapter's adopter: pkg/idem/idemotel brings OpenTelemetry's API,
# and neither the SDK (its tests' only) nor a test-only module.
mkdir -p "$tmp/oteladopter"
{
	echo "module example.com/oteladopter"
	echo
	echo "go $goversion"
	echo
	echo "require $lib/idem/idemotel v0.0.0-00010101000000-000000000000"
	echo
	for m in $(scripts/modules.sh); do
		path=$(cd "$m" && $GO list -m)
		echo "replace $path => $root/$m"
	done
} >"$tmp/oteladopter/go.mod"
cat >"$tmp/oteladopter/main.go" <<'EOF'
package main

import (
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemotel"
)

var _ = idem.WithTrace(idemotel.NewTrace(nil))

func main() {}
EOF
if ! (cd "$tmp/oteladopter" && $GO mod tidy) >"$tmp/oteladopter.log" 2>&1; then
	cat "$tmp/oteladopter.log" >&2
	fail "go mod tidy failed for the idemotel adopter module"
fi
(cd "$tmp/oteladopter" && $GO build ./...) || fail "the idemotel adopter module does not build"
if grep -Eq "$testonly|go.opentelemetry.io/otel/sdk " "$tmp/oteladopter/go.mod"; then
	grep -E "$testonly|go.opentelemetry.io/otel/sdk " "$tmp/oteladopter/go.mod" >&2
	fail "a test-only module (or the OpenTelemetry SDK) is in the idemotel adopter's go.mod"
fi
echo "graph-check: idemotel adopter: go.sum $(count oteladopter) lines, $(modules oteladopter) modules in its graph"
echo "graph-check: ok"
