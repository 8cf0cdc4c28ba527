#!/usr/bin/env bash
# Run every benchmark with the DynamoDB-compatible store in another process,
# so B/op and allocs/op count this project's code and the AWS SDK, not the
# store's own work. BENCHTIME and BENCH (a -bench regexp) tune the run.
set -euo pipefail
addr=${BENCH_STORE_ADDR:-127.0.0.1:8100}
mkdir -p bin
go build -o bin/local ./cmd/local
bin/local -addr "" -store-addr "$addr" >bin/bench-store.log 2>&1 &
store=$!
trap 'kill $store 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
	(exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null && break
	sleep 0.1
done
echo "bench: store on http://$addr (pid $store); $(go version)"
for module in $(scripts/modules.sh); do
	(cd "$module" && DYNAMODB_TEST_BACKEND=endpoint AWS_ENDPOINT_URL_DYNAMODB="http://$addr" \
		AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench \
		go test -run '^$' -bench "${BENCH:-.}" -benchmem -benchtime "${BENCHTIME:-1s}" ./...)
done
