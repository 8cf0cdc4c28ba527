#!/usr/bin/env bash
# make store-image: the embedded store as a container image, a stand-in for
# amazon/dynamodb-local where no image registry is reachable (CI). It is
# cmd/local with -addr "" (the store only), built static (CGO_ENABLED=0) for
# the Docker engine's architecture, alone in an image FROM scratch, and
# labelled org.idemlambda.dynamodb-server=embedded so that internal/testkit/ddbtest
# expects the embedded store's answers from it (numbers kept as float64).
# Usage: scripts/store-image.sh [IMAGE]   (default STORE_IMAGE or
# idemlambda/embedded-store:local). Rebuilt every time: it is the code under test.
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:-${STORE_IMAGE:-idemlambda/embedded-store:local}}
GO=${GO:-go}

if ! arch=$(docker info --format '{{.Architecture}}' 2>&1); then
	echo "store-image: the Docker engine does not answer (docker info: $arch)" >&2
	exit 1
fi
case $arch in
x86_64 | amd64) goarch=amd64 ;;
aarch64 | arm64) goarch=arm64 ;;
*)
	echo "store-image: Docker engine architecture $arch: want x86_64 or aarch64" >&2
	exit 1
	;;
esac

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH=$goarch "$GO" build -trimpath -ldflags "-s -w" -o "$ctx/local" ./cmd/local
# Inside its own network namespace the store listens on every interface of
# the container; the test backend publishes the port on 127.0.0.1 only.
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY local /local
LABEL org.idemlambda.dynamodb-server=embedded
EXPOSE 8000
ENTRYPOINT ["/local", "-addr", "", "-store-addr", "0.0.0.0:8000"]
DOCKERFILE
# FROM scratch needs no registry. The legacy builder's deprecation notice,
# where buildx is not installed, is noise here.
docker build --quiet --platform "linux/$goarch" -t "$image" "$ctx" 2> >(grep -v -e DEPRECATED -e 'legacy builder' -e buildx -e '^ *$' >&2) >/dev/null
echo "store-image: $image (cmd/local, linux/$goarch, $(docker image inspect --format '{{.Size}}' "$image") bytes)"
