#!/usr/bin/env bash
# make e2e: the whole pipeline on moto. Installs moto[server] (pinned) into
# .venv/moto, starts it on a free port of 127.0.0.1, runs the Go test in
# test/e2e (build tag e2e) against it and always stops moto.
#
# The test puts its own serializing proxy between its clients and moto:
# moto's threaded server does not make conditional writes atomic.
set -euo pipefail
cd "$(dirname "$0")/.."

MOTO_VERSION=${MOTO_VERSION:-5.2.5}
VENV=${MOTO_VENV:-.venv/moto}
GO=${GO:-go}
# Seconds to wait for moto to accept connections.
START_TIMEOUT=${MOTO_START_TIMEOUT:-30}

# Reuse the virtualenv while the pin holds; the stamp names the version.
stamp="$VENV/.moto-$MOTO_VERSION"
if [ ! -f "$stamp" ]; then
	echo "e2e: installing moto[server]==$MOTO_VERSION into $VENV"
	[ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
	"$VENV/bin/pip" install --disable-pip-version-check --quiet "moto[server]==$MOTO_VERSION"
	rm -f "$VENV"/.moto-*
	touch "$stamp"
fi

# A free port: bind port 0, read it, let it go. moto failing to get it
# after all shows below as an early exit with its log.
port=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp -t moto.XXXXXX.log)
"$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto=$!
stop_moto() {
	kill "$moto" 2>/dev/null || true
	wait "$moto" 2>/dev/null || true
	rm -f "$log"
}
trap stop_moto EXIT
# Background jobs of a script ignore SIGINT: turn Ctrl-C into an exit, so the
# EXIT trap stops moto.
trap 'exit 130' INT
trap 'exit 143' TERM

deadline=$((SECONDS + START_TIMEOUT))
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
	if ! kill -0 "$moto" 2>/dev/null; then
		echo "e2e: moto exited before serving; its log:" >&2
		cat "$log" >&2
		exit 1
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		echo "e2e: moto did not listen on 127.0.0.1:$port within ${START_TIMEOUT}s; its log:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.2
done
echo "e2e: moto $MOTO_VERSION on 127.0.0.1:$port (pid $moto)"

# Dummy credentials and region: nothing here can reach a real account.
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=e2e AWS_SECRET_ACCESS_KEY=e2e
unset AWS_PROFILE AWS_SESSION_TOKEN
endpoint="http://127.0.0.1:$port"
status=0

# 1. The pipeline test. It reads AWS_ENDPOINT_URL and points every client
# at its serializing proxy in front of it.
AWS_ENDPOINT_URL=$endpoint "$GO" test -tags e2e -race -count=1 -v -timeout 150s ./test/e2e/ || status=$?

# 2. The packages' own endpoint tests, which skip without an endpoint and
# name make e2e as the place they run: the Streams poller and the
# EventBridge publisher against moto's real APIs. They make no concurrent
# conditional writes, so they talk to moto directly.
if [ "$status" -eq 0 ]; then
	DYNAMODB_TEST_BACKEND=endpoint AWS_ENDPOINT_URL_DYNAMODB=$endpoint AWS_ENDPOINT_URL_EVENTBRIDGE=$endpoint \
		"$GO" test -race -count=1 -timeout 120s ./internal/dev/streampoll/ ./internal/outbox/bridge/ || status=$?
fi

# 3. pkg/idem, the conformance suite and the seller statistics where
# another server's own answers come back (its ALL_OLD items, its exact
# numbers): the path production takes, the overflow guard at int64's own
# limit, a seller's shards summed by one Query, and an event passed on
# from a full shard. Only the tests without concurrent conditional
# writes: moto does not isolate concurrent transactions (two can both pass
# attribute_not_exists, concurrent ADDs lose updates), so no concurrency
# claim is proven here; those run on the strict store (pkg/idem/idemtest)
# in make test, and through the proxy in step 1 only as a pipeline check.
# pkg/idem is a module of its own: its tests run from pkg/.
e2e_tests='Crash|Zombie|Release|FreesTheKey|Reuse|Expired|Calls|Business|Limits|Deadline|Corrupt|Lost|SubMilli|ReserveHolder|TakesOver|ReplaysToReserve|Cache[dL]|Conflict|TransactWriteIsAllOrNothing|ReturnValues|ConditionalUpdateAndDelete|NumbersAreExact|Overflow|CallsPerEvent|Poison|ReusedForAnother|FailedTransaction|BeforeTheFirst|SumsTheShards|FullShard'
e2e_lines='^(ok|FAIL|---)|_test.go:[0-9]+: (backend=|((reserve|transact) )?(in flight|first execution|replay)|first delivery|duplicate:)'
if [ "$status" -eq 0 ]; then
	(cd pkg && DYNAMODB_TEST_BACKEND=endpoint AWS_ENDPOINT_URL_DYNAMODB=$endpoint \
		"$GO" test -race -count=1 -v -timeout 120s -run "$e2e_tests" ./idem/) | grep -E "$e2e_lines" || status=$?
fi
if [ "$status" -eq 0 ]; then
	DYNAMODB_TEST_BACKEND=endpoint AWS_ENDPOINT_URL_DYNAMODB=$endpoint \
		"$GO" test -race -count=1 -v -timeout 120s -run "$e2e_tests" \
		./internal/testkit/ddbtest/ ./internal/sellers/ ./internal/sellers/sellersqs/ | grep -E "$e2e_lines" || status=$?
fi

if [ "$status" -ne 0 ]; then
	echo "e2e: failed; the last lines of moto's log:" >&2
	tail -n 40 "$log" >&2
fi
exit "$status"
