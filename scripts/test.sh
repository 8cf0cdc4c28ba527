#!/usr/bin/env bash
# The test run behind `make test`: every package with -race, printing each
# package's result, every skipped test with its reason, every failure in
# full, and a closing count. (Plain `go test` hides skip reasons; the
# project's rule is that a skip always says why in the output.)
# TEST_PACKAGES narrows the run (default ./...; `make container-test` uses it).
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
read -r -a packages <<<"${TEST_PACKAGES:-./...}"
go test -race -count=1 -v "$@" "${packages[@]}" >"$log" 2>&1
status=$?
# -v prints a test's log lines under "=== RUN/CONT/NAME <test>" headers,
# before its "--- SKIP" or "--- FAIL" line: keep them per test and print
# them with that line.
awk '
	/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
	/^(ok|FAIL|\?) / || /^(panic|fatal error):/ { print; next }
	/^ *--- (SKIP|FAIL):/ {
		print
		name = $3
		if (name in buf) printf "%s", buf[name]
		next
	}
	/^ *--- PASS:/ || /^(PASS|FAIL)$/ { next }
	/^ / && cur != "" { buf[cur] = buf[cur] "    " $0 "\n" }
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
