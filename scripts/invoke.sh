#!/usr/bin/env bash
# Invoke a function's real bootstrap under the Lambda runtime interface
# emulator (aws-lambda-rie, pinned in go.mod), against the local store.
# Usage: scripts/invoke.sh FN EVENT   (make invoke FN=createproduct EVENT=events/create.json)
# With `make run` running, its store (STORE_URL, default http://127.0.0.1:8000) is
# used, so a second invoke of the same event replays; otherwise a temporary
# embedded store is started and stopped.
set -euo pipefail
fn=${1:?usage: invoke.sh FN EVENT}
event=${2:?usage: invoke.sh FN EVENT}
[ -d "functions/$fn" ] || { echo "invoke: no function functions/$fn" >&2; exit 2; }
[ -f "$event" ] || { echo "invoke: no event file $event" >&2; exit 2; }
store_url=${STORE_URL:-http://127.0.0.1:8000}
rie_addr=${RIE_ADDR:-127.0.0.1:9000}
bin=bin/host
mkdir -p "$bin/$fn"

go build -o "$bin/aws-lambda-rie" github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
# The emulator runs host binaries: `make build` flags, host architecture.
CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o "$bin/$fn/bootstrap" "./functions/$fn"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

wait_port() { # host:port, what
	for _ in $(seq 1 100); do
		(exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "invoke: $2 did not come up on $1" >&2
	return 1
}

store_hostport=${store_url#http://}
if ! (exec 3<>"/dev/tcp/${store_hostport%:*}/${store_hostport##*:}") 2>/dev/null; then
	go build -o "$bin/local" ./cmd/local
	"$bin/local" -addr "" -store-addr "$store_hostport" >"$bin/store.log" 2>&1 &
	pids+=($!)
	wait_port "$store_hostport" "embedded store"
	echo "invoke: started a temporary embedded store on $store_url" >&2
fi

AWS_ENDPOINT_URL_DYNAMODB=$store_url AWS_REGION=us-east-1 \
AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
PRODUCTS_TABLE=${PRODUCTS_TABLE:-products} IDEMPOTENCY_TABLE=${IDEMPOTENCY_TABLE:-idempotency} \
OUTBOX_TABLE=${OUTBOX_TABLE:-outbox} CALLERS_TABLE=${CALLERS_TABLE:-callers} LOG_LEVEL=${LOG_LEVEL:-info} \
	"$bin/aws-lambda-rie" --runtime-interface-emulator-address "$rie_addr" \
	--runtime-api-address "${RUNTIME_API_ADDR:-127.0.0.1:9001}" "$bin/$fn/bootstrap" >"$bin/rie.log" 2>&1 &
pids+=($!)
wait_port "$rie_addr" "aws-lambda-rie"

curl -sS -X POST "http://$rie_addr/2015-03-31/functions/function/invocations" --data-binary "@$event"
echo
grep -h '"msg"' "$bin/rie.log" >&2 || true
