#!/usr/bin/env bash
# make container-test: the DynamoDB conformance suite (internal/testkit/ddbtest) and
# pkg/idem's tests, once, on the container backend: testcontainers-go starts
# the image DYNAMODB_TEST_IMAGE names. The default is the embedded store
# built by scripts/store-image.sh, because no image registry is reachable in
# CI; DYNAMODB_TEST_IMAGE=amazon/dynamodb-local:2.6.1 runs the same tests on
# DynamoDB Local where Docker can pull it.
#
# testcontainers' reaper (Ryuk) is an image of its own, which cannot be
# pulled without a registry, so it is off by default here
# (TESTCONTAINERS_RYUK_DISABLED=true) and this script removes the containers
# the run started instead, by internal/testkit/ddbtest's label, whatever the outcome.
set -euo pipefail
cd "$(dirname "$0")/.."

store_image=${STORE_IMAGE:-idemlambda/embedded-store:local}
image=${DYNAMODB_TEST_IMAGE:-$store_image}
label=org.idemlambda.ddbtest
export TESTCONTAINERS_RYUK_DISABLED=${TESTCONTAINERS_RYUK_DISABLED:-true}

if ! command -v docker >/dev/null 2>&1; then
	echo "container-test: needs Docker: the docker CLI is not on PATH (make test runs the same tests on the embedded store without it)" >&2
	exit 1
fi
if ! info=$(docker info --format '{{.ServerVersion}}' 2>&1); then
	echo "container-test: the Docker engine does not answer (docker info: $info)" >&2
	exit 1
fi
if [ "$image" = "$store_image" ]; then
	STORE_IMAGE=$store_image scripts/store-image.sh
fi

# testcontainers dials published ports at a host it guesses; inside a
# container of its own (/.dockerenv) it takes the default bridge's gateway
# from the engine, which a fresh dockerd does not record, and falls back to
# this machine's default route: the wrong host. When the engine's bridge is
# on this machine, its published ports are on this machine's loopback.
bridge=$(docker network inspect bridge --format '{{index .Options "com.docker.network.bridge.name"}}' 2>/dev/null || true)
if [ -z "${TESTCONTAINERS_HOST_OVERRIDE:-}" ] && [ -e "/sys/class/net/${bridge:-docker0}" ]; then
	export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
fi

# Containers of this label that exist already are someone else's.
before=$(docker ps -aq --filter "label=$label" | sort)
remove_started() {
	local now started
	now=$(docker ps -aq --filter "label=$label" | sort)
	started=$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$now") | grep -v '^$' || true)
	if [ -n "$started" ]; then
		if [ "${status:-1}" != 0 ]; then
			# A store that went away mid-run says why here (a panic, an
			# exit code, the OOM killer), before its container is removed.
			for c in $started; do
				echo "container-test: container $c: $(docker inspect --format 'status={{.State.Status}} exit={{.State.ExitCode}} oom={{.State.OOMKilled}} error={{.State.Error}}' "$c" 2>&1); its last log lines:" >&2
				docker logs --tail 40 "$c" 2>&1 | sed 's/^/  /' >&2 || true
			done
		fi
		# shellcheck disable=SC2086 # one id per word
		docker rm -f $started >/dev/null
	fi
	left=$(comm -13 <(printf '%s\n' "$before") <(docker ps -aq --filter "label=$label" | sort) | grep -v '^$' || true)
	if [ -n "$left" ]; then
		echo "container-test: containers left behind: $left" >&2
		return 1
	fi
	echo "container-test: removed $(printf '%s' "$started" | grep -c . || true) container(s) the run started"
}
status=1 # until the tests have run
trap remove_started EXIT

echo "container-test: internal/testkit/ddbtest and pkg/idem on $image (docker $info, TESTCONTAINERS_RYUK_DISABLED=$TESTCONTAINERS_RYUK_DISABLED, host ${TESTCONTAINERS_HOST_OVERRIDE:-as testcontainers finds it})"
start=$SECONDS
status=0
DYNAMODB_TEST_BACKEND=container DYNAMODB_TEST_IMAGE=$image TEST_PACKAGES="./internal/testkit/ddbtest/" \
	scripts/test.sh || status=$?

# pkg/idem's tests import nothing of this application (no testcontainers):
# they take the container as an endpoint, published on loopback only.
cid=$(docker run -d --label "$label" -p 127.0.0.1::8000 "$image")
port=$(docker port "$cid" 8000/tcp | head -n 1 | sed 's/.*://')
# The published port accepts connections before the server answers on
# it: wait for an HTTP status line.
for _ in $(seq 1 200); do
	answer=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && timeout 1 head -c 12 <&3) 2>/dev/null || true)
	if [[ $answer == HTTP/1.* ]]; then
		break
	fi
	sleep 0.1
done
echo "container-test: pkg/idem on $image at 127.0.0.1:$port"
DYNAMODB_TEST_BACKEND=endpoint AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$port" TEST_PACKAGES="./pkg/idem/" \
	scripts/test.sh || status=$?
echo "container-test: $((SECONDS - start)) s on $image"
exit "$status"
