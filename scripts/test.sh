#!/usr/bin/env bash
# The test run behind `make test`: every package with -race, printing each
# package's result, every skipped test with its reason, every failure in
# full, and a closing count. (Plain `go test` hides skip reasons; the
# project's rule is that a skip always says why in the output.)
# TEST_PACKAGES narrows the run (default ./...; `make container-test` uses it).
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Each module (scripts/modules.sh) runs its own packages; a TEST_PACKAGES
# path goes to the module that holds it.
mapfile -t modules < <("$(dirname "$0")/modules.sh")
status=0
run() {
	local dir=$1
	shift
	(cd "$(dirname "$0")/../$dir" && go test -race -count=1 -v "$@") >>"$log" 2>&1 || status=$?
}
if [ -z "${TEST_PACKAGES:-}" ]; then
	for m in "${modules[@]}"; do
		run "$m" "$@" ./...
	done
else
	declare -A patterns
	read -r -a wanted <<<"$TEST_PACKAGES"
	for p in "${wanted[@]}"; do
		rel=${p#./}
		owner=.
		for m in "${modules[@]}"; do
			case $rel in "$m" | "$m"/*) [ ${#m} -gt ${#owner} ] || [ "$owner" = . ] && owner=$m ;; esac
		done
		if [ "$owner" = . ]; then
			patterns[.]+=" ./$rel"
		else
			sub=${rel#"$owner"}
			patterns[$owner]+=" ./${sub#/}"
		fi
	done
	for m in "${!patterns[@]}"; do
		read -r -a pkgs <<<"${patterns[$m]}"
		run "$m" "$@" "${pkgs[@]}"
	done
fi
# Lines starting "conformance:" are the conformance suite's tables
# (pkg/idem/idemconform): the library's ways in and, from test/adopter,
# a way written outside the library. They are printed as one table after
# the packages' results: each header line once, every way's rows, and one
# total that adds the tables' up (their wall times side by side). Lines
# starting "regions:" (the suite across the Regions of a global table)
# and "figures:" (docs/library.md's figures for global tables) follow it.
# -v prints a test's log lines under "=== RUN/CONT/NAME <test>" headers,
# before its "--- SKIP" or "--- FAIL" line: keep them per test and print
# them with that line.
awk '
	/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
	/^(ok|FAIL|\?) / || /^(panic|fatal error):/ { print; next }
	/^conformance: total: / {
		tables++
		runs += $3; effects += $5; window += substr($7, 2); histories += $11; ops += substr($14, 2); violations += $16
		wall = wall (wall == "" ? "" : " + ") $20
		race = $23
		next
	}
	/^conformance:/ { if (!seen[$0]++) table[++rows] = $0; next }
	/^(regions|figures):/ { if (!seen[$0]++) more[++extra] = $0; next }
	/^ *--- (SKIP|FAIL):/ {
		print
		name = $3
		if (name in buf) printf "%s", buf[name]
		next
	}
	/^ *--- PASS:/ || /^(PASS|FAIL)$/ { next }
	/^ / && cur != "" { buf[cur] = buf[cur] "    " $0 "\n" }
	END {
		for (i = 1; i <= rows; i++) print table[i]
		if (tables > 0)
			printf "conformance: total: %d runs, %d effects (%d in Run'"'"'s window), %d histories checked (%d operations), %d violations; wall time %s (race detector: %s\n", runs, effects, window, histories, ops, violations, wall, race
		for (i = 1; i <= extra; i++) print more[i]
	}
' "$log"
passed=$(grep -c -- '--- PASS:' "$log")
failed=$(grep -c -- '--- FAIL:' "$log")
skipped=$(grep -c -- '--- SKIP:' "$log")
if [ "$status" -ne 0 ]; then
	echo "--- go test exited $status; output of the run, less RUN/PAUSE/CONT lines:"
	grep -v -E '^=== (RUN|PAUSE|CONT)' "$log" | tail -n 400
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"
