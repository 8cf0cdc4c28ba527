#!/usr/bin/env bash
# Run every Fuzz target for FUZZTIME (default 10s; an execution count such
# as 50000x makes the run's outcome independent of the machine's load), one
# at a time. A target fails when go test fails, and then names the failing
# inputs it wrote to its testdata/fuzz corpus.
set -uo pipefail
fuzztime=${FUZZTIME:-10s}
GO=${GO:-go}
failed=0 passed=0
top=$(cd "$(dirname "$0")/.." && pwd)
for module in $("$top/scripts/modules.sh"); do
cd "$top/$module"
for pkg in $($GO list ${FUZZ_PACKAGES:-./...}); do
	dir=$($GO list -f '{{.Dir}}' "$pkg")
	for target in $($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target ($fuzztime)"
		corpus="$dir/testdata/fuzz/$target"
		before=$(ls "$corpus" 2>/dev/null | sort)
		out=$($GO test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg" 2>&1)
		rc=$?
		echo "$out"
		after=$(ls "$corpus" 2>/dev/null | sort)
		if [ $rc -eq 0 ]; then
			passed=$((passed + 1))
		else
			echo "fuzz: $target FAILED (new inputs in $corpus: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' '))"
			failed=$((failed + 1))
		fi
	done
done
done
echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
